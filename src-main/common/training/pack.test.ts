// The grouping of a batch into packs (pack.ts) and a pack's mask (composites.ts packedMaskTable). That a pack's
// gradient equals the lone runs' is node/training/pack.test.ts.
import { describe, expect, it } from 'vitest';
import { causalMaskTable, packedMaskTable } from '../engine/composites.ts';
import { packGroups, PACK_MIN_PREFIX } from './pack.ts';

const range = (a: number, n: number): number[] => Array.from({ length: n }, (_, i) => a + i);
/** A cost linear in tokens: packing always pays when allowed. */
const linear = (n: number): number => n;

describe('packedMaskTable', () => {
  it('is causalMaskTable for one segment at positions 0..T−1, with and without a window', () => {
    const T = 9;
    const rows = { positions: Int32Array.from(range(0, T)), segments: new Int32Array(T) };
    for (const w of [null, 3]) expect(Array.from(packedMaskTable(rows, w, 'float64'))).toEqual(Array.from(causalMaskTable(T, w)));
  });

  it('lets a suffix see the prefix and itself, never another suffix or the padding; the window counts positions', () => {
    // Prefix of 3 (positions 0..2), suffix 1 of 2 rows, suffix 2 of 2 rows (both at positions 3..4), one padding row.
    const rows = { positions: Int32Array.from([0, 1, 2, 3, 4, 3, 4, 0]), segments: Int32Array.from([0, 0, 0, 1, 1, 2, 2, -1]) };
    const T = 8;
    const sees = (m: ArrayLike<number>, i: number): number[] => range(0, T).filter((j) => m[i * T + j] === 0);
    const m = packedMaskTable(rows, null, 'float32');
    expect(sees(m, 4)).toEqual([0, 1, 2, 3, 4]);
    expect(sees(m, 6)).toEqual([0, 1, 2, 5, 6]);
    expect(sees(m, 7)).toEqual([0, 1, 2, 7]);
    // Window 3: query at position 4 sees positions 2..4.
    const w = packedMaskTable(rows, 3, 'float32');
    expect(sees(w, 6)).toEqual([2, 5, 6]);
    expect(sees(w, 4)).toEqual([2, 3, 4]);
  });
});

describe('packGroups', () => {
  const P = PACK_MIN_PREFIX + 10;
  const shared = range(1000, P);
  const other = range(5000, P);
  const seq = (prefix: number[], own: number, start = prefix.length + 1): { tokens: number[]; start: number } => ({ tokens: [...prefix, ...range(9000 + own * 50, 20)], start });

  it('packs the sequences sharing a prefix, apart from those sharing another, and leaves the rest alone', () => {
    const batch = [seq(shared, 1), seq(other, 2), seq(range(7000, 40), 3), seq(shared, 4), seq(other, 5), seq(shared, 6)];
    const g = packGroups(batch, { cost: linear });
    expect(g).toEqual([
      { prefix: P, members: [0, 3, 5] },
      { prefix: P, members: [1, 4] },
      { prefix: 0, members: [2] },
    ]);
  });

  it('keeps a pack within span × its longest member, clamps the prefix to the first scored token, and packs nothing at span 0', () => {
    const batch = Array.from({ length: 12 }, (_, i) => seq(shared, i));
    const n = P + 20;
    // Each pack holds P + k·(n − P) ≤ 2n tokens: k ≤ (2n − P)/(n − P).
    const k = Math.floor((2 * n - P) / (n - P));
    const g = packGroups(batch, { cost: linear });
    expect(g.map((x) => x.members.length)).toEqual([k, batch.length - k]);
    expect(k).toBeLessThan(batch.length);
    expect(packGroups(batch, { cost: linear, span: 0 })).toHaveLength(batch.length);
    // The shared run reaches into one member's scored tokens: the prefix stops at its first one.
    const early = [seq(shared, 1, P - 5), seq(shared, 2)];
    expect(packGroups(early, { cost: linear })[0]!.prefix).toBe(P - 5);
  });

  it('does not pack a prefix below PACK_MIN_PREFIX, nor where the estimate says the pack costs more', () => {
    const short = range(1000, PACK_MIN_PREFIX - 1);
    expect(packGroups([seq(short, 1), seq(short, 2)], { cost: linear })).toHaveLength(2);
    // A cost that is all attention (quadratic) with suffixes longer than the prefix: one run of P + 2S costs more
    // than two of P + S.
    const long = (prefix: number[], own: number): { tokens: number[]; start: number } => ({ tokens: [...prefix, ...range(9000 + own * 500, 4 * P)], start: prefix.length });
    expect(packGroups([long(shared, 1), long(shared, 2)], { cost: (n) => n * n })).toHaveLength(2);
    expect(packGroups([long(shared, 1), long(shared, 2)], { cost: linear })).toHaveLength(1);
  });

  it('weighs every pack size: a pair that pads to the next bucket loses, seven in that bucket win', () => {
    // The small LM's agent turns at the balanced preset: a 1700-token prefix, 325-token turns, buckets of 2048.
    const bucketed = (n: number): number => (Math.ceil(n / 2048) * 2048) ** 2;
    const prefix = range(1000, 1700);
    const turns = Array.from({ length: 8 }, (_, i) => ({ tokens: [...prefix, ...range(9000 + 400 * i, 325)], start: 1710 }));
    expect(bucketed(1700 + 2 * 325)).toBeGreaterThan(2 * bucketed(2025));
    expect(packGroups(turns, { cost: bucketed }).map((g) => g.members.length)).toEqual([7, 1]);
  });
});
