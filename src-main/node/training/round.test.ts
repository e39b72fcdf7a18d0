// Training rounds end to end through the core and the real child-process worker, on the small LM: kill -9 of the
// worker mid-run, a poison turn, and rollback with the EMA. The learning curve is rein demo's (cli/commands/demo.test.ts)
// and bench/learning.ts's.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TrainingProgress } from '../../common/domain.ts';
import { createCore, type ReinCore } from '../core/core.ts';
import { Engine } from '../engine/engine.ts';
import { resolveHome } from '../home.ts';
import { readTrainingLock } from './lock.ts';
import { styleRule } from '../demo/corpus.ts';
import { SMALL_LM_DIR } from '../demo/small-lm.ts';
import { captureAndRate, sampleTurns } from './test-utils/rated-turns.ts';
import { modelAdaptersDir } from '../model-files/adapter-versions.ts';
import { pairedReturns, type EnvGateMetrics } from '../../common/training/gate.ts';
import type { EnvGateRequest } from './round.ts';

const rule = styleRule('tests');

let root: string;
let modelDir: string;
let engine: Engine;
beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rein-round-'));
  modelDir = SMALL_LM_DIR;
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

describe('a training round', () => {
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

  it('parks a turn with an out-of-vocabulary token id, with its reason on the rating, and trains the rest: this round and the next', { timeout: 120_000 }, async () => {
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
        // Parked before the selection (parking.ts): not skipped inside the round, not pending, and it says why.
        const m = run.metrics as { samples: { skipped: { ratingId: number; why: string }[] } };
        expect(m.samples.skipped).toEqual([]);
        const view = (await core.call('getTurn', { turnId: turn!.id }, 'test')).rating;
        expect(view?.id).toBe(rating.id);
        // Neither drawn nor held out by any round.
        expect(view?.lastRound).toBeNull();
        expect(view?.parked).toBe(`stored response token 0 has id ${size + 5}, outside the vocabulary (size ${size})`);
        expect((await core.call('status', {}, 'test')).parked).toBe(1);
        await captureAndRate(core, await sampleTurns(engine, 8, 4), rule, 'b');
      }
      expect((await core.call('listAdapters', {}, 'test')).map((v) => v.version).sort()).toEqual([1, 2]);
    } finally {
      core.close();
    }
  });

  it('an env-gated round holds out no rating, has the process that started it play the candidate and its parent, and follows the env gate', { timeout: 120_000 }, async () => {
    const core = await newCore('env-gate', { steps: 4 });
    try {
      await captureAndRate(core, await sampleTurns(engine, 8, 5), rule, 'a');
      // Nothing registered to play the env: refused before a run is made.
      await expect(core.call('startTraining', { gate: 'env' }, 'test')).rejects.toThrow(/an env-gated round needs the env to play its gate on/);
      expect(await core.call('listRuns', {}, 'test')).toEqual([]);
      const asked: EnvGateRequest[] = [];
      // The player's verdicts: first a candidate worse than its parent (30 of 400 hands lost instead of won), then one a hand better.
      const verdicts = [
        [Array.from({ length: 400 }, (_, i) => (i < 30 ? -1 : 1)), Array.from({ length: 400 }, () => 1)],
        [Array.from({ length: 400 }, (_, i) => (i < 1 ? 1 : 0)), Array.from({ length: 400 }, () => 0)],
      ];
      core.scheduler.setEnvPlayer(async (req): Promise<EnvGateMetrics> => {
        asked.push(req);
        const [c, p] = verdicts[asked.length - 1]!;
        return { env: 'test', firstSeed: 1, ...pairedReturns(c!, p!), candidateInvalid: 0, candidateSteps: 400, parentInvalid: 0, parentSteps: 400, kl: 0.5, klTokens: 1600 };
      });
      for (const want of ['rejected', 'active'] as const) {
        await core.call('startTraining', { gate: 'env' }, 'test');
        await core.scheduler.idle();
        const run = (await core.call('listRuns', {}, 'test'))[0]!;
        expect(run.status, String(run.error)).toBe('succeeded');
        const m = run.metrics as { samples: { pending: number; heldout: number }; gate: { kind: string; kl: number; env: EnvGateMetrics } };
        // Every pending rating trains: the held-out set is the env's seeds.
        expect(m.samples).toMatchObject({ pending: 8, heldout: 0 });
        expect(m.gate).toMatchObject({ kind: 'env', kl: 0.5, env: { episodes: 400 } });
        expect(run.config).toMatchObject({ gate: 'env' });
        const v = (await core.call('listAdapters', {}, 'test')).find((a) => a.version === run.adapterVersion)!;
        expect(v.status).toBe(want);
        expect(v.reason).toMatch(want === 'rejected' ? /paired change -0\.150 .*worse than the parent on these episodes \(measurably/ : /paired change \+0\.003 .*no worse than the parent/);
      }
      // The worker sent the candidate it trained and the parent it would replace: the base first, then still the base
      // (the first candidate was rejected).
      expect(asked.map((r) => [r.runId, r.parent === null, r.candidate.pairs.length > 0])).toEqual([
        [1, true, true],
        [2, true, true],
      ]);
    } finally {
      core.close();
    }
  });

  it('rolls back to the base and forward again, restoring the stored EMA; reset removes the versions', { timeout: 240_000 }, async () => {
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
