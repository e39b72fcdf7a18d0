// The reward baseline in a real round: the committed small pretrained LM, the balanced preset as every user gets it,
// 16 on-policy answers captured and rated through the core, one round in the real worker. Each trained on-policy
// rating meets the mean reward of the round's other ones (common/rewards.ts roundBaselines), so the advantages sum
// to zero. A one-class round (all Good, all Bad) has no contrast: every advantage is 0, the round takes no step and
// is rejected, and its ratings stay pending. Before, the baseline was an EMA from 0 that a first round had moved only
// a few percent: an all-Good round trained each answer with A ≈ +1 (supervised fine-tuning on its own samples) and an
// all-Bad one with A ≈ −1 (measured: mean log p of the rated answers −4.72 → −14.49).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { modelLinearParams } from '../../common/engine/families/registry.ts';
import { Rng } from '../../common/engine/rng.ts';
import { heldoutCount } from '../../common/training/estimate.ts';
import { createCore, type ReinCore } from '../core/core.ts';
import { Engine } from '../engine/engine.ts';
import { loadPeftAdapter } from '../engine/peft.ts';
import { resolveHome } from '../home.ts';
import { demoPrompt } from '../demo/corpus.ts';
import { SMALL_LM_DIR } from '../demo/small-lm.ts';
import { captureAndRate, SAMPLE_OPTS, type SampledTurn } from './test-utils/rated-turns.ts';

const N = 16;
const MAX_TOKENS = 24;

let root: string;
let engine: Engine;
beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rein-baseline-'));
  engine = Engine.load(SMALL_LM_DIR, { threads: 1 });
});
afterAll(async () => {
  await engine.close();
  rmSync(root, { recursive: true, force: true });
});

/** n answers of the small LM to corpus prompts, with the logprobs they were sampled with (T = 1, full distribution). */
async function sample(n: number, seed: number): Promise<SampledTurn[]> {
  const tok = engine.tokenizer!;
  const rng = new Rng(seed).fork('prompts');
  const out: SampledTurn[] = [];
  for (let i = 0; i < n; i++) {
    const prompt = demoPrompt(rng);
    const promptIds = tok.encodeChat([{ role: 'user', content: prompt }], { addGenerationPrompt: true });
    const s = await engine.sample(promptIds, { temperature: SAMPLE_OPTS.temperature, topP: SAMPLE_OPTS.topP, maxTokens: MAX_TOKENS, seed: seed * 100_003 + i });
    out.push({ prompt, promptIds, tokens: s.tokens, logprobs: s.logprobs, text: tok.decode(s.tokens, { skipSpecialTokens: true }) });
  }
  return out;
}

/** log p(answer | prompt) of each turn, summed over the answer's tokens, under `adapter` (null: the base). */
async function logps(turns: readonly SampledTurn[], adapter: LoraAdapter | null): Promise<number[]> {
  const out: number[] = [];
  for (const t of turns) out.push((await engine.logprobs([...t.promptIds, ...t.tokens], { start: t.promptIds.length, adapter })).reduce((a, b) => a + b, 0));
  return out;
}
const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

interface RunMetrics {
  baseline: { ratings: number; meanReward: number | null };
  advantages: { positive: number; negative: number; meanPositive: number | null; meanNegative: number | null };
  samples: { mispo: number; kto: number; heldout: number; drawn: number[]; skipped: unknown[] };
  stepCount: number;
  gate: { accept?: boolean; kl: number; klBudget: number };
}

interface FirstRound {
  core: ReinCore;
  turns: SampledTurn[];
  /** The rating id of each turn, in the same order. */
  ids: number[];
  runId: number;
  m: RunMetrics;
  status: string;
  reason: string | null;
  adapter: LoraAdapter;
}

/** N sampled answers rated Good where `good(i)` (i the turn's place), one round, and the version it wrote. */
async function firstRound(name: string, good: (i: number) => boolean, seed: number): Promise<FirstRound> {
  const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, name) }) });
  await core.call('setSettings', { values: { 'model.active': SMALL_LM_DIR, 'training.auto': false, 'training.preset': 'balanced' } }, 'test');
  const turns = await sample(N, seed);
  let i = 0;
  await captureAndRate(core, turns, () => good(i++), name);
  await core.call('startTraining', {}, 'test');
  await core.scheduler.idle();
  const run = (await core.call('listRuns', {}, 'test'))[0]!;
  expect(run.status, String(run.error)).toBe('succeeded');
  const v = (await core.call('listAdapters', {}, 'test'))[0]!;
  const adapter = loadPeftAdapter(path.join(v.path, 'peft'), modelLinearParams(engine.config)).adapter;
  const ids = core.store.stmt<{ id: number }>('SELECT id FROM ratings ORDER BY id').all().map((r) => r.id);
  return { core, turns, ids, runId: run.id, m: run.metrics as RunMetrics, status: v.status, reason: v.reason, adapter };
}

/** What the round recorded for each rating it saw (run_samples): its role and advantage. */
function samples(core: ReinCore, runId: number): Map<number, { role: string; advantage: number | null }> {
  const rows = core.store.stmt<{ rating_id: number; role: string; advantage: number | null }>('SELECT rating_id, role, advantage FROM run_samples WHERE run_id = ?').all(runId);
  return new Map(rows.map((r) => [r.rating_id, { role: r.role, advantage: r.advantage }]));
}

describe('a first round with the reward baseline', () => {
  for (const [kind, value, seed] of [
    ['Good', true, 1],
    ['Bad', false, 2],
  ] as const) {
    it(`all ${kind} (${N} ratings): no contrast, so every advantage is 0, no step is taken, the round is rejected and every rating stays pending`, { timeout: 300_000 }, async () => {
      const r = await firstRound(kind.toLowerCase(), () => value, seed);
      const { core, m } = r;
      try {
        const before = await logps(r.turns, null);
        const after = await logps(r.turns, r.adapter);
        console.log(
          `all-${kind} first round: ${m.advantages.positive} positive / ${m.advantages.negative} negative advantages of ${m.samples.mispo}; baseline ${JSON.stringify(m.baseline)}; ` +
            `${m.stepCount} steps; mean log p of the rated answers ${mean(before).toFixed(3)} -> ${mean(after).toFixed(3)}; gate: ${r.status} (${r.reason})`,
        );
        const trained = N - heldoutCount(N, 0.2);
        expect(m.samples.mispo).toBe(trained);
        expect(m.baseline).toEqual({ ratings: trained, meanReward: value ? 1 : -1 });
        expect([m.advantages.positive, m.advantages.negative]).toEqual([0, 0]);
        expect(m.stepCount).toBe(0);
        expect(m.samples.drawn).toEqual([]);
        expect(r.status).toBe('rejected');
        expect(r.reason).toMatch(new RegExp(`^no contrast: the round's ${trained} trained ratings all have reward ${value ? '\\+1 \\(all Good\\)' : '-1 \\(all Bad\\)'}`));
        // The candidate is its parent (the base): the answers are exactly as likely as before.
        expect(after).toEqual(before);
        // Nothing wasted: every rating is pending, and the round recorded each one it saw (advantage 0), so the
        // scheduler waits for training.threshold new ratings before it tries again, as after any rejected round.
        expect((await core.call('status', {}, 'test')).pending).toBe(N);
        const seen = samples(core, r.runId);
        expect([...seen.keys()].sort((a, b) => a - b)).toEqual(r.ids);
        for (const s of seen.values()) expect(s.advantage).toBe(0);
        expect(core.store.runs.lastRejected(core.store.runs.get(r.runId)!.modelId)).toEqual({ runId: r.runId, pending: trained });
        expect(core.store.runs.pendingSince(core.store.runs.get(r.runId)!.modelId, r.runId)).toBe(0);
      } finally {
        core.close();
      }
    });
  }

  it(`mixed (${N} ratings, two Good to one Bad): each advantage is r − the mean of the others, they sum to 0, and the Good answers gain on the Bad ones`, { timeout: 300_000 }, async () => {
    const r = await firstRound('mixed', (i) => i % 3 !== 2, 3);
    const { core, m } = r;
    try {
      const seen = samples(core, r.runId);
      const good = (id: number): boolean => r.ids.indexOf(id) % 3 !== 2;
      const trainedIds = r.ids.filter((id) => seen.get(id)?.role === 'pending');
      const g = trainedIds.filter(good).length;
      const b = trainedIds.length - g;
      // Leave-one-out over ±1 rewards: a Good meets (g − 1 − b)/(n − 1), so A = 2b/(n − 1); a Bad A = −2g/(n − 1).
      const n = trainedIds.length;
      for (const id of trainedIds) expect(seen.get(id)!.advantage).toBeCloseTo(good(id) ? (2 * b) / (n - 1) : (-2 * g) / (n - 1), 12);
      expect(trainedIds.reduce((s, id) => s + seen.get(id)!.advantage!, 0)).toBeCloseTo(0, 12);
      expect(m.baseline).toEqual({ ratings: n, meanReward: expect.closeTo((g - b) / n, 12) as unknown });
      expect(m.stepCount).toBeGreaterThan(0);
      expect([...m.samples.drawn].sort((x, y) => x - y)).toEqual(trainedIds);
      // What the round trained on moved the right way: the Good answers' log p rose relative to the Bad ones'.
      const at = (id: number): number => r.ids.indexOf(id);
      const before = await logps(r.turns, null);
      const after = await logps(r.turns, r.adapter);
      const change = (ids: number[]): number => mean(ids.map((id) => after[at(id)]! - before[at(id)]!));
      const dGood = change(trainedIds.filter(good));
      const dBad = change(trainedIds.filter((id) => !good(id)));
      console.log(
        `mixed first round: ${g} Good (A ${(2 * b) / (n - 1)}) and ${b} Bad (A ${(-2 * g) / (n - 1)}) trained; baseline ${JSON.stringify(m.baseline)}; ` +
          `change in log p of the trained answers: Good ${dGood.toFixed(3)}, Bad ${dBad.toFixed(3)}; gate: ${r.status} (${r.reason})`,
      );
      expect(dGood).toBeGreaterThan(dBad);
      // Whether v1 goes live is the gate's call; a rejected round's ratings are all pending again.
      if (r.status !== 'active') expect((await core.call('status', {}, 'test')).pending).toBe(N);
    } finally {
      core.close();
    }
  });
});
