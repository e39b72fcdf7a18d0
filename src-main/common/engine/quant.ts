// Block-quantized frozen weights: a linear weight W [N, K] (HF [out, in]) kept as 4- or 8-bit integers with one f32
// scale (and optionally one f32 zero point) per block of 32 values along K, in onnxruntime's com.microsoft.MatMulNBits
// layout (onnxruntime/docs/ContribOperators.md#com.microsoft.MatMulNBits):
//   qweight     uint8 [N, K/32, 32·bits/8]  row-major; for 4 bits, value 2j in the low nibble of byte j, 2j+1 in the high
//   scales      f32   [N·K/32]
//   zero_points f32   [N·K/32], or absent: then 2^(bits−1) (8 for int4, 128 for int8)
//   W[n, k] = scales[n, b] · (q[n, k] − zero[n, b]),  b = k / 32
// ORT 1.30's CPU kernel runs float zero points for 4 bits only, so int8 weights are symmetric (GGUF's Q8_0 is).
//
// Forward X·Wᵀ is MatMulNBits (weights fed as inputs are not prepacked, so ORT dequantizes B into f32 and runs its
// SGEMM: accuracy_level does not apply and the product equals f32 Gemm on the dequantized weights to float
// rounding). Its gradient rule gives X only a cotangent, dX = dY·W, with W dequantized in the graph by primitives
// (Cast, Floor, Sub, Mul); the packed weights, scales and zero points get none. A large weight is fed in parts of
// rows (quantParts), one MatMulNBits each, so at most QUANT_CHUNK_VALUES f32 values of it exist at once.
import { type Graph, GraphError, type Tensor, fmtShape } from './ir.ts';
import * as op from './ops.ts';
import { registerOp } from './ops.ts';

export const QUANT_BLOCK = 32;
/** Largest dequantized chunk of a weight in the backward, in values (32 MiB of f32). */
export const QUANT_CHUNK_VALUES = 1 << 23;

export type QuantBits = 4 | 8;

/** How a weight is quantized: what the graph's inputs look like. */
export interface QuantSpec {
  bits: QuantBits;
  /** f32 zero points per block (Q4_1, Q4_K); absent means the symmetric default 2^(bits−1). */
  zeroPoints: boolean;
}

/** A quantized weight in memory. */
export interface QuantWeight {
  readonly kind: 'quant';
  readonly spec: QuantSpec;
  /** N: output features (rows of HF's [out, in]). */
  readonly rows: number;
  /** K: input features; a multiple of 32. */
  readonly cols: number;
  readonly qweight: Uint8Array;
  readonly scales: Float32Array;
  readonly zeroPoints: Float32Array | null;
}

export class QuantError extends GraphError {
  constructor(message: string, detail?: unknown) {
    super('quant', message, detail);
    this.name = 'QuantError';
  }
}

export const isQuant = (w: unknown): w is QuantWeight => typeof w === 'object' && w !== null && (w as { kind?: unknown }).kind === 'quant';

const bytesPerBlock = (bits: QuantBits): number => (QUANT_BLOCK * bits) / 8;

/** Checks sizes and builds the record (the GGUF loader and the quantizers below make them). */
export function quantWeight(spec: QuantSpec, rows: number, cols: number, qweight: Uint8Array, scales: Float32Array, zeroPoints: Float32Array | null): QuantWeight {
  if (cols % QUANT_BLOCK !== 0) throw new QuantError(`a quantized weight needs a multiple of ${QUANT_BLOCK} columns, got [${rows}, ${cols}]`);
  if (spec.bits !== 4 && spec.bits !== 8) throw new QuantError(`bits must be 4 or 8, got ${String(spec.bits)}`);
  if (spec.bits === 8 && spec.zeroPoints) throw new QuantError('int8 weights are symmetric: ORT 1.30 has no float zero points for 8 bits');
  const nb = (rows * cols) / QUANT_BLOCK;
  if (qweight.length !== nb * bytesPerBlock(spec.bits)) throw new QuantError(`qweight has ${qweight.length} bytes, expected ${nb * bytesPerBlock(spec.bits)} for [${rows}, ${cols}] at ${spec.bits} bits`);
  if (scales.length !== nb) throw new QuantError(`scales has ${scales.length} values, expected ${nb}`);
  if ((zeroPoints !== null) !== spec.zeroPoints || (zeroPoints !== null && zeroPoints.length !== nb)) throw new QuantError(`zero points do not match the spec (${nb} expected)`);
  return { kind: 'quant', spec, rows, cols, qweight, scales, zeroPoints };
}

/** Bytes a quantized weight holds. */
export const quantBytes = (w: QuantWeight): number => w.qweight.byteLength + w.scales.byteLength + (w.zeroPoints?.byteLength ?? 0);

/**
 * Rows [r0, r1) of W as f32, into out (row-major [r1 − r0, K]) at offset 0. Each value is f32(f32(q − zero) · scale),
 * as ORT's MatMulNBits dequantizes (with an integer zero point, q − zero is exact and this is the one rounding of the
 * product). A float zero point (Q4_K, Q4_1) needs that order to the bit: a base under matchLlamaCpp rounds the
 * activations to 8 bits, so an ulp in a weight can move a rounding step, and s·(q − z) rounded once differs from ORT in
 * half of a Q4_K weight's last bits (a tiny Qwen2 Q4_K's log-probs then moved by 0.03, gguf/load.test.ts).
 */
export function dequantizeRows(w: QuantWeight, r0: number, r1: number, out: Float32Array = new Float32Array((r1 - r0) * w.cols)): Float32Array {
  const K = w.cols;
  const nbRow = K / QUANT_BLOCK;
  const bpb = bytesPerBlock(w.spec.bits);
  const dflt = w.spec.bits === 4 ? 8 : 128;
  const lut = new Float32Array(16); // one block's 16 int4 values
  for (let r = r0; r < r1; r++) {
    for (let b = 0; b < nbRow; b++) {
      const blk = r * nbRow + b;
      const s = w.scales[blk]!;
      const z = w.zeroPoints === null ? dflt : w.zeroPoints[blk]!;
      const src = blk * bpb;
      const dst = (r - r0) * K + b * QUANT_BLOCK;
      // Two f32 values multiply exactly in a double; the store rounds once, as an f32 multiply does.
      if (w.spec.bits === 8) for (let j = 0; j < QUANT_BLOCK; j++) out[dst + j] = s * Math.fround(w.qweight[src + j]! - z);
      else {
        for (let i = 0; i < 16; i++) lut[i] = s * Math.fround(i - z);
        for (let j = 0; j < bpb; j++) {
          const byte = w.qweight[src + j]!;
          out[dst + 2 * j] = lut[byte & 15]!;
          out[dst + 2 * j + 1] = lut[byte >> 4]!;
        }
      }
    }
  }
  return out;
}

export const dequantize = (w: QuantWeight): Float32Array => dequantizeRows(w, 0, w.rows);

/** W with its rows reordered: row r of the result is row from(r) of w (whole rows of blocks move, so it is exact). */
export function permuteQuantRows(w: QuantWeight, from: (r: number) => number): QuantWeight {
  const nbRow = w.cols / QUANT_BLOCK;
  const rb = nbRow * bytesPerBlock(w.spec.bits);
  const qweight = new Uint8Array(w.qweight.length);
  const scales = new Float32Array(w.scales.length);
  const zeroPoints = w.zeroPoints === null ? null : new Float32Array(w.zeroPoints.length);
  for (let r = 0; r < w.rows; r++) {
    const f = from(r);
    qweight.set(w.qweight.subarray(f * rb, (f + 1) * rb), r * rb);
    scales.set(w.scales.subarray(f * nbRow, (f + 1) * nbRow), r * nbRow);
    zeroPoints?.set(w.zeroPoints!.subarray(f * nbRow, (f + 1) * nbRow), r * nbRow);
  }
  return quantWeight(w.spec, w.rows, w.cols, qweight, scales, zeroPoints);
}

/**
 * A quantizer from f32 (benches, tests, and HF weights trained through the quantized path): per block of 32,
 * symmetric round-to-nearest on the absolute maximum (int8: ±127; int4: −8..7 around 8), or with `zeroPoints`
 * min/max over 0..15 with a float zero point. Not GGUF's quantizers (gguf/quant.ts), which search scales.
 */
export function quantize(values: Float32Array, rows: number, cols: number, spec: QuantSpec): QuantWeight {
  if (values.length !== rows * cols) throw new QuantError(`quantize: ${values.length} values for [${rows}, ${cols}]`);
  const nb = (rows * cols) / QUANT_BLOCK;
  const bpb = bytesPerBlock(spec.bits);
  const qweight = new Uint8Array(nb * bpb);
  const scales = new Float32Array(nb);
  const zeroPoints = spec.zeroPoints ? new Float32Array(nb) : null;
  const q = new Uint8Array(QUANT_BLOCK);
  for (let blk = 0; blk < nb; blk++) {
    const o = blk * QUANT_BLOCK;
    let lo = Infinity;
    let hi = -Infinity;
    for (let j = 0; j < QUANT_BLOCK; j++) {
      lo = Math.min(lo, values[o + j]!);
      hi = Math.max(hi, values[o + j]!);
    }
    if (zeroPoints !== null) {
      const s = hi > lo ? (hi - lo) / 15 : 1;
      const z = -lo / s;
      for (let j = 0; j < QUANT_BLOCK; j++) q[j] = Math.min(15, Math.max(0, Math.round((values[o + j]! - lo) / s)));
      scales[blk] = s;
      zeroPoints[blk] = z;
    } else {
      const amax = Math.max(Math.abs(lo), Math.abs(hi));
      const qmax = spec.bits === 8 ? 127 : 7;
      const zero = spec.bits === 8 ? 128 : 8;
      const s = amax > 0 ? amax / qmax : 1;
      for (let j = 0; j < QUANT_BLOCK; j++) q[j] = Math.min(2 * zero - 1, Math.max(0, Math.round(values[o + j]! / s) + zero));
      scales[blk] = s;
    }
    if (spec.bits === 8) qweight.set(q, blk * bpb);
    else for (let j = 0; j < bpb; j++) qweight[blk * bpb + j] = q[2 * j]! | (q[2 * j + 1]! << 4);
  }
  return quantWeight(spec, rows, cols, qweight, scales, zeroPoints);
}

/**
 * Random symmetric int4 weights drawn directly (the 8B bench: no f32 copy ever exists): uniform nibbles, one scale
 * std / 4.6 for every block (uniform −8..7 has a standard deviation of 4.6), from `next` uniform in [0, 1).
 */
export function randomInt4(rows: number, cols: number, std: number, next: () => number): QuantWeight {
  const nb = (rows * cols) / QUANT_BLOCK;
  const qweight = new Uint8Array(nb * 16);
  // A 32-bit draw gives 4 bytes.
  for (let i = 0; i < qweight.length; i += 4) {
    const r = Math.floor(next() * 2 ** 32);
    qweight[i] = r & 255;
    if (i + 1 < qweight.length) qweight[i + 1] = (r >>> 8) & 255;
    if (i + 2 < qweight.length) qweight[i + 2] = (r >>> 16) & 255;
    if (i + 3 < qweight.length) qweight[i + 3] = r >>> 24;
  }
  return quantWeight({ bits: 4, zeroPoints: false }, rows, cols, qweight, new Float32Array(nb).fill(std / 4.6), null);
}

// --- in a graph -------------------------------------------------------------------------------------------------------

/**
 * The row ranges a weight is fed in: at most QUANT_CHUNK_VALUES values each, so that MatMulNBits (which dequantizes
 * its whole B into an f32 buffer when B is an input, not a prepacked initializer) and the backward's dequantization
 * never hold more than 32 MiB of one weight in f32: an 8B lm_head would otherwise take 2 GiB per call.
 */
export function quantParts(rows: number, cols: number): [number, number][] {
  const step = Math.max(1, Math.floor(QUANT_CHUNK_VALUES / cols));
  const parts: [number, number][] = [];
  for (let r0 = 0; r0 < rows; r0 += step) parts.push([r0, Math.min(rows, r0 + step)]);
  return parts;
}

/** A quantized weight's graph inputs: '<name>.qweight', '<name>.scales', ('<name>.zero_points'); '.k' after each for part k of several. */
export const quantInputNames = (name: string, part: number | null = null): { qweight: string; scales: string; zeroPoints: string } => {
  const k = part === null ? '' : `.${part}`;
  return { qweight: `${name}.qweight${k}`, scales: `${name}.scales${k}`, zeroPoints: `${name}.zero_points${k}` };
};

/** Rows [r0, r1) of a quantized weight as graph inputs. */
export interface QuantPart {
  readonly r0: number;
  readonly r1: number;
  readonly qweight: Tensor; // uint8 [r1 − r0, K/32, 32·bits/8]
  readonly scales: Tensor; // f32 [(r1 − r0)·K/32]
  readonly zeroPoints: Tensor | null; // f32 [(r1 − r0)·K/32]
}

/** A quantized weight [N, K] in a graph: its parts, in row order. */
export interface QuantInputs {
  readonly spec: QuantSpec;
  readonly rows: number;
  readonly cols: number;
  readonly parts: readonly QuantPart[];
}

export function quantInputs(g: Graph, name: string, rows: number, cols: number, spec: QuantSpec): QuantInputs {
  if (cols % QUANT_BLOCK !== 0) throw new QuantError(`${name}: a quantized weight needs a multiple of ${QUANT_BLOCK} columns, got [${rows}, ${cols}]`);
  const nb = cols / QUANT_BLOCK;
  const ranges = quantParts(rows, cols);
  const parts = ranges.map(([r0, r1], k): QuantPart => {
    const n = quantInputNames(name, ranges.length === 1 ? null : k);
    return {
      r0,
      r1,
      qweight: g.input(n.qweight, 'uint8', [r1 - r0, nb, bytesPerBlock(spec.bits)]),
      scales: g.input(n.scales, 'float32', [(r1 - r0) * nb]),
      zeroPoints: spec.zeroPoints ? g.input(n.zeroPoints, 'float32', [(r1 - r0) * nb]) : null,
    };
  });
  return { spec, rows, cols, parts };
}

/** The feeds of a quantized weight named `name` (the names quantInputs declares; parts are views, not copies). */
export function quantFeeds(name: string, w: QuantWeight): Record<string, Uint8Array | Float32Array> {
  const nb = w.cols / QUANT_BLOCK;
  const bpr = nb * bytesPerBlock(w.spec.bits);
  const ranges = quantParts(w.rows, w.cols);
  const f: Record<string, Uint8Array | Float32Array> = {};
  ranges.forEach(([r0, r1], k) => {
    const n = quantInputNames(name, ranges.length === 1 ? null : k);
    f[n.qweight] = w.qweight.subarray(r0 * bpr, r1 * bpr);
    f[n.scales] = w.scales.subarray(r0 * nb, r1 * nb);
    if (w.zeroPoints !== null) f[n.zeroPoints] = w.zeroPoints.subarray(r0 * nb, r1 * nb);
  });
  return f;
}

registerOp('MatMulNBits', {
  infer(inputs, attrs) {
    const [x, qw, sc, zp] = inputs as [Tensor, Tensor, Tensor, Tensor | undefined];
    if (inputs.length !== 3 && inputs.length !== 4) throw new GraphError('MatMulNBits', `takes 3 or 4 inputs, got ${inputs.length}`);
    const K = attrs['K'] as number;
    const N = attrs['N'] as number;
    const bits = attrs['bits'] as QuantBits;
    if (x.dtype !== 'float32') throw new GraphError('MatMulNBits', `activations must be float32 (ORT has no float64 kernel), got ${x.dtype}`);
    if (x.rank !== 2 || x.shape[1] !== K) throw new GraphError('MatMulNBits', `x must be [T, ${K}], got ${fmtShape(x.shape)}`);
    const nb = K / QUANT_BLOCK;
    if (qw.dtype !== 'uint8' || fmtShape(qw.shape) !== fmtShape([N, nb, bytesPerBlock(bits)])) throw new GraphError('MatMulNBits', `qweight must be uint8 [${N}, ${nb}, ${bytesPerBlock(bits)}], got ${qw.dtype}${fmtShape(qw.shape)}`);
    for (const t of zp === undefined ? [sc] : [sc, zp]) {
      if (t.dtype !== 'float32' || fmtShape(t.shape) !== fmtShape([N * nb])) throw new GraphError('MatMulNBits', `scales and zero points must be float32 [${N * nb}], got ${t.dtype}${fmtShape(t.shape)}`);
    }
    return [{ dtype: 'float32', shape: [x.shape[0]!, N] }];
  },
  emit: (node) => ({
    opType: 'MatMulNBits',
    domain: 'com.microsoft',
    inputs: node.inputs.map((_, i) => i),
    attrs: [
      { name: 'K', type: 'int', value: node.attrs['K'] as number },
      { name: 'N', type: 'int', value: node.attrs['N'] as number },
      { name: 'bits', type: 'int', value: node.attrs['bits'] as number },
      { name: 'block_size', type: 'int', value: QUANT_BLOCK },
      { name: 'accuracy_level', type: 'int', value: 0 },
    ],
    prepacked: node.inputs.slice(1).map((_, i) => i + 1),
  }),
  // Y = X·Wᵀ: dX = dY·W; the packed weights, scales and zero points are frozen (no cotangent).
  grad: ({ node, gOut, needs }) => {
    const [, qweight, scales, zp] = node.inputs as [Tensor, Tensor, Tensor, Tensor | undefined];
    const spec: QuantSpec = { bits: node.attrs['bits'] as QuantBits, zeroPoints: zp !== undefined };
    // The dequantization reads only graph inputs, so ORT would schedule every weight's at the start of the backward
    // graph and hold a whole layer in f32 at once; a zero-valued dependency on the cotangent (0 · dY[0, 0]) makes
    // each weight's wait until its Gemm can run.
    const part: QuantPart = { r0: 0, r1: node.attrs['N'] as number, qweight, scales: after(scales, gOut[0]!), zeroPoints: zp ?? null };
    const dx = needs[0] ? op.gemm(gOut[0]!, dequantPart(spec, part, node.attrs['K'] as number)) : null; // [T, K]
    return [dx, null, null, ...(zp === undefined ? [] : [null])];
  },
});

/** `t` + 0 · Σ dep[:, 0]: the same values, computed only once `dep` exists (an ordering edge for ORT's scheduler). */
export function after(t: Tensor, dep: Tensor): Tensor {
  return op.add(t, op.reshape(op.mul(op.reduceSum(op.slice(dep, [0], [1], [1]), [], false), 0), [1]));
}

/** X·Wᵀ for one part: [T, K] → [T, r1 − r0]. */
export function matmulPart(x: Tensor, spec: QuantSpec, p: QuantPart, K: number): Tensor {
  const ins = p.zeroPoints === null ? [x, p.qweight, p.scales] : [x, p.qweight, p.scales, p.zeroPoints];
  return op.apply('MatMulNBits', ins, { K, N: p.r1 - p.r0, bits: spec.bits })[0]!;
}

/** X·Wᵀ for a quantized W: [T, K] → [T, N], one MatMulNBits per part. */
export function matmulNBits(x: Tensor, w: QuantInputs): Tensor {
  const ys = w.parts.map((p) => matmulPart(x, w.spec, p, w.cols));
  return ys.length === 1 ? ys[0]! : op.concat(ys, 1);
}

/** One part of W as f32 [r1 − r0, K], from primitives (Cast, Floor, Sub, Mul). */
export function dequantPart(spec: QuantSpec, p: QuantPart, K: number): Tensor {
  const n = p.r1 - p.r0;
  const nb = K / QUANT_BLOCK;
  const q = op.cast(p.qweight, 'float32'); // [n, nb, bytes]
  let v: Tensor; // [n, nb, 32]
  if (spec.bits === 8) v = q;
  else {
    const hi = op.floor(op.mul(q, 1 / 16)); // [n, nb, 16], exact: q < 256
    const lo = op.sub(q, op.mul(hi, 16)); // [n, nb, 16]
    v = op.reshape(op.concat([op.reshape(lo, [n, nb, 16, 1]), op.reshape(hi, [n, nb, 16, 1])], 3), [n, nb, QUANT_BLOCK]);
  }
  const perBlock = (t: Tensor): Tensor => op.reshape(t, [n, nb, 1]);
  const centred = p.zeroPoints === null ? op.sub(v, spec.bits === 4 ? 8 : 128) : op.sub(v, perBlock(p.zeroPoints));
  return op.reshape(op.mul(centred, perBlock(p.scales)), [n, K]); // [n, K]
}

/**
 * G·W for G [T, N] and a quantized W [N, K]: [T, K], one dequantized part at a time: each part's dequantization
 * waits for the previous part's product, so one part exists in f32 at a time (an 8B lm_head is 63 parts).
 */
export function matmulDequant(g: Tensor, w: QuantInputs): Tensor {
  let acc: Tensor | undefined;
  for (const p of w.parts) {
    const gs = w.parts.length === 1 ? g : op.slice(g, [p.r0], [p.r1], [1]); // [T, n]
    const gated: QuantPart = { ...p, scales: after(p.scales, acc ?? gs) };
    acc = op.gemm(gs, dequantPart(w.spec, gated, w.cols), {}, acc); // [T, K]
  }
  return acc!;
}

/**
 * A frozen linear, y = x·Wᵀ (+ bias): f32 Gemm reading HF's [out, in] in place, or MatMulNBits for a quantized
 * weight. The one place that picks between them.
 */
export function frozenLinear(x: Tensor, w: Tensor | QuantInputs, bias?: Tensor): Tensor {
  if (!('spec' in w)) return op.gemm(x, w, { transB: true }, bias); // [T, out]
  const y = matmulNBits(x, w); // [T, out]
  return bias === undefined ? y : op.add(y, bias);
}
