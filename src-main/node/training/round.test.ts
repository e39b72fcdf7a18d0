// Training rounds end to end through the core and the real child-process worker, on the demo model: the learning
// test (a hidden-rule rater, one round, held-out prompts), kill -9 of the worker mid-run, and rollback with the EMA.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TrainingProgress } from '../../common/domain.ts';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { modelLinearParams } from '../../common/engine/models/registry.ts';
import { createCore, type ReinCore } from '../core/core.ts';
import { Engine } from '../engine/engine.ts';
import { loadPeftAdapter } from '../engine/peft.ts';
import { resolveHome } from '../home.ts';
import { writeDemoModel } from './demo-model.ts';
import { heldoutCount } from '../../common/training/estimate.ts';
import { readTrainingLock } from './lock.ts';
import { captureAndRate, preferredRate, sampleTurns } from './synthetic.ts';
import { modelAdaptersDir } from './versions.ts';

// The hidden rule: short answers (at most three words, then </s>; an empty answer counts) are good. A concise answer
// is a real preference, and stopping is one decision (the </s> token) that a LoRA can learn from a few examples. The
// earlier rule (says "please" or "thanks" anywhere) had base rates of 17-36% on this model and was not learnable from
// 32 samples even by supervised fine-tuning on the good ones (0.47-0.70 after): each good answer is five random words
// around one polite one. A one-to-four-word rule (no empty answers) learned less (0.53-0.56 at 32 ratings).
const rule = (text: string): boolean => text.split(/\s+/).filter(Boolean).length <= 3;

let root: string;
let modelDir: string;
let engine: Engine;
beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rein-round-'));
  modelDir = writeDemoModel(path.join(root, 'model'), { seed: 0 }).dir;
  engine = Engine.load(modelDir, { threads: 1 });
});
afterAll(async () => {
  await engine.close();
  rmSync(root, { recursive: true, force: true });
});

async function newCore(name: string, custom: Record<string, unknown> | null = null): Promise<ReinCore> {
  const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, name) }) });
  const preset = custom === null ? { 'training.preset': 'balanced' } : { 'training.preset': 'custom', 'training.custom': custom };
  await core.call('setSettings', { values: { 'model.active': modelDir, 'training.auto': false, ...preset } }, 'test');
  return core;
}

function adapterAt(dir: string): LoraAdapter {
  return loadPeftAdapter(path.join(dir, 'peft'), modelLinearParams(engine.config)).adapter;
}

describe('a training round', () => {
  // The balanced preset as every model gets it (one trust region, the LR size rule of presets.ts; nothing here is
  // test-only), on the demo model, one round of N on-policy ratings, N in 8/16/32/64 (nested: the first N of one
  // sampled list per seed). The issue's bar (<= 20% -> >= 80% in one round) held only with the old toy bucket (LR
  // x2000, clip [0.2, 5], KL budget x20), which is gone. What this model supports at the real settings, and what
  // issue #12 accepts for CI: a rise after one round of 32 whose 95% CI excludes 0. The held-out answers before and
  // after are sampled with the same seeds on the same 64 prompts per seed, so the rise is a paired difference
  // d_i = after_i - before_i in {-1, 0, 1}; its interval is mean(d) +- 1.96 * sd(d) / sqrt(n) over the 3 seeds' 192
  // prompts (normal approximation of the paired mean). The curve and the gate's verdict are printed beside it.
  it('one balanced round of 32 ratings raises the held-out preferred rate, 95% CI above 0; prints the 8/16/32/64 curve', { timeout: 600_000 }, async () => {
    const NS = [8, 16, 32, 64];
    type Point = { rate: number; kl: number; budget: number; status: string; pending: number; hits: boolean[] };
    const table: { seed: number; before: number; hits: boolean[]; after: Map<number, Point> }[] = [];
    for (const seed of [1, 2, 3]) {
      const heldoutSeed = 10_000 + seed;
      const beforeTurns = await sampleTurns(engine, 64, heldoutSeed);
      const before = preferredRate(beforeTurns, rule);
      const rated = await sampleTurns(engine, Math.max(...NS), seed);
      const row = { seed, before: before.rate, hits: beforeTurns.map((t) => rule(t.text)), after: new Map<number, Point>() };
      for (const n of NS) {
        const core = await newCore(`learn-${seed}-${n}`);
        try {
          await captureAndRate(core, rated.slice(0, n), rule, `s${seed}`);
          await core.call('startTraining', {}, 'test');
          await core.scheduler.idle();
          const run = (await core.call('listRuns', {}, 'test'))[0]!;
          expect(run.status, String(run.error)).toBe('succeeded');
          const m = run.metrics as { gate: { kl: number; klBudget: number }; samples: { pending: number } };
          const v = (await core.call('listAdapters', {}, 'test'))[0]!;
          // Measured on a rejected candidate too: the curve is about what the round learned.
          const afterTurns = await sampleTurns(engine, 64, heldoutSeed, adapterAt(v.path));
          const after = preferredRate(afterTurns, rule).rate;
          row.after.set(n, { rate: after, kl: m.gate.kl, budget: m.gate.klBudget, status: v.status, pending: m.samples.pending, hits: afterTurns.map((t) => rule(t.text)) });
        } finally {
          core.close();
        }
      }
      table.push(row);
    }
    const f = (x: number): string => x.toFixed(2);
    const paired = (n: number): { mean: number; lo: number; hi: number } => {
      const d = table.flatMap((r) => r.after.get(n)!.hits.map((h, i) => Number(h) - Number(r.hits[i]!)));
      const mean = d.reduce((s, x) => s + x, 0) / d.length;
      const sd = Math.sqrt(d.reduce((s, x) => s + (x - mean) ** 2, 0) / (d.length - 1));
      const half = (1.96 * sd) / Math.sqrt(d.length);
      return { mean, lo: mean - half, hi: mean + half };
    };
    const cell = (p: Point): string => `${f(p.rate)} (KL ${p.kl.toFixed(3)}/token of ${p.budget.toFixed(3)}${p.status === 'active' ? '' : `, ${p.status}`})`;
    const lines = table.map((r) => `seed ${r.seed}: base ${f(r.before)} | ${NS.map((n) => `${n}: ${cell(r.after.get(n)!)}`).join(' | ')}`);
    const meanAt = (n: number): number => table.reduce((s, r) => s + r.after.get(n)!.rate, 0) / table.length;
    const meanBase = table.reduce((s, r) => s + r.before, 0) / table.length;
    const met = (n: number): boolean => table.every((r) => r.before <= 0.2 && r.after.get(n)!.rate >= 0.8 && r.after.get(n)!.status === 'active');
    const rise = (n: number): string => {
      const p = paired(n);
      return `${n}: ${p.mean >= 0 ? '+' : ''}${f(p.mean)} [${f(p.lo)}, ${f(p.hi)}]`;
    };
    console.log(
      `learning curve (rule: at most three words), held-out preferred rate after one balanced round of N ratings:\n  ${lines.join('\n  ')}\n` +
        `  mean: base ${f(meanBase)} | ${NS.map((n) => `${n}: ${f(meanAt(n))}`).join(' | ')}\n` +
        `  paired rise over 3 x 64 held-out prompts, 95% CI: ${NS.map(rise).join(' | ')}\n` +
        `  issue bar (<= 0.20 -> >= 0.80, active, on every seed): ${NS.map((n) => `${n}: ${met(n) ? 'met' : 'not met'}`).join(', ')}`,
    );
    for (const r of table) {
      expect(r.before).toBeLessThanOrEqual(0.2);
      // Every pending rating trains but the held-out fifth, which stays pending for the next round.
      for (const n of NS) expect(r.after.get(n)!.pending).toBe(n - heldoutCount(n, 0.2));
    }
    expect(paired(32).lo).toBeGreaterThan(0);
  });

  it('survives kill -9 of the worker: the core serves, the run is failed, no vN is left, and the next run succeeds', { timeout: 120_000 }, async () => {
    const core = await newCore('kill', { steps: 200 });
    try {
      await captureAndRate(core, await sampleTurns(engine, 12, 7), rule, 'k');
      const training = new Promise<void>((resolve) => {
        const off = core.on('trainingProgress', (p: TrainingProgress) => {
          if (p.phase === 'training' && p.step >= 2) {
            off();
            resolve();
          }
        });
      });
      const { runId } = await core.call('startTraining', {}, 'test');
      await training;
      const lock = readTrainingLock(core.home);
      expect(lock?.runId).toBe(runId);
      expect(lock!.pid).not.toBe(process.pid);
      process.kill(lock!.pid, 'SIGKILL');
      await core.scheduler.idle();
      const st = await core.call('status', {}, 'test');
      expect(st.training.state).toBe('idle');
      const run = (await core.call('listRuns', {}, 'test')).find((r) => r.id === runId)!;
      expect(run.status).toBe('failed');
      expect(run.error).toMatch(/SIGKILL/);
      const dir = modelAdaptersDir(core.home, modelDir);
      expect(existsSync(dir) ? readdirSync(dir) : []).toEqual([]);
      expect(await core.call('listAdapters', {}, 'test')).toEqual([]);
      // The ratings are still pending, and the next round trains them.
      expect(st.pending).toBe(12);
      await core.call('setSettings', { values: { 'training.custom': { steps: 4 } } }, 'test');
      await core.call('startTraining', {}, 'test');
      await core.scheduler.idle();
      expect((await core.call('listRuns', {}, 'test'))[0]!.status).toBe('succeeded');
      expect(readdirSync(dir)).toEqual(['v1']);
      expect(readdirSync(path.join(dir, 'v1')).sort()).toEqual(['adapter.gguf', 'config.json', 'lineage.json', 'metrics.json', 'peft']);
      // The GGUF LoRA is written with the version (llama.cpp and Ollama load it; serving/embedded.test.ts serves one).
      const lineage = JSON.parse(readFileSync(path.join(dir, 'v1', 'lineage.json'), 'utf8')) as { gguf: string | null };
      expect(lineage.gguf).toBe('adapter.gguf');
      expect(readFileSync(path.join(dir, 'v1', 'adapter.gguf')).subarray(0, 4).toString('latin1')).toBe('GGUF');
    } finally {
      core.close();
    }
  });

  it('skips a turn with an out-of-vocabulary token id, with its reason in the metrics, and trains: this round and the next', { timeout: 120_000 }, async () => {
    const core = await newCore('oov', { steps: 4 });
    try {
      await captureAndRate(core, await sampleTurns(engine, 8, 3), rule, 'a');
      const size = engine.tokenizer!.size;
      const policy = { modelId: modelDir, temperature: 1, topP: 1 };
      const { turn } = await core.call('captureTurn', { source: 'api', eventId: 'oov', prompt: 'hi', response: 'x', tokens: [size + 5], logprobs: [-1], policy }, 'test');
      const { rating } = await core.call('rate', { turnId: turn!.id, value: 'bad' }, 'test');
      for (const tag of ['first', 'next']) {
        await core.call('startTraining', {}, 'test');
        await core.scheduler.idle();
        const run = (await core.call('listRuns', {}, 'test'))[0]!;
        expect(run.status, `${tag} round: ${String(run.error)}`).toBe('succeeded');
        const skipped = (run.metrics as { samples: { skipped: { ratingId: number; why: string }[] } }).samples.skipped;
        if (tag === 'first') expect(skipped).toEqual([{ ratingId: rating.id, turnId: turn!.id, why: `stored response token 0 has id ${size + 5}, outside the vocabulary (size ${size})` }]);
        // The turn and its rating stay visible.
        expect((await core.call('getTurn', { turnId: turn!.id }, 'test')).rating?.id).toBe(rating.id);
        await captureAndRate(core, await sampleTurns(engine, 8, 4), rule, 'b');
      }
      expect((await core.call('listAdapters', {}, 'test')).map((v) => v.version).sort()).toEqual([1, 2]);
    } finally {
      core.close();
    }
  });

  it('rolls back to the base and forward again, restoring the stored EMA; reset removes the versions', { timeout: 120_000 }, async () => {
    // The balanced preset as a user gets it: these 32 ratings are the learning curve's seed 1 at N = 32, which goes live.
    const core = await newCore('rollback');
    try {
      await captureAndRate(core, await sampleTurns(engine, 32, 1), rule, 'r');
      await core.call('startTraining', {}, 'test');
      await core.scheduler.idle();
      const v1 = (await core.call('listAdapters', {}, 'test'))[0]!;
      expect(v1.status).toBe('active');
      expect(v1.emaValue).toBe((await core.call('status', {}, 'test')).ema!.value);
      // New ratings move the EMA; rolling back to v1 later restores the value stored with it.
      await captureAndRate(core, await sampleTurns(engine, 4, 99).then((ts) => ts.map((t) => ({ ...t, text: 'ok' }))), rule, 'more');
      expect((await core.call('status', {}, 'test')).ema!.value).not.toBe(v1.emaValue);
      const toBase = await core.call('rollback', { version: 0 }, 'test');
      expect(toBase.active).toBeNull();
      await core.call('rollback', { version: 1 }, 'test');
      expect((await core.call('status', {}, 'test')).ema!.value).toBe(v1.emaValue);
      // The rolled-back run's ratings are not requeued: pending are the 6 that v1's round held out and the 4 later ones.
      expect((await core.call('status', {}, 'test')).pending).toBe(6 + 4);
      const r = await core.call('reset', { confirm: true }, 'test');
      expect(r.adapters).toBe(1);
      expect(existsSync(v1.path)).toBe(false);
    } finally {
      core.close();
    }
  });
});
