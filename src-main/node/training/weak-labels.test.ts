// Unconfirmed weak labels in a round (training.implicit weighted), against a real core and store: which labels a round
// may train (the ones the card would offer, never on an answer with a rating of its own, once per version lineage),
// at what weight (the reader's confidence × WEAK_LABEL_FACTOR, below a rating's 1), and that the held-out set the
// gate scores is drawn from ratings alone.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultSettings } from '../../common/config.ts';
import { readSignals } from '../../common/implicit/reader.ts';
import { createCore, DEFAULT_MODEL_ID, type ReinCore } from '../core/core.ts';
import { writeTinyModel } from '../engine/tiny.ts';
import { resolveHome } from '../home.ts';
import type { RoundMetrics } from './round.ts';
import { heldoutCount } from '../../common/training/estimate.ts';
import { ktoWeights, selectRound, WEAK_LABEL_FACTOR, weakLabelled, type RatedTurn, type SampleRole, type TrainSequence } from './data.ts';

const root = mkdtempSync(path.join(os.tmpdir(), 'rein-weak-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let seq = 0;
/** Captures a Claude Code turn of `session`; the next one of the same session is its follow-up. */
async function say(core: ReinCore, session: string, prompt: string): Promise<number> {
  seq++;
  const { turn } = await core.call('captureTurn', { source: 'claude-code', session, eventId: `${session}:p${seq}`, prompt, response: `answer ${seq}` }, 'hook');
  return turn!.id;
}

describe('training.implicit', () => {
  it('defaults to confirm-only: a confirmed label is an ordinary pending rating, and off offers none', async () => {
    expect(defaultSettings()['training.implicit']).toBe('confirm-only');
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'default') }) });
    try {
      const a = await say(core, 'd1', 'add a retry loop');
      await say(core, 'd1', "no, that's wrong, it retries forever");
      const b = await say(core, 'd2', 'rename the module');
      await say(core, 'd2', 'perfect, thanks');
      const before = core.store.counts(DEFAULT_MODEL_ID).pending;
      const { rating } = await core.call('confirmWeakLabel', { turnId: a }, 'test');
      expect(rating).toMatchObject({ kind: 'bad', rater: 'implicit:says-wrong', runId: null });
      expect(core.store.counts(DEFAULT_MODEL_ID).pending).toBe(before + 1);

      await core.call('setSettings', { values: { 'training.implicit': 'off' } }, 'test');
      expect((await core.call('weakLabels', {}, 'test')).items).toEqual([]);
      const read = await core.call('turnSignals', { turnId: b }, 'test');
      // The evidence stays; no label is read from it.
      expect(read.signals).toHaveLength(1);
      expect(read.label).toBeNull();
      await expect(core.call('confirmWeakLabel', { turnId: b }, 'test')).rejects.toThrow(/training.implicit is off/);
      expect(core.store.liveRating(b)).toBeNull();
      await expect(core.call('setSettings', { values: { 'training.implicit': 'sometimes' } }, 'test')).rejects.toThrow(/training.implicit/);
    } finally {
      core.close();
    }
  });

  it('weighted: a round may train the labels the card offers, at confidence × 0.5, never over a rating, once per lineage, never held out', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'weighted') }) });
    try {
      const store = core.store;
      const model = DEFAULT_MODEL_ID;
      const bad = await say(core, 'w1', 'make the parser accept trailing commas');
      await say(core, 'w1', "no, that's wrong, the test still fails");
      const good = await say(core, 'w2', 'rename getUser to fetchUser');
      await say(core, 'w2', 'perfect, thanks');
      // Read as Bad, rated Good by the user: the rating alone speaks for it.
      const rated = await say(core, 'w3', 'add pagination');
      await say(core, 'w3', 'that is wrong, page 2 repeats page 1');
      await core.call('rate', { turnId: rated, value: 'good' }, 'test');
      // Dismissed: suggests nothing, trains nothing.
      const dismissed = await say(core, 'w4', 'add a --json flag');
      await say(core, 'w4', 'nope, still broken');
      await core.call('dismissWeakLabel', { turnId: dismissed }, 'test');
      // Explicit ratings of other answers, so the round has a held-out set.
      for (let i = 0; i < 10; i++) {
        const { turn } = await core.call('captureTurn', { source: 'api', eventId: `x${i}`, prompt: `p${i}`, response: `r${i}` }, 'test');
        await core.call('rate', { turnId: turn!.id, value: i % 2 === 0 ? 'good' : 'bad' }, 'test');
      }

      const weak = weakLabelled(store, new Set());
      expect(weak.map((w) => [w.turn.turnId, w.label.value]).sort()).toEqual([
        [bad, 'bad'],
        [good, 'good'],
      ].sort());
      for (const w of weak) {
        const label = readSignals(store.signals.ofTurn(w.turn.turnId))!;
        expect(w.weight).toBeCloseTo(label.confidence * WEAK_LABEL_FACTOR, 12);
        expect(w.weight).toBeGreaterThan(0);
        expect(w.weight).toBeLessThanOrEqual(0.5);
        expect(w.turn).toMatchObject({ role: 'weak', ratingId: -w.turn.turnId, reward: label.value === 'good' ? w.weight : -w.weight, tokens: null, logprobs: null });
      }

      // The held-out set and every rating a round selects are the user's ratings: no weak label among them, even
      // when all of the pending ones are held out.
      const selected = await selectRound(store, model, { replayRatio: 0, heldoutFraction: 1, gateTurns: 64, seed: 1, lineageRuns: new Set() });
      // 11 ratings (10 of other answers, one over a Bad label), all held out but one of each reward sign (the split
      // keeps one of each sign to train: heldoutIndices).
      const signs = new Set(selected.map((t) => Math.sign(t.reward))).size;
      expect(selected.filter((t) => t.role === 'heldout')).toHaveLength(Math.min(heldoutCount(11, 1), 11 - signs));
      expect(selected).toHaveLength(11);
      expect(selected.every((t) => t.ratingId > 0 && t.role !== 'weak')).toBe(true);
      expect(selected.map((t) => t.turnId)).not.toContain(bad);
      expect(selected.map((t) => t.turnId)).not.toContain(good);

      // A label a round of the lineage drew is not trained again; one it selected but never drew, or one drawn by a
      // round outside the lineage (rolled back), is.
      const runIn = store.runs.insert({ modelId: model, status: 'succeeded', trigger: 'manual', fromVersion: null }, 'system');
      const runOut = store.runs.insert({ modelId: model, status: 'succeeded', trigger: 'manual', fromVersion: null }, 'system');
      const drawn = (turnId: number, d: boolean) => ({ turnId, value: 'bad', rule: 'says-wrong', confidence: 0.9, weight: 0.45, drawn: d });
      store.runs.succeed(runIn.id, { metrics: { weak: { labels: 2, drawn: 1, meanWeight: 0.45, turns: [drawn(bad, true), drawn(good, false)] } }, version: 1, config: {} });
      store.runs.succeed(runOut.id, { metrics: { weak: { labels: 1, drawn: 1, meanWeight: 0.45, turns: [drawn(good, true)] } }, version: 2, config: {} });
      expect(weakLabelled(store, new Set([runIn.id])).map((w) => w.turn.turnId)).toEqual([good]);
      expect(weakLabelled(store, new Set([runIn.id, runOut.id]))).toEqual([]);

      // Confirming one makes it a rating: it leaves the weak labels and is held out or trained like any rating.
      await core.call('confirmWeakLabel', { turnId: good }, 'test');
      expect(weakLabelled(store, new Set()).map((w) => w.turn.turnId)).toEqual([bad]);
    } finally {
      core.close();
    }
  });

  it('a weak label weighs its confidence × 0.5 of a rating of its class, and never changes what a rating weighs', () => {
    const o = { pseudoLabelWeight: 0, ktoDesirable: 1, ktoUndesirable: 1 };
    let id = 0;
    const make = (role: SampleRole, reward: number): [TrainSequence, RatedTurn] => {
      id++;
      const ratingId = role === 'weak' ? -id : id;
      const turn: RatedTurn = { ratingId, turnId: id, role, source: 'claude-code', reward, correction: null, context: [], prompt: 'p', response: 'r', tokens: null, logprobs: null, policy: null, createdAt: id };
      return [{ ratingId, role, tokens: [1, 2], start: 1, mask: [1], kind: 'kto', mu: null, advantage: 0, desirable: reward > 0 }, turn];
    };
    const ratings = [make('pending', 1), make('pending', 1), make('pending', -1), make('replay', 0.5)];
    // Many weak Good labels: counted as a class they would shrink every Good rating's weight.
    const weak = Array.from({ length: 6 }, () => make('weak', 0.9 * WEAK_LABEL_FACTOR));
    const turnOf = new Map([...ratings, ...weak].map(([s, t]) => [s.ratingId, t]));
    const alone = ktoWeights(ratings.map(([s]) => s), turnOf, o);
    const mixed = ktoWeights([...ratings, ...weak].map(([s]) => s), turnOf, o);
    for (const [s] of ratings) expect(mixed.get(s)).toBe(alone.get(s));
    const goodRating = alone.get(ratings[0]![0])!;
    for (const [s] of weak) expect(mixed.get(s)).toBeCloseTo(goodRating * 0.45, 12);
    // A scale 4 of 5 (|r| 0.5) and the Bad rating keep their own weights too.
    expect(mixed.get(ratings[3]![0])).toBeCloseTo(goodRating * 0.5, 12);
  });

  it('a weighted round through the scheduler and worker trains them and counts them in its metrics; the gate scores ratings only', { timeout: 300_000 }, async () => {
    const modelDir = path.join(root, 'model');
    writeTinyModel(modelDir, { arch: 'qwen2', layers: 2, hidden: 32, heads: 4, kvHeads: 2, intermediate: 64, dtype: 'F32', seed: 3, std: 0.2 });
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'round') }) });
    try {
      await core.call('setSettings', { values: { 'model.active': modelDir, 'training.auto': false, 'training.preset': 'custom', 'training.custom': { steps: 2 }, 'training.implicit': 'weighted' } }, 'test');
      const bad = await say(core, 'r1', 'make the parser accept trailing commas');
      await say(core, 'r1', "no, that's wrong, the test still fails");
      const good = await say(core, 'r2', 'rename getUser to fetchUser');
      await say(core, 'r2', 'perfect, thanks');
      const ratingIds: number[] = [];
      for (let i = 0; i < 10; i++) {
        const { turn } = await core.call('captureTurn', { source: 'api', eventId: `y${i}`, prompt: `question ${i}`, response: i % 2 === 0 ? 'yes, done' : 'no idea' }, 'test');
        ratingIds.push((await core.call('rate', { turnId: turn!.id, value: i % 2 === 0 ? 'good' : 'bad' }, 'test')).rating.id);
      }
      const round = async (): Promise<RoundMetrics> => {
        const { runId } = await core.call('startTraining', {}, 'test');
        await core.scheduler.idle();
        const run = (await core.call('listRuns', {}, 'test')).find((r) => r.id === runId)!;
        expect(run.status).toBe('succeeded');
        return run.metrics as RoundMetrics;
      };
      const m = await round();
      expect(m.weak.labels).toBe(2);
      expect(m.weak.turns.map((w) => [w.turnId, w.value]).sort()).toEqual([[bad, 'bad'], [good, 'good']].sort());
      // Every sequence is drawn at least once in a round (an epoch over a shuffle), so both trained.
      expect(m.weak.drawn).toBe(2);
      for (const w of m.weak.turns) expect(w.weight).toBeCloseTo(w.confidence * WEAK_LABEL_FACTOR, 12);
      expect(m.weak.meanWeight).toBeCloseTo((m.weak.turns[0]!.weight + m.weak.turns[1]!.weight) / 2, 12);
      // Trained as text beside the 10 ratings' held-out split: the gate scored only ratings.
      expect(m.samples.heldout).toBe(heldoutCount(10, 0.2));
      expect(m.gate.heldout).toBe(m.samples.heldout);
      expect(m.samples.pending + m.samples.heldout).toBe(10);
      expect(m.samples.sequences).toBe(m.samples.pending + 2);
      expect(m.samples.drawn.every((id) => ratingIds.includes(id))).toBe(true);
      // Selecting and training a weak label rates nothing.
      expect(core.store.liveRating(bad)).toBeNull();
      expect(core.store.liveRating(good)).toBeNull();

      await core.call('setSettings', { values: { 'training.implicit': 'confirm-only' } }, 'test');
      const again = await round();
      expect(again.weak).toEqual({ labels: 0, drawn: 0, meanWeight: null, turns: [] });
    } finally {
      core.close();
    }
    // Weak labels alone: they train, but the gate has no rating to score the candidate on, so it never goes live.
    const only = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'weak-only') }) });
    try {
      await only.call('setSettings', { values: { 'model.active': modelDir, 'training.auto': false, 'training.preset': 'custom', 'training.custom': { steps: 2 }, 'training.implicit': 'weighted' } }, 'test');
      await say(only, 'o1', 'make the parser accept trailing commas');
      await say(only, 'o1', "no, that's wrong, the test still fails");
      const { runId } = await only.call('startTraining', {}, 'test');
      await only.scheduler.idle();
      const run = (await only.call('listRuns', {}, 'test')).find((r) => r.id === runId)!;
      const m = run.metrics as RoundMetrics;
      expect(m.weak).toMatchObject({ labels: 1, drawn: 1 });
      expect(m.samples.heldout).toBe(0);
      expect(m.gate.heldout).toBe(0);
      const [adapter] = await only.call('listAdapters', {}, 'test');
      expect(adapter).toMatchObject({ status: 'rejected' });
      expect(adapter!.reason).toMatch(/no held-out rated turn/);
    } finally {
      only.close();
    }
  });
});
