// The lm_head over the vocabulary in tiles, with a running log-sum-exp (the online softmax of Milakov & Gimelshein
// 2018, as flash attention uses it): no [C, V] value exists, only one tile's [C, n] logits at a time.
//   C = tokens in the chunk, H = hidden, V = vocab, n = rows of one tile of the lm_head
// Per chunk, over tiles W_p [n, H] of the lm_head [V, H] in row order, with x [C, H] the head's (rounded) input:
//   z_p = x·W_pᵀ                                   [C, n]
//   M_p = max(M_{p−1}, rowmax z_p)                  [C, 1]
//   s_p = s_{p−1}·e^{M_{p−1}−M_p} + Σ_j e^{z_p−M_p}   [C, 1]
//   A_p = A_{p−1}·e^{M_{p−1}−M_p} + e^{z_p−M_p}·W_p    [C, H]   (only for the gradient)
// then log p(target) = x·W[target] − M − log s, and ∂log p/∂x = W[target] − A/s (softmax(z)·W without the softmax).
// W[target] rows come in as an input ('lm_head.rows' [C, H]: the driver copies or dequantizes them), so no one-hot
// over V is needed. Each tile's work waits for the previous tile's (`after`), because ORT would otherwise schedule
// every tile's product first, as it reads only graph inputs, and hold all of them.
import type { Graph, Tensor } from './ir.ts';
import type { FloatDType } from './composites.ts';
import * as op from './ops.ts';
import { type QuantSpec, after, dequantPart, matmulPart, quantInputs } from './quant.ts';

/** One tile of the lm_head: its product with x, and itself as a float [n, H] (computed once `dep` exists). */
export interface HeadTile {
  logits(x: Tensor): Tensor; // [C, n]
  weight(dep: Tensor): Tensor; // [n, H]
}

/** How the head graph tiles the vocabulary (families' head(); null: one [C, V] product, for the autodiff's reference). */
export interface HeadTiling {
  /** Values per f32 tile (HEAD_TILE_VALUES); a quantized head's tiles are its MatMulNBits parts. */
  tileValues?: number;
}

/** Rows per f32 tile: a few MiB of weight and [C, n] logits, large enough that each Gemm still runs at full speed. */
export const HEAD_TILE_VALUES = 1 << 22;

/** Row ranges of the f32 lm_head's tiles, at most `values` values each. */
export function headTileRanges(rows: number, cols: number, values = HEAD_TILE_VALUES): [number, number][] {
  const step = Math.max(1, Math.floor(values / cols));
  const out: [number, number][] = [];
  for (let r0 = 0; r0 < rows; r0 += step) out.push([r0, Math.min(rows, r0 + step)]);
  return out;
}

/** Input name of tile k of an f32 lm_head (the driver feeds views of the [V, H] buffer, not copies). */
export const headTileName = (k: number): string => `lm_head.tile${k}`;

/**
 * The lm_head's tiles as graph inputs: a quantized head keeps its parts (quant.ts quantParts, QUANT_CHUNK_VALUES
 * each; the same '<lm_head>.qweight.k' inputs), an f32 one is fed as row tiles of `tileValues` values.
 */
export function headTiles(g: Graph, dtype: FloatDType, V: number, H: number, quant: QuantSpec | null, tileValues = HEAD_TILE_VALUES): HeadTile[] {
  if (quant !== null) {
    return quantInputs(g, 'lm_head', V, H, quant).parts.map((p) => ({
      logits: (x) => matmulPart(x, quant, p, H),
      weight: (dep) => dequantPart(quant, { ...p, scales: after(p.scales, dep) }, H),
    }));
  }
  return headTileRanges(V, H, tileValues).map(([r0, r1], k) => {
    const w = g.input(headTileName(k), dtype, [r1 - r0, H]); // [n, H]
    return { logits: (x) => op.gemm(x, w, { transB: true }), weight: () => w };
  });
}

/**
 * log p of each target and, with `withGrad`, ∂log p/∂x, over the tiles of the lm_head. x [C, H] is the head's input,
 * targetRows [C, H] the lm_head's row of each target. Returns logp [C] and dx [C, H] (or null).
 */
export function tiledLogprobs(x: Tensor, tiles: readonly HeadTile[], targetRows: Tensor, withGrad: boolean): { logp: Tensor; dx: Tensor | null } {
  const C = x.shape[0]!;
  let m: Tensor | undefined; // [C, 1] running max
  let s: Tensor | undefined; // [C, 1] running Σ e^{z−m}
  let a: Tensor | undefined; // [C, H] running Σ e^{z−m}·W
  for (const t of tiles) {
    const z = t.logits(m === undefined ? x : after(x, withGrad ? a! : s!)); // [C, n]
    const mNew = m === undefined ? op.reduceMax(z, [1], true) : op.max(m, op.reduceMax(z, [1], true)); // [C, 1]
    const e = op.exp(op.sub(z, mNew)); // [C, n]
    const es = op.reduceSum(e, [1], true); // [C, 1]
    if (m === undefined) {
      s = es;
      if (withGrad) a = op.gemm(e, t.weight(e)); // [C, H]
    } else {
      const r = op.exp(op.sub(m, mNew)); // [C, 1], ≤ 1
      s = op.add(op.mul(s!, r), es);
      if (withGrad) a = op.gemm(e, t.weight(e), {}, op.mul(a!, r)); // [C, H]
    }
    m = mNew;
  }
  const zt = op.reduceSum(op.mul(x, targetRows), [1], true); // [C, 1], the target's logit
  const logp = op.reshape(op.sub(zt, op.add(m!, op.log(s!))), [C]); // [C]
  return { logp, dx: withGrad ? op.sub(targetRows, op.div(a!, s!)) : null };
}
