// Pretraining is deterministic (a shortened run twice from one seed gives the same bytes) and learns (the loss
// falls well below the uniform ln V over a few steps); a run killed mid-way and resumed from its checkpoint ends with
// the bytes and losses of an uninterrupted run; llama.cpp samples the trained model for the build's report.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { samplePromptedAnswers } from './evaluate.ts';
import { newestCheckpoint, pretrainSmallLm, type PretrainOptions } from './pretrain.ts';
import { isHeldOut } from './prompted.ts';

const tmp = mkdtempSync(path.join(tmpdir(), 'rein-pretrain-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const bytes = (d: string) => readFileSync(path.join(d, 'model.safetensors'));

it('a shortened pretraining run is byte-identical per seed and lowers the loss', async () => {
  const o = { hidden: 32, layers: 1, tokenizerDialogues: 500, steps: 30, batch: 2 };
  const a = await pretrainSmallLm(path.join(tmp, 'a'), { ...o, seed: 4 });
  const b = await pretrainSmallLm(path.join(tmp, 'b'), { ...o, seed: 4 });
  const c = await pretrainSmallLm(path.join(tmp, 'c'), { ...o, seed: 5 });
  expect(bytes(a.dir).equals(bytes(b.dir))).toBe(true);
  expect(readFileSync(path.join(a.dir, 'tokenizer.json'), 'utf8')).toBe(readFileSync(path.join(b.dir, 'tokenizer.json'), 'utf8'));
  expect(bytes(a.dir).equals(bytes(c.dir))).toBe(false);
  expect(a.firstLoss).toBeGreaterThan(Math.log(a.vocabSize) - 0.5);
  expect(a.lastLoss).toBeLessThan(a.firstLoss - 1);
}, 120_000);

// Packed sequences of the prompted corpus, f16 weights, a checkpoint every 4 steps.
const O: PretrainOptions = { corpus: 'prompted', dtype: 'F16', seed: 3, hidden: 32, layers: 1, tokenizerDialogues: 300, bpeSize: 400, steps: 40, batch: 2, seqLen: 128, checkpointEvery: 4, overwrite: true };

it('a run stopped, or killed, after a checkpoint and resumed ends with the bytes and losses of an uninterrupted run', async () => {
  const whole = await pretrainSmallLm(path.join(tmp, 'whole'), O);
  expect(whole.step).toBe(40);
  expect(whole.lastLoss).toBeLessThan(whole.firstLoss - 1);
  const header = JSON.parse(bytes(whole.dir).subarray(8, 8 + Number(bytes(whole.dir).readBigUInt64LE(0))).toString()) as Record<string, { dtype?: string }>;
  expect(Object.values(header).filter((t) => t.dtype !== undefined).every((t) => t.dtype === 'F16')).toBe(true);

  // Stopped with `until` (a build split in parts), then resumed.
  const ck = path.join(tmp, 'ck-until');
  const part = await pretrainSmallLm(path.join(tmp, 'part'), { ...O, checkpoints: ck, until: 10 });
  expect(part.step).toBe(10);
  expect(newestCheckpoint(ck)?.step).toBe(10);
  const rest = await pretrainSmallLm(path.join(tmp, 'part'), { ...O, checkpoints: ck });
  expect(rest.resumedFrom).toBe(10);
  expect(rest.losses).toEqual(whole.losses);
  expect(bytes(rest.dir).equals(bytes(whole.dir))).toBe(true);
  expect(readdirSync(ck).filter((n) => n.startsWith('step-'))).toEqual(['step-0000036', 'step-0000040']); // keeps the newest 2

  // Killed (SIGKILL, mid-step) in a child process once its second checkpoint exists, then resumed here.
  const ck2 = path.join(tmp, 'ck-kill');
  const pretrain = path.join(path.dirname(fileURLToPath(import.meta.url)), 'pretrain.ts');
  const script = `const { pretrainSmallLm } = await import(${JSON.stringify(pretrain)}); await pretrainSmallLm(${JSON.stringify(path.join(tmp, 'killed'))}, ${JSON.stringify({ ...O, checkpoints: ck2 })});`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  for (let i = 0; i < 6000 && !existsSync(path.join(ck2, 'step-0000008', 'state.json')) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 10));
  child.kill('SIGKILL');
  expect(await exited, stderr).toBe(null); // killed, not finished
  const from = newestCheckpoint(ck2)!.step;
  expect(from).toBeGreaterThanOrEqual(8);
  expect(from).toBeLessThan(40);
  const resumed = await pretrainSmallLm(path.join(tmp, 'killed'), { ...O, checkpoints: ck2 });
  expect(resumed.resumedFrom).toBe(from);
  expect(resumed.losses).toEqual(whole.losses);
  expect(bytes(resumed.dir).equals(bytes(whole.dir))).toBe(true);

  // A checkpoint is only resumed with the settings it was made with.
  await expect(pretrainSmallLm(path.join(tmp, 'other'), { ...O, lr: 1e-3, checkpoints: ck })).rejects.toThrow(/other settings/);

  // What the build reports from: llama.cpp's answers to prompts of held-out compositions.
  const answers = await samplePromptedAnswers(whole.dir, 3, 1, 'held-out', 24);
  expect(answers).toHaveLength(3);
  for (const x of answers) {
    expect(isHeldOut(x.spec)).toBe(true);
    expect(x.answer.length).toBeGreaterThan(0);
  }
  expect(await samplePromptedAnswers(whole.dir, 3, 1, 'held-out', 24)).toEqual(answers);
}, 300_000);
