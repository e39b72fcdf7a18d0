// The compute API around the numerics: sampling and the train-loop helper, on a one-layer tiny model.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { policyGradient } from '../../common/engine/objectives.ts';
import { Engine, newOptimizer, trainStep } from './engine.ts';
import { writeTinyModel } from './tiny.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-engine-'));
let engine: Engine;
beforeAll(() => {
  writeTinyModel(path.join(root, 'm'), { arch: 'qwen2', layers: 1, hidden: 16, heads: 2, kvHeads: 1, intermediate: 16, dtype: 'F32', std: 0.3 });
  engine = Engine.load(path.join(root, 'm'), { threads: 1, headChunk: 8, buckets: [8, 16] });
});
afterAll(async () => {
  await engine.close();
  rmSync(root, { recursive: true, force: true });
});

describe('sample', () => {
  it('greedy decoding picks the argmax of the next-token distribution, each with μ = 0 (drawn with probability 1)', async () => {
    const prompt = [10, 20, 30];
    const out = await engine.sample(prompt, { temperature: 0, maxTokens: 3, stop: [] });
    expect(out.tokens).toHaveLength(3);
    const next = await engine.driver.nextLogprobs(prompt, null);
    let best = 0;
    for (let i = 1; i < next.length; i++) if (next[i]! > next[best]!) best = i;
    expect(out.tokens[0]).toBe(best);
    expect(out.logprobs).toEqual([0, 0, 0]);
  });

  it('is deterministic under a seed, varies across seeds, and stops at a stop token', async () => {
    const a = await engine.sample([1, 2], { temperature: 1.5, topP: 0.95, seed: 4, maxTokens: 6, stop: [] });
    const b = await engine.sample([1, 2], { temperature: 1.5, topP: 0.95, seed: 4, maxTokens: 6, stop: [] });
    const c = await engine.sample([1, 2], { temperature: 1.5, topP: 0.95, seed: 5, maxTokens: 6, stop: [] });
    expect(b.tokens).toEqual(a.tokens);
    expect(c.tokens).not.toEqual(a.tokens);
    const stopped = await engine.sample([1, 2], { temperature: 1.5, topP: 0.95, seed: 4, maxTokens: 6, stop: [a.tokens[1]!] });
    expect(stopped.tokens).toEqual(a.tokens.slice(0, 2));
    await expect(engine.sample([1], { topP: 0 })).rejects.toThrow(/topP/);
  });
});

describe('trainStep', () => {
  it('raises the logprob of a positively rewarded response and lowers a negatively rewarded one', async () => {
    const adapter = engine.newAdapter({ r: 4, alpha: 8 }, 1);
    const opt = newOptimizer(adapter, { lr: 1e-2, weightDecay: 0 });
    const good = { tokens: [3, 4, 5, 6, 7, 8], start: 3, advantage: 1 };
    const bad = { tokens: [3, 4, 5, 9, 10, 11], start: 3, advantage: -1 };
    const mean = async (s: typeof good): Promise<number> => (await engine.logprobs(s.tokens, { start: s.start, adapter })).reduce((x, y) => x + y, 0) / 3;
    const [g0, b0] = [await mean(good), await mean(bad)];
    const objective = policyGradient({ beta: 0.01 });
    for (let i = 0; i < 5; i++) {
      const r = await trainStep(engine, adapter, opt, [[good], [bad]], objective, { maxGradNorm: 1 });
      expect(Number.isFinite(r.loss) && r.gradNorm > 0).toBe(true);
    }
    expect(await mean(good)).toBeGreaterThan(g0 + 0.05);
    expect(await mean(bad)).toBeLessThan(b0 - 0.05);
    expect(opt.stepCount).toBe(5);
  });

  it('refuses an optimizer built over another adapter', async () => {
    const a = engine.newAdapter({ r: 2 }, 1);
    const other = newOptimizer(engine.newAdapter({ r: 2 }, 2));
    await expect(trainStep(engine, a, other, [[{ tokens: [1, 2, 3], start: 1, advantage: 1 }]], policyGradient({ beta: 0 }))).rejects.toThrow(/optimizer/);
  });
});
