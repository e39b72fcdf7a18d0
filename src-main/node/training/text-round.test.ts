// Rounds on rated text (KTO) end to end: the real Claude Code tool turn (integrations/fixtures/claude) captured and
// rated through the real hooks, trained by the core's scheduler and worker with the balanced preset as it is, on a
// tiny Qwen2 model (engine/tiny.ts) whose tokenizer and chat template are Qwen's own, so the turn's tool call and
// result are rendered as that model would see them. What the round learned is read from the version it wrote,
// accepted or not: these tests are about the training, the gate has its own.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { modelLinearParams } from '../../common/engine/families/registry.ts';
import { createCore, type ReinCore } from '../core/core.ts';
import { Engine } from '../engine/engine.ts';
import { loadPeftAdapter } from '../engine/peft.ts';
import { writeTinyModel } from '../engine/tiny.ts';
import { resolveHome } from '../home.ts';
import { createClaudeHooks, type ClaudeHooks } from '../integrations/claude/handler.ts';
import { readTranscriptLines } from '../integrations/claude/transcript.ts';
import { memoryLog } from '../integrations/shared/log.ts';

const FIX = path.join(import.meta.dirname, '../integrations/fixtures/claude');
const payloads = JSON.parse(readFileSync(path.join(FIX, 'payloads.json'), 'utf8')) as Record<string, Record<string, unknown>>;

let root: string;
let modelDir: string;
let engine: Engine;
beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rein-text-round-'));
  modelDir = path.join(root, 'model');
  writeTinyModel(modelDir, { arch: 'qwen2', layers: 2, hidden: 32, heads: 4, kvHeads: 2, intermediate: 64, dtype: 'F32', seed: 3, std: 0.2 });
  engine = Engine.load(modelDir, { threads: 1 });
});
afterAll(async () => {
  await engine.close();
  rmSync(root, { recursive: true, force: true });
});

/** A core on the tiny model with the balanced preset, and the Claude tool turn captured through its hooks. */
async function withToolTurn(name: string): Promise<{ core: ReinCore; hooks: ClaudeHooks }> {
  const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, name) }) });
  await core.call('setSettings', { values: { 'model.active': modelDir, 'training.auto': false, 'training.preset': 'balanced' } }, 'test');
  const hooks = createClaudeHooks(core, { log: memoryLog(), readTranscript: () => readTranscriptLines(path.join(FIX, 'tool-turn.jsonl')) });
  await hooks.handle(payloads['user-prompt-submit']);
  await hooks.handle(payloads.stop);
  expect((await core.call('listTurns', {}, 'test')).total).toBe(1);
  return { core, hooks };
}

/** A sequence as the round encodes the turn's text (encodeRound → ReinTokenizer.encodeAgentTurn): prompt, then response. */
interface Seq {
  tokens: number[];
  start: number;
  mask: number[];
}

async function agentSequence(core: ReinCore, answer: 'response' | 'correction'): Promise<Seq> {
  const turn = await core.call('getTurn', { turnId: (await core.call('listTurns', {}, 'test')).items[0]!.id }, 'test');
  const text = answer === 'response' ? turn.response : turn.rating!.correction!;
  const e = engine.tokenizer!.encodeAgentTurn(turn.prompt, turn.context, text);
  return { tokens: [...e.promptIds, ...e.responseIds], start: e.promptIds.length, mask: e.mask };
}

/** Trains the pending ratings in one round (all of it text: `kto` sequences) and returns the adapter it wrote. */
async function trainOnce(core: ReinCore, kto: number): Promise<LoraAdapter> {
  await core.call('startTraining', {}, 'test');
  await core.scheduler.idle();
  const run = (await core.call('listRuns', {}, 'test'))[0]!;
  expect(run.status, String(run.error)).toBe('succeeded');
  const m = run.metrics as { samples: { kto: number; mispo: number; skipped: unknown[] } };
  expect(m.samples.skipped).toEqual([]);
  expect([m.samples.mispo, m.samples.kto]).toEqual([0, kto]);
  const v = (await core.call('listAdapters', {}, 'test'))[0]!;
  return loadPeftAdapter(path.join(v.path, 'peft'), modelLinearParams(engine.config)).adapter;
}

/** Σ log p over the response tokens of `s` where `pick` is true, under the adapter (null: the base). */
async function logp(s: Seq, adapter: LoraAdapter | null, pick: (i: number) => boolean): Promise<number> {
  const lp = await engine.logprobs(s.tokens, { start: s.start, adapter });
  return lp.reduce((sum, x, i) => sum + (pick(i) ? x : 0), 0);
}

/** Response positions of the last run of 1s in the mask: the final answer. */
function answerOf(s: Seq): (i: number) => boolean {
  const lastZero = s.mask.lastIndexOf(0);
  return (i) => i > lastZero;
}

describe('a text (KTO) round', () => {
  it('trains a rated Claude tool turn, its tool result masked: its tool call and its answer become more likely', { timeout: 300_000 }, async () => {
    const { core, hooks } = await withToolTurn('tool');
    try {
      // `/rl good` typed in a later one-shot session rates the newest turn of the same directory.
      expect(await hooks.handle(payloads['rl-submit'])).toMatchObject({ decision: 'block', reason: expect.stringMatching(/^Rated 👍/) as unknown });
      const s = await agentSequence(core, 'response');
      const trained = (i: number): boolean => s.mask[i] === 1;
      expect(s.mask.filter((m) => m === 0).length).toBeGreaterThan(0);
      const adapter = await trainOnce(core, 1);
      const before = await logp(s, null, trained);
      const after = await logp(s, adapter, trained);
      console.log(`Claude tool turn, Σ log p of its ${s.mask.filter((m) => m === 1).length} trained tokens: base ${before.toFixed(3)} → round ${after.toFixed(3)}`);
      expect(after).toBeGreaterThan(before + 0.05);
    } finally {
      core.close();
    }
  });

  it('trains a correction (`/rl fix`): the corrected answer up and the original down, in one round', { timeout: 300_000 }, async () => {
    const { core, hooks } = await withToolTurn('fix');
    try {
      const corrected = 'The echo tool printed the marker rein-e2e-tool-output.';
      const reply = await hooks.handle({ ...payloads['rl-submit'], prompt: `/rl fix "${corrected}"` });
      expect(reply).toMatchObject({ reason: expect.stringMatching(/^Saved your correction/) as unknown });
      // The correction is desirable text and the original undesirable, each after the turn's steps (two sequences).
      const good = await agentSequence(core, 'correction');
      const bad = await agentSequence(core, 'response');
      expect(engine.tokenizer!.decode(good.tokens.slice(good.start))).toContain(corrected);
      const adapter = await trainOnce(core, 2);
      const up = [await logp(good, null, answerOf(good)), await logp(good, adapter, answerOf(good))];
      const down = [await logp(bad, null, answerOf(bad)), await logp(bad, adapter, answerOf(bad))];
      console.log(`correction, Σ log p of the answer: corrected ${up[0]!.toFixed(3)} → ${up[1]!.toFixed(3)}, original ${down[0]!.toFixed(3)} → ${down[1]!.toFixed(3)}`);
      expect(up[1]).toBeGreaterThan(up[0]! + 0.05);
      expect(down[1]).toBeLessThan(down[0]! - 0.05);
    } finally {
      core.close();
    }
  });
});
