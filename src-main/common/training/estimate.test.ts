import { describe, expect, it } from 'vitest';
import { roundTimeFromSize, withRoundTimes } from './estimate.ts';
import { describePresets } from './presets.ts';

describe('a round time from the model size', () => {
  it('is the README figure for a 0.5B model: 32 turns, 32 × 8 turn-steps ≈ 2.2 h', () => {
    const s = roundTimeFromSize({ activeParams: 494e6, pending: 32, steps: 32, batchSize: 8 });
    expect(s).toBeCloseTo(32 * 12.5 + 32 * 8 * 29.2, 6);
    expect(s / 3600).toBeCloseTo(2.19, 2);
  });

  it('describePresets carries one per preset, for the pending count asked, and scales with the parameters', () => {
    const shape = { activeParams: 494e6, totalParams: 494e6, moe: false };
    const table = withRoundTimes(describePresets(shape), { steps: 10, batchSize: 2 }, 16);
    expect(table.roundTime!.pending).toBe(16);
    for (const name of ['careful', 'balanced', 'aggressive'] as const) {
      const c = table.presets[name];
      expect(table.roundTime!.seconds[name]).toBe(roundTimeFromSize({ activeParams: 494e6, pending: 16, steps: c.steps, batchSize: c.batchSize }));
    }
    expect(table.roundTime!.seconds.custom).toBe(roundTimeFromSize({ activeParams: 494e6, pending: 16, steps: 10, batchSize: 2 }));
    expect(table.roundTime!.seconds.careful).toBeLessThan(table.roundTime!.seconds.aggressive);
    const half = withRoundTimes(describePresets({ ...shape, activeParams: 247e6, totalParams: 247e6 }), { steps: 10, batchSize: 2 }, 16);
    expect(half.roundTime!.seconds.custom).toBeCloseTo(table.roundTime!.seconds.custom / 2, 6);
  });
});
