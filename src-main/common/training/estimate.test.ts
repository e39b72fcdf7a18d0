import { describe, expect, it } from 'vitest';
import { heldoutCount, roundSteps, roundTimeFromSize, withRoundTimes } from './estimate.ts';
import { describePresets } from './presets.ts';

describe('a round time from the model size', () => {
  it('is the docs/learning.md figure for a 0.5B model: 32 turns, 32 × 8 turn-steps ≈ 2.2 h', () => {
    const s = roundTimeFromSize({ activeParams: 494e6, pending: 32, steps: 32, batchSize: 8 });
    expect(s).toBeCloseTo(32 * 12.5 + 32 * 8 * 29.2, 6);
    expect(s / 3600).toBeCloseTo(2.19, 2);
  });

  it('describePresets carries one per preset, for the pending count asked, and scales with the parameters', () => {
    const shape = { activeParams: 494e6, totalParams: 494e6, moe: false };
    const table = withRoundTimes(describePresets(shape), { steps: 10, batchSize: 2, epochs: 1, heldoutFraction: 0.2 }, 16);
    expect(table.roundTime!.pending).toBe(16);
    for (const name of ['careful', 'balanced', 'aggressive'] as const) {
      const c = table.presets[name];
      const steps = roundSteps(c, 16 - heldoutCount(16, c.heldoutFraction));
      expect(table.roundTime!.steps[name]).toBe(steps);
      expect(table.roundTime!.seconds[name]).toBe(roundTimeFromSize({ activeParams: 494e6, pending: 16, steps, batchSize: c.batchSize }));
    }
    // 16 pending, 3 held out, 13 train: ceil(13 / 2) = 7 steps < 10, so the preset's 10.
    expect(table.roundTime!.heldout.custom).toBe(3);
    expect(table.roundTime!.seconds.custom).toBe(roundTimeFromSize({ activeParams: 494e6, pending: 16, steps: 10, batchSize: 2 }));
    expect(table.roundTime!.seconds.careful).toBeLessThan(table.roundTime!.seconds.aggressive);
    const half = withRoundTimes(describePresets({ ...shape, activeParams: 247e6, totalParams: 247e6 }), { steps: 10, batchSize: 2, epochs: 1, heldoutFraction: 0.2 }, 16);
    expect(half.roundTime!.seconds.custom).toBeCloseTo(table.roundTime!.seconds.custom / 2, 6);
  });

  it('a round draws every trained rating: 200 pending, 40 held out, 160 / 8 = 20 steps > 4', () => {
    expect([0, 1, 2, 10, 200].map((n) => heldoutCount(n, 0.2))).toEqual([0, 0, 1, 2, 40]);
    expect(roundSteps({ steps: 4, batchSize: 8, epochs: 1 }, 160)).toBe(20);
    expect(roundSteps({ steps: 32, batchSize: 8, epochs: 1 }, 160)).toBe(32);
    expect(roundSteps({ steps: 4, batchSize: 8, epochs: 1 }, 3)).toBe(4);
  });
});
