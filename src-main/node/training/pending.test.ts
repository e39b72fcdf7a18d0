// Nothing is burned (issue #12), end to end through the core and the real trainer worker on the small pretrained LM: a
// rating becomes trained only when it was drawn into a step of a version that went live. A rejected round leaves
// its ratings pending and says so; held-out ratings are scored, not trained, and stay pending; a backlog larger
// than steps × batch is drawn whole; the scheduler does not retry a rejected round on the same ratings.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GateMetrics } from '../../common/training/gate.ts';
import { ratingRoundText } from '../../common/training/rounds.ts';
import { createCore, type ReinCore } from '../core/core.ts';
import { Engine } from '../engine/engine.ts';
import { resolveHome } from '../home.ts';
import { activeModelId } from '../serving/producer.ts';
import type { RoundMetrics } from './round.ts';
import { styleRule } from '../demo/corpus.ts';
import { SMALL_LM_DIR } from '../demo/small-lm.ts';
import { captureAndRate, SAMPLE_OPTS, sampleTurns, type SampledTurn } from './test-utils/rated-turns.ts';

let root: string;
let modelDir: string;
let engine: Engine;
beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rein-pending-'));
  modelDir = SMALL_LM_DIR;
  engine = Engine.load(modelDir, { threads: 1 });
});
afterAll(async () => {
  await engine.close();
  rmSync(root, { recursive: true, force: true });
});

async function newCore(name: string, values: Record<string, unknown>): Promise<ReinCore> {
  const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, name) }) });
  await core.call('setSettings', { values: { 'model.active': modelDir, 'training.auto': false, 'training.preset': 'balanced', ...values } }, 'test');
  return core;
}

/** On-policy captures rated 3 of 5: reward 0 each, so no contrast: every advantage r − baseline is 0 and no turn has a direction. */
async function rateNeutral(core: ReinCore, turns: readonly SampledTurn[], tag: string): Promise<void> {
  const modelId = activeModelId(core);
  for (const [i, t] of turns.entries()) {
    const policy = { modelId, temperature: SAMPLE_OPTS.temperature, topP: SAMPLE_OPTS.topP };
    const { turn } = await core.call('captureTurn', { source: 'api', eventId: `${tag}-${i}`, prompt: t.prompt, response: t.text, tokens: t.tokens, logprobs: t.logprobs.map((x) => Math.min(0, x)), policy }, 'test');
    await core.call('rate', { turnId: turn!.id, value: 3 }, 'test');
  }
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
const rule = styleRule('question');

describe('nothing is burned', () => {
  it('a rejected round leaves its ratings pending, says so, and is not retried until threshold new ratings', { timeout: 300_000 }, async () => {
    // Ten neutral ratings reach the threshold and start a round by themselves. 8 would train and 2 are held out; with
    // no contrast no rating has a direction, so the round takes no step and rejects v1 (training/data.ts).
    const core = await newCore('rejected', { 'training.auto': true, 'training.threshold': 10 });
    try {
      await rateNeutral(core, await sampleTurns(engine, 10, 5), 'a');
      await core.scheduler.idle();
      await tick();
      const runs = await core.call('listRuns', {}, 'test');
      expect(runs).toHaveLength(1);
      const run = runs[0]!;
      expect(run.status, String(run.error)).toBe('succeeded');
      const v1 = (await core.call('listAdapters', {}, 'test'))[0]!;
      expect(v1.status).toBe('rejected');
      expect(v1.reason).toMatch(/^no contrast: the round's 8 trained ratings all have reward 0/);
      const m = run.metrics as RoundMetrics;
      expect([m.samples.pending, m.samples.heldout, m.samples.drawn.length, m.stepCount]).toEqual([8, 2, 0, 0]);
      // Every rating is pending again, and each says why it is not trained.
      const st = await core.call('status', {}, 'test');
      expect(st.pending).toBe(10);
      expect(st.rejected).toEqual({ runId: run.id, pending: 8 });
      const ratings = (await core.call('listRatings', { limit: 100 }, 'test')).items;
      expect(ratings.every((r) => r.runId === null)).toBe(true);
      const texts = ratings.map(ratingRoundText).sort();
      expect(texts).toEqual([...Array(2).fill(`not trained yet (held out to test round ${run.id}; the next round trains it)`), ...Array(8).fill(`not trained (round ${run.id} rejected)`)].sort());
      const lineage = JSON.parse(readFileSync(path.join(v1.path, 'lineage.json'), 'utf8')) as { ratings: { id: number; role: string }[] };
      const trainedRole = lineage.ratings.filter((r) => r.role === 'pending').map((r) => r.id);
      expect(ratings.filter((r) => r.lastRound?.role === 'trained').map((r) => r.id).sort((a, b) => a - b)).toEqual(trainedRole.sort((a, b) => a - b));
      // The scheduler did not start the same ratings again when the round ended, nor on 9 new ratings; the 10th
      // new one starts a round.
      expect(core.scheduler.runningRunId).toBeNull();
      await rateNeutral(core, await sampleTurns(engine, 9, 6), 'b');
      await tick();
      expect(await core.call('listRuns', {}, 'test')).toHaveLength(1);
      await rateNeutral(core, await sampleTurns(engine, 1, 7), 'c');
      expect(core.scheduler.runningRunId).not.toBeNull();
      await core.scheduler.idle();
      expect(await core.call('listRuns', {}, 'test')).toHaveLength(2);
    } finally {
      core.close();
    }
  });

  it('200 pending with a small preset: every trained rating is drawn, held-out ones are scored, not trained, and stay pending', { timeout: 300_000 }, async () => {
    // steps 4 × batch 8 draws 32 sequences; the round runs ceil(1 epoch × 160 / 8) = 20 steps instead.
    const core = await newCore('backlog', { 'training.preset': 'custom', 'training.custom': { steps: 4 } });
    try {
      await captureAndRate(core, await sampleTurns(engine, 200, 11), rule, 'p');
      await core.call('startTraining', {}, 'test');
      await core.scheduler.idle();
      const run = (await core.call('listRuns', {}, 'test'))[0]!;
      expect(run.status, String(run.error)).toBe('succeeded');
      const m = run.metrics as RoundMetrics;
      const g: GateMetrics = m.gate;
      const v1 = (await core.call('listAdapters', {}, 'test'))[0]!;
      console.log(
        `backlog round: ${m.samples.pending} trained, ${m.samples.heldout} held out, ${m.stepCount} steps; gate: accuracy ${g.accuracy?.toFixed(3)} ` +
          `(${g.correct}/${g.heldout}) Wilson [${g.accuracyCi?.map((x) => x.toFixed(2)).join(', ')}], KL ${g.kl.toFixed(4)}/token over ${g.klTokens} tokens ` +
          `(budget ${g.klBudget.toFixed(3)}), from the base ${g.klBase.toFixed(4)}; ${v1.status}: ${v1.reason}`,
      );
      expect([m.samples.pending, m.samples.heldout, m.stepCount]).toEqual([160, 40, 20]);
      const lineage = JSON.parse(readFileSync(path.join(v1.path, 'lineage.json'), 'utf8')) as { ratings: { id: number; role: string; drawn: boolean }[] };
      const trained = lineage.ratings.filter((r) => r.role === 'pending').map((r) => r.id);
      const held = lineage.ratings.filter((r) => r.role === 'heldout').map((r) => r.id);
      expect(m.samples.drawn).toEqual([...trained].sort((a, b) => a - b));
      expect(held.some((id) => m.samples.drawn.includes(id))).toBe(false);
      // Trained means drawn into a version that went live. Whether this round's drift stays within the balanced budget
      // (printed above) is the gate's call on this model, so whether v1 goes live is the gate's call, and both outcomes are checked.
      const accepted = v1.status === 'active';
      const ratings = new Map((await core.call('listRatings', { limit: 1000 }, 'test')).items.map((r) => [r.id, r]));
      const trainedText = accepted ? `trained in round ${run.id}` : `not trained (round ${run.id} rejected)`;
      expect(trained.every((id) => ratings.get(id)!.runId === (accepted ? run.id : null) && ratingRoundText(ratings.get(id)!) === trainedText)).toBe(true);
      expect(held.every((id) => ratings.get(id)!.runId === null && ratingRoundText(ratings.get(id)!) === `not trained yet (held out to test round ${run.id}; the next round trains it)`)).toBe(true);
      const st = await core.call('status', {}, 'test');
      expect(st.pending).toBe(accepted ? 40 : 200);
      expect(st.rejected).toEqual(accepted ? null : { runId: run.id, pending: 160 });
    } finally {
      core.close();
    }
  });
});
