// The compute API around the numerics: sampling, on a one-layer tiny model (the training step: training/step.test.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from './engine.ts';
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
