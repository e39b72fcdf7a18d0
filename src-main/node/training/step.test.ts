// The round's step (step.ts) on a one-layer tiny model: it moves good text up and bad text down, refuses a foreign
// optimizer, estimates KTO's z0 on the batch's mismatched pairs, and its KTO anchor holds the policy near the base.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdamW } from '../../common/engine/adamw.ts';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { Engine, adapterParams } from '../engine/engine.ts';
import { writeTinyModel } from '../engine/tiny.ts';
import { ObjectiveRunner } from './objective-runner.ts';
import { batchGradient, ktoReferencePoint, newStepState, trainStep, type StepSequence } from './step.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-step-'));
const OPTS = { beta: 0.001, bandLow: 0.994, bandHigh: 1.002, drift: 'scale' as const, ratioClipLow: 0.5, ratioClipHigh: 2, ktoBeta: 0.1 };
let engine: Engine;
let objectives: ObjectiveRunner;
beforeAll(() => {
  writeTinyModel(path.join(root, 'm'), { arch: 'qwen2', layers: 1, hidden: 16, heads: 2, kvHeads: 1, intermediate: 16, dtype: 'F32', std: 0.3 });
  engine = Engine.load(path.join(root, 'm'), { threads: 1, headChunk: 8, buckets: [8, 16] });
  objectives = new ObjectiveRunner(OPTS);
});
afterAll(async () => {
  await objectives.dispose();
  await engine.close();
  rmSync(root, { recursive: true, force: true });
});

async function seq(tokens: number[], start: number, o: Partial<StepSequence>): Promise<StepSequence> {
  const ref = await engine.logprobs(tokens, { start });
  return { tokens, start, mask: tokens.slice(start).map(() => 1), ref, kind: 'mispo', mu: ref.slice(), advantage: 0, desirable: false, ktoWeight: 1, ...o };
}

const meanLogp = async (s: StepSequence, adapter: LoraAdapter): Promise<number> =>
  (await engine.logprobs(s.tokens, { start: s.start, adapter })).reduce((x, y) => x + y, 0) / (s.tokens.length - s.start);

describe('trainStep', () => {
  it('raises the logprob of a positive-advantage response and lowers a negative one (MIS-PO)', async () => {
    const adapter = engine.newAdapter({ r: 4, alpha: 8 }, 1);
    const opt = new AdamW(adapterParams(adapter), { lr: 1e-2, weightDecay: 0 });
    const good = await seq([3, 4, 5, 6, 7, 8], 3, { advantage: 1 });
    const bad = await seq([3, 4, 5, 9, 10, 11], 3, { advantage: -1 });
    const [g0, b0] = [await meanLogp(good, adapter), await meanLogp(bad, adapter)];
    const state = newStepState();
    for (let i = 0; i < 5; i++) {
      const r = await trainStep(engine, adapter, opt, objectives, [good, bad], state, { maxGradNorm: 1 });
      expect(Number.isFinite(r.loss) && r.gradNorm > 0).toBe(true);
    }
    expect(await meanLogp(good, adapter)).toBeGreaterThan(g0 + 0.05);
    expect(await meanLogp(bad, adapter)).toBeLessThan(b0 - 0.05);
    expect(opt.stepCount).toBe(5);
  });

  it('refuses an optimizer built over another adapter', async () => {
    const a = engine.newAdapter({ r: 2 }, 1);
    const other = new AdamW(adapterParams(engine.newAdapter({ r: 2 }, 2)));
    await expect(trainStep(engine, a, other, objectives, [await seq([1, 2, 3], 1, { advantage: 1 })], newStepState(), { maxGradNorm: 1 })).rejects.toThrow(/optimizer/);
  });
});

describe('KTO in the step', () => {
  it("z0 is the paper's estimate: max(0, mean log-ratio of mismatched prompt/completion pairs), detached, kept without a pair", async () => {
    const adapter = engine.newAdapter({ r: 4, alpha: 8 }, 3);
    for (const p of adapter.pairs) p.b.fill(0.2);
    const a = await seq([1, 2, 3, 4, 5], 2, { kind: 'kto', mu: null, desirable: true });
    const b = await seq([6, 7, 8, 9], 3, { kind: 'kto', mu: null, desirable: false });
    const c = await seq([10, 11, 12, 13, 14], 1, { kind: 'kto', mu: null, desirable: true });
    // Written out here from the definition: pair i is prompt(i) + completion(i + 1 mod 3), scored policy vs base.
    const pairs = [
      [[1, 2, 9], 2],
      [[8, 11, 12, 13, 14], 1], // the prompt is cut from the left to the longer sequence's length
      [[10, 3, 4, 5], 1],
    ] as const;
    let sum = 0;
    for (const [tokens, start] of pairs) {
      const lp = await engine.logprobs(tokens, { start, adapter });
      const ref = await engine.logprobs(tokens, { start });
      sum += lp.reduce((s, x, i) => s + x - ref[i]!, 0);
    }
    const z = await ktoReferencePoint(engine, adapter, [a, b, c]);
    expect(z).toBeCloseTo(Math.max(0, sum / 3), 6);
    // The matched log-ratios would give another value: the estimate is not the batch's own mean r.
    const state = newStepState();
    const g = await batchGradient(engine, adapter, objectives, [a, b, c], state);
    expect(g.z0).toBeCloseTo(z!, 10);
    expect(await ktoReferencePoint(engine, adapter, [a])).toBeNull();
    const kept = await batchGradient(engine, adapter, objectives, [a], state);
    expect(kept.z0).toBe(g.z0);
  });
});

describe('the mask in the step', () => {
  it("makes the batch's gradient, loss, KL, ratios and z0 blind to masked tokens' μ and base logprobs", async () => {
    const adapter = engine.newAdapter({ r: 4, alpha: 8 }, 5);
    for (const p of adapter.pairs) p.b.fill(0.1);
    const mask = [1, 0, 0, 1];
    const m = await seq([1, 2, 3, 4, 5, 6], 2, { advantage: 0.7, mask });
    const k1 = await seq([7, 8, 9, 10, 11], 1, { kind: 'kto', mu: null, desirable: true, mask });
    const k2 = await seq([12, 13, 14, 15, 16], 1, { kind: 'kto', mu: null, desirable: false });
    // The masked tokens' μ and ref moved far: a step that read them would change.
    const moved = (s: StepSequence): StepSequence => ({
      ...s,
      ref: s.ref.map((x, i) => (s.mask[i] === 1 ? x : x - 3)),
      mu: s.mu === null ? null : s.mu.map((x, i) => (s.mask[i] === 1 ? x : x + 2)),
    });
    const g = await batchGradient(engine, adapter, objectives, [m, k1, k2], newStepState());
    const h = await batchGradient(engine, adapter, objectives, [moved(m), moved(k1), k2], newStepState());
    expect(h.loss).toBeCloseTo(g.loss, 12);
    expect(h.kl).toBeCloseTo(g.kl, 12);
    expect(h.ratio).toEqual(g.ratio);
    g.grads.forEach((x, i) => x.forEach((v, j) => expect(h.grads[i]![j]).toBeCloseTo(v, 12)));
    // z0's mismatched pairs count the completion's mask-1 tokens only: pair 0 is prompt(k1) + completion(k2), pair 1
    // prompt(k2) + completion(k1), whose masked tokens do not count.
    let sum = 0;
    for (const [tokens, start, w] of [[[7, 13, 14, 15, 16], 1, [1, 1, 1, 1]], [[12, 8, 9, 10, 11], 1, mask]] as const) {
      const lp = await engine.logprobs(tokens, { start, adapter });
      const ref = await engine.logprobs(tokens, { start });
      lp.forEach((x, i) => (sum += w[i]! * (x - ref[i]!)));
    }
    expect(await ktoReferencePoint(engine, adapter, [k1, k2])).toBeCloseTo(Math.max(0, sum / 2), 10);
    await expect(batchGradient(engine, adapter, objectives, [{ ...m, mask: [1, 1] }], newStepState())).rejects.toThrow(/4 response tokens but a mask of 2/);
  });
});
