import { describe, expect, it } from 'vitest';
import { advantage, emaFold, emaNext, rewardOf, roundBaselines } from './rewards.ts';

describe('rewardOf', () => {
  it('maps good, bad and the 1-5 scale', () => {
    expect(rewardOf('good')).toEqual({ kind: 'good', reward: 1, scale: null });
    expect(rewardOf('bad')).toEqual({ kind: 'bad', reward: -1, scale: null });
    expect([1, 2, 3, 4, 5].map((s) => rewardOf(s).reward)).toEqual([-1, -0.5, 0, 0.5, 1]);
  });
  it('rejects scales outside 1-5 and non-integers', () => {
    for (const bad of [0, 6, 2.5, Number.NaN]) expect(() => rewardOf(bad)).toThrow(RangeError);
  });
});

describe('EMA', () => {
  it('starts at 0 (ReinforceClaw: no seeding, no bias correction), then decays by 0.99', () => {
    expect(emaNext(null, -1)).toBeCloseTo(-0.01, 15);
    expect(emaNext(-1, 1)).toBeCloseTo(-0.98, 12);
    expect(emaFold(null, [1, 1, -1])).toBeCloseTo(0.99 * (0.99 * 0.01 + 0.01) - 0.01, 12);
    expect(emaFold(null, [])).toBeNull();
  });
  it('clips the advantage to +-2', () => {
    expect(advantage(1, -1.5)).toBe(2);
    expect(advantage(-1, 1.5)).toBe(-2);
    expect(advantage(0.5, 0.25)).toBe(0.25);
  });
});

describe('the round baseline (leave-one-out)', () => {
  it('each trained reward meets the mean of the others; held-out ones the mean of all trained', () => {
    const b = roundBaselines([1, -1, 1, 0.5], [-1, 1]);
    expect(b.trained).toEqual([(-1 + 1 + 0.5) / 3, (1 + 1 + 0.5) / 3, (1 - 1 + 0.5) / 3, (1 - 1 + 1) / 3]);
    expect(b.heldout).toEqual([0.375, 0.375]);
    expect(b.mean).toBe(0.375);
  });
  it('gives advantages that sum to zero', () => {
    const r = [1, 1, -1, 1, -1, 0.5, 1];
    const a = roundBaselines(r).trained.map((b, i) => r[i]! - b!);
    expect(a.reduce((x, y) => x + y, 0)).toBeCloseTo(0, 12);
  });
  it('has nothing to compare a lone rating with, and a round without ratings has no mean', () => {
    expect(roundBaselines([1], [-1])).toEqual({ trained: [null], heldout: [1], mean: 1 });
    expect(roundBaselines([], [1])).toEqual({ trained: [], heldout: [null], mean: null });
  });
});
