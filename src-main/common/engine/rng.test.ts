import { describe, expect, it } from 'vitest';
import { Rng } from './rng.ts';

describe('Rng', () => {
  it('is deterministic per seed and differs between seeds', () => {
    const a = new Rng(42);
    const b = new Rng(42);
    const c = new Rng(43);
    const xs = Array.from({ length: 8 }, () => a.nextU32());
    expect(Array.from({ length: 8 }, () => b.nextU32())).toEqual(xs);
    expect(Array.from({ length: 8 }, () => c.nextU32())).not.toEqual(xs);
  });

  it('draws uniform in [0,1) and normals with the right moments', () => {
    const r = new Rng(7);
    const n = 200_000;
    let s = 0;
    let min = 1;
    let max = 0;
    for (let i = 0; i < n; i++) {
      const u = r.uniform();
      s += u;
      min = Math.min(min, u);
      max = Math.max(max, u);
    }
    expect(min).toBeGreaterThanOrEqual(0);
    expect(max).toBeLessThan(1);
    expect(s / n).toBeCloseTo(0.5, 2);
    const z = r.fillNormal(new Float64Array(n), 2, 1);
    const mean = z.reduce((x, y) => x + y, 0) / n;
    const variance = z.reduce((x, y) => x + (y - mean) ** 2, 0) / n;
    expect(mean).toBeCloseTo(1, 1);
    expect(Math.sqrt(variance)).toBeCloseTo(2, 1);
  });

  it('forks streams by label, independent of draws already made', () => {
    const a = new Rng(5);
    const b = new Rng(5);
    b.uniform();
    expect(a.fork('w').uniform()).toBe(b.fork('w').uniform());
    expect(a.fork('w').uniform()).not.toBe(a.fork('v').uniform());
    expect(new Rng(6).fork('w').uniform()).not.toBe(a.fork('w').uniform());
  });

  it('rejects a non-integer seed', () => {
    expect(() => new Rng(1.5)).toThrow(RangeError);
  });
});
