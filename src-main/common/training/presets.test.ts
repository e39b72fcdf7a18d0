import { describe, expect, it } from 'vitest';
import { BadInputError } from '../errors.ts';
import { describePresets, KL_BUDGETS, lrForSize, presetConfig, resolveTrainingConfig, sizeBucket, TrainingConfigSchema } from './presets.ts';

const dense = (n: number) => ({ activeParams: n, totalParams: n, moe: false });

describe('presets', () => {
  it('follow the table: β, steps, band per preset; β halved and rank +8 for MoE; rank 8 for the largest bucket', () => {
    const b = presetConfig('balanced', dense(0.5e9));
    expect([b.beta, b.steps, b.bandLow, b.bandHigh, b.rank]).toEqual([0.001, 32, 0.994, 1.002, 16]);
    const c = presetConfig('careful', dense(7e9));
    expect([c.beta, c.steps, c.bandLow, c.bandHigh, c.lr]).toEqual([0.002, 24, 0.996, 1.001, 2.5e-6]);
    const a = presetConfig('aggressive', dense(70e9));
    expect([a.beta, a.steps, a.bandLow, a.bandHigh, a.rank]).toEqual([0.0005, 48, 0.992, 1.004, 8]);
    const moe = presetConfig('balanced', { activeParams: 3e9, totalParams: 30e9, moe: true });
    expect(moe.beta).toBe(0.0005);
    expect(moe.rank).toBe(24);
    expect(moe.lr).toBeGreaterThan(presetConfig('balanced', dense(3e9)).lr);
    for (const p of [b, c, a, moe]) expect(TrainingConfigSchema.safeParse(p).success).toBe(true);
  });

  it('LR grows as models shrink, and aggressive > balanced > careful', () => {
    const lrs = [1e6, 0.05e9, 1e9, 5e9, 20e9, 70e9].map((n) => presetConfig('balanced', dense(n)).lr);
    for (let i = 1; i < lrs.length; i++) expect(lrs[i]).toBeLessThan(lrs[i - 1]!);
    const s = dense(1e9);
    expect(presetConfig('careful', s).lr).toBeLessThan(presetConfig('balanced', s).lr);
    expect(presetConfig('balanced', s).lr).toBeLessThan(presetConfig('aggressive', s).lr);
    expect(sizeBucket(0.5e9)).toBe('small');
    expect(sizeBucket(60e3)).toBe('tiny');
    // One size rule for every model (lrForSize): LR ∝ 1/√N, anchored at 5e-6 for 7B; a generated model gets it too.
    expect(presetConfig('balanced', dense(7e9)).lr).toBeCloseTo(5e-6, 18);
    expect(presetConfig('balanced', dense(7e9 / 100)).lr).toBeCloseTo(5e-5, 18);
    expect(presetConfig('balanced', dense(60e3)).lr).toBe(lrForSize(60e3));
    // One trust region and one KL budget for every size: MIS-PO's clip and ReinforceClaw's bands.
    for (const n of [60e3, 0.05e9, 0.5e9, 7e9, 70e9]) {
      const c = presetConfig('balanced', dense(n));
      expect([c.ratioClipLow, c.ratioClipHigh, c.bandLow, c.bandHigh, c.batchSize, c.epochs, c.heldoutFraction]).toEqual([0.5, 2, 0.994, 1.002, 8, 1, 0.2]);
      expect(c.klBudget).toBe(KL_BUDGETS.balanced);
    }
    // The per-round budgets are the per-token k3 at MIS-PO's clip edges (by hand: k3(ρ) = ρ − 1 − ln ρ).
    expect(KL_BUDGETS.balanced).toBeCloseTo(0.5 - 1 + Math.LN2, 12); // 0.193, at ρ = 0.5
    expect(KL_BUDGETS.aggressive).toBeCloseTo(2 - 1 - Math.LN2, 12); // 0.307, at ρ = 2
    expect(KL_BUDGETS.careful).toBeCloseTo(Math.SQRT1_2 - 1 + Math.LN2 / 2, 12); // 0.054, at ρ = 1/√2
    expect(presetConfig('careful', dense(1e9)).klBudget).toBeLessThan(presetConfig('balanced', dense(1e9)).klBudget);
    expect(() => sizeBucket(0)).toThrow(BadInputError);
  });

  it('custom overrides balanced field by field, and a bad value names its field', () => {
    const c = resolveTrainingConfig('custom', dense(1e9), { lr: 1e-3, steps: 5 });
    expect(c.lr).toBe(1e-3);
    expect(c.steps).toBe(5);
    expect(c.beta).toBe(presetConfig('balanced', dense(1e9)).beta);
    expect(() => resolveTrainingConfig('custom', dense(1e9), { steps: 0 })).toThrow(/training\.custom\.steps/);
    expect(() => resolveTrainingConfig('custom', dense(1e9), { nope: 1 })).toThrow(BadInputError);
    expect(() => resolveTrainingConfig('custom', dense(1e9), { bandLow: 0.999, bandHigh: 1 })).not.toThrow();
    expect(() => resolveTrainingConfig('custom', dense(1e9), { bandLow: 1, bandHigh: 1 })).toThrow(/bandLow/);
    expect(resolveTrainingConfig('custom', dense(1e9), { heldoutFraction: 0.15, steps: 5 }).heldoutFraction).toBe(0.15);
    expect(() => resolveTrainingConfig('custom', dense(1e9), { heldoutFraction: 0.9 })).toThrow(/training\.custom\.heldoutFraction/);
  });

  it('describePresets lists every field with help text', () => {
    const d = describePresets(dense(1e9));
    expect(d.fields.map((f) => f.key).sort()).toEqual(Object.keys(TrainingConfigSchema.shape).sort());
    for (const f of d.fields) expect(f.help.length).toBeGreaterThan(10);
    expect(d.presets.balanced).toEqual(presetConfig('balanced', dense(1e9)));
  });
});
