// ggml's block formats: the byte layouts (ggml-common.h block_*), the dequantizers (ggml-quants.c dequantize_row_*)
// and the reference quantizers (quantize_row_*_ref), in TypeScript. Every float step is rounded to float32
// (Math.fround) where ggml computes in float, so a dequantized weight equals ggml's C (compiled without FMA
// contraction; with it, a Q4_1/K-quant value may differ in the last bit).
// A row of n values is n / blockSize blocks of typeSize bytes each; quantized types need rows (ne[0]) that are a
// multiple of the block size.
//   Q8_0  34 B / 32:  f16 d, i8 qs[32]                      x = d·q
//   Q4_0  18 B / 32:  f16 d, u8 qs[16]                      x = d·(nibble − 8); low nibbles are x[0..15], high x[16..31]
//   Q4_1  20 B / 32:  f16 d, f16 m, u8 qs[16]               x = d·nibble + m
//   Q4_K 144 B / 256: f16 d, f16 dmin, u8 scales[12], u8 qs[128]: 8 sub-blocks of 32 with 6-bit scale sc and min m
//                     (get_scale_min_k4), x = d·sc·nibble − dmin·m
//   Q5_K 176 B / 256: as Q4_K plus u8 qh[32], the fifth bit of each value
//   Q6_K 210 B / 256: u8 ql[128], u8 qh[64], i8 scales[16], f16 d: 16 sub-blocks of 16, x = d·scale·(q − 32)
import { f16ToF32, f32ToF16 } from '../safetensors.ts';
import { GgufError } from './errors.ts';
import { type QuantWeight, quantWeight } from '../../../common/engine/quant.ts';

/** ggml_type ids (ggml.h enum ggml_type) with block size and bytes per block (ggml.c type_traits). */
export const GGML_TYPES = {
  F32: { id: 0, block: 1, bytes: 4 },
  F16: { id: 1, block: 1, bytes: 2 },
  Q4_0: { id: 2, block: 32, bytes: 18 },
  Q4_1: { id: 3, block: 32, bytes: 20 },
  Q8_0: { id: 8, block: 32, bytes: 34 },
  Q4_K: { id: 12, block: 256, bytes: 144 },
  Q5_K: { id: 13, block: 256, bytes: 176 },
  Q6_K: { id: 14, block: 256, bytes: 210 },
  BF16: { id: 30, block: 1, bytes: 2 },
} as const;
export type GgmlTypeName = keyof typeof GGML_TYPES;

/** Names of the ggml types we do not read, for the error that names one (ggml.h). */
const OTHER_TYPE_NAMES: Record<number, string> = {
  6: 'Q5_0', 7: 'Q5_1', 9: 'Q8_1', 10: 'Q2_K', 11: 'Q3_K', 15: 'Q8_K', 16: 'IQ2_XXS', 17: 'IQ2_XS', 18: 'IQ3_XXS',
  19: 'IQ1_S', 20: 'IQ4_NL', 21: 'IQ3_S', 22: 'IQ2_S', 23: 'IQ4_XS', 24: 'I8', 25: 'I16', 26: 'I32', 27: 'I64', 28: 'F64',
  29: 'IQ1_M', 34: 'TQ1_0', 35: 'TQ2_0', 39: 'MXFP4',
};

const BY_ID = new Map<number, GgmlTypeName>(Object.entries(GGML_TYPES).map(([k, v]) => [v.id, k as GgmlTypeName]));

export function ggmlTypeById(id: number): GgmlTypeName | null {
  return BY_ID.get(id) ?? null;
}

/** A ggml type id's name, also for types we do not read ("type 99" when ggml has none). */
export function ggmlTypeLabel(id: number): string {
  return BY_ID.get(id) ?? OTHER_TYPE_NAMES[id] ?? `type ${id}`;
}

/** Bytes of `n` values (n a multiple of the block size). */
export function typeBytes(t: GgmlTypeName, n: number): number {
  const { block, bytes } = GGML_TYPES[t];
  return (n / block) * bytes;
}

const fr = Math.fround;
const h2f = f16ToF32;

/** ggml-cpu's bf16 → f32: the 16 bits are the top half of the float. */
function bf16ToF32(bits: number): number {
  scratchU32[0] = bits << 16;
  return scratchF32[0]!;
}
const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

/** `n` values of type `t` from `src` (exactly typeBytes(t, n) bytes), as float32, the way ggml dequantizes them. */
export function dequantize(t: GgmlTypeName, src: Uint8Array, n: number): Float32Array {
  const { block } = GGML_TYPES[t];
  if (n % block !== 0) throw new GgufError(`${n} values are not a whole number of ${t} blocks of ${block}`);
  if (src.length !== typeBytes(t, n)) throw new GgufError(`${n} ${t} values need ${typeBytes(t, n)} bytes, got ${src.length}`);
  const y = new Float32Array(n);
  const dv = new DataView(src.buffer, src.byteOffset, src.byteLength);
  const u16 = (o: number): number => dv.getUint16(o, true);
  const nb = n / block;
  switch (t) {
    case 'F32':
      for (let i = 0; i < n; i++) y[i] = dv.getFloat32(4 * i, true);
      return y;
    case 'F16':
      for (let i = 0; i < n; i++) y[i] = h2f(u16(2 * i));
      return y;
    case 'BF16':
      for (let i = 0; i < n; i++) y[i] = bf16ToF32(u16(2 * i));
      return y;
    case 'Q8_0':
      for (let i = 0; i < nb; i++) {
        const o = 34 * i;
        const d = h2f(u16(o));
        for (let j = 0; j < 32; j++) y[32 * i + j] = d * dv.getInt8(o + 2 + j);
      }
      return y;
    case 'Q4_0':
      for (let i = 0; i < nb; i++) {
        const o = 18 * i;
        const d = h2f(u16(o));
        for (let j = 0; j < 16; j++) {
          const q = src[o + 2 + j]!;
          y[32 * i + j] = ((q & 0xf) - 8) * d;
          y[32 * i + j + 16] = ((q >> 4) - 8) * d;
        }
      }
      return y;
    case 'Q4_1':
      for (let i = 0; i < nb; i++) {
        const o = 20 * i;
        const d = h2f(u16(o));
        const m = h2f(u16(o + 2));
        for (let j = 0; j < 16; j++) {
          const q = src[o + 4 + j]!;
          y[32 * i + j] = fr((q & 0xf) * d) + m;
          y[32 * i + j + 16] = fr((q >> 4) * d) + m;
        }
      }
      return y;
    case 'Q4_K':
    case 'Q5_K': {
      const five = t === 'Q5_K';
      const size = five ? 176 : 144;
      for (let i = 0; i < nb; i++) {
        const o = size * i;
        const d = h2f(u16(o));
        const min = h2f(u16(o + 2));
        const qh = o + 16; // Q5_K only
        let ql = o + (five ? 48 : 16);
        let yi = 256 * i;
        for (let j = 0, is = 0, u1 = 1, u2 = 2; j < 256; j += 64, is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
          scaleMinK4Into(is, src, o + 4);
          const d1 = fr(d * k4Scale), m1 = fr(min * k4Min);
          scaleMinK4Into(is + 1, src, o + 4);
          const d2 = fr(d * k4Scale), m2 = fr(min * k4Min);
          for (let l = 0; l < 32; l++) y[yi++] = fr(d1 * ((src[ql + l]! & 0xf) + (five && src[qh + l]! & u1 ? 16 : 0))) - m1;
          for (let l = 0; l < 32; l++) y[yi++] = fr(d2 * ((src[ql + l]! >> 4) + (five && src[qh + l]! & u2 ? 16 : 0))) - m2;
        }
      }
      return y;
    }
    case 'Q6_K':
      for (let i = 0; i < nb; i++) {
        const o = 210 * i;
        const d = h2f(u16(o + 208));
        for (let h = 0; h < 2; h++) {
          const ql = o + 64 * h, qh = o + 128 + 32 * h, sc = o + 192 + 8 * h, yo = 256 * i + 128 * h;
          for (let l = 0; l < 32; l++) {
            const is = l >> 4;
            const a = src[ql + l]!, b = src[ql + l + 32]!, c = src[qh + l]!;
            const q1 = ((a & 0xf) | (((c >> 0) & 3) << 4)) - 32;
            const q2 = ((b & 0xf) | (((c >> 2) & 3) << 4)) - 32;
            const q3 = ((a >> 4) | (((c >> 4) & 3) << 4)) - 32;
            const q4 = ((b >> 4) | (((c >> 6) & 3) << 4)) - 32;
            // y = d * sc[is] * q: float times int, then times int, each rounded.
            y[yo + l] = fr(d * dv.getInt8(sc + is)) * q1;
            y[yo + l + 32] = fr(d * dv.getInt8(sc + is + 2)) * q2;
            y[yo + l + 64] = fr(d * dv.getInt8(sc + is + 4)) * q3;
            y[yo + l + 96] = fr(d * dv.getInt8(sc + is + 6)) * q4;
          }
        }
      }
      return y;
  }
}

/** ggml-quants.c nearest_int: round to nearest, ties to even, through the float32 magic-number addition. */
function nearestInt(x: number): number {
  return fr(fr(x) + 12582912) - 12582912;
}

/** C roundf: half away from zero. */
const roundf = (x: number): number => (x < 0 ? -Math.round(-x) : Math.round(x));

/** quantize_row_q8_0_ref. */
export function quantizeQ8_0(x: Float32Array): Uint8Array {
  if (x.length % 32 !== 0) throw new GgufError(`Q8_0 needs a multiple of 32 values, got ${x.length}`);
  const out = new Uint8Array(typeBytes('Q8_0', x.length));
  const dv = new DataView(out.buffer);
  for (let i = 0; i < x.length / 32; i++) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[32 * i + j]!));
    const d = fr(amax / 127);
    const id = d !== 0 ? fr(1 / d) : 0;
    dv.setUint16(34 * i, f32ToF16(d), true);
    for (let j = 0; j < 32; j++) dv.setInt8(34 * i + 2 + j, roundf(fr(x[32 * i + j]! * id)));
  }
  return out;
}

/** quantize_row_q4_0_ref: d = max / −8, where max is the value of largest magnitude (its sign kept). */
export function quantizeQ4_0(x: Float32Array): Uint8Array {
  if (x.length % 32 !== 0) throw new GgufError(`Q4_0 needs a multiple of 32 values, got ${x.length}`);
  const out = new Uint8Array(typeBytes('Q4_0', x.length));
  const dv = new DataView(out.buffer);
  for (let i = 0; i < x.length / 32; i++) {
    let amax = 0, max = 0;
    for (let j = 0; j < 32; j++) {
      const v = x[32 * i + j]!;
      if (amax < Math.abs(v)) {
        amax = Math.abs(v);
        max = v;
      }
    }
    const d = fr(max / -8);
    const id = d !== 0 ? fr(1 / d) : 0;
    dv.setUint16(18 * i, f32ToF16(d), true);
    for (let j = 0; j < 16; j++) {
      // (int8_t)(x·id + 8.5f), capped at 15: truncation toward zero of a non-negative number.
      const q0 = Math.min(15, Math.trunc(fr(fr(x[32 * i + j]! * id) + 8.5)));
      const q1 = Math.min(15, Math.trunc(fr(fr(x[32 * i + 16 + j]! * id) + 8.5)));
      out[18 * i + 2 + j] = q0 | (q1 << 4);
    }
  }
  return out;
}

// Scratch for makeQkx2Quants' two results (a tuple per sub-block would allocate millions of arrays).
let qkxScale = 0;
let qkxMin = 0;

/**
 * make_qkx2_quants(n, nmax, x, weights, L, &min, Laux, rmin, rdelta, nstep, use_mad = false) on x[xo..xo+n): a scale
 * and min for levels 0..nmax, refined by weighted least squares over nstep + 1 trial scales; levels go to L[lo..].
 * Sets qkxScale and qkxMin (ggml's −min).
 */
function makeQkx2Quants(n: number, nmax: number, x: Float32Array, xo: number, w: Float32Array, L: Uint8Array, lo: number, Laux: Uint8Array, rmin: number, rdelta: number, nstep: number): void {
  let min = x[xo]!, max = x[xo]!;
  let sumW = w[0]!, sumX = fr(sumW * x[xo]!);
  for (let i = 1; i < n; i++) {
    const xi = x[xo + i]!;
    if (xi < min) min = xi;
    if (xi > max) max = xi;
    sumW = fr(sumW + w[i]!);
    sumX = fr(sumX + fr(w[i]! * xi));
  }
  if (min > 0) min = 0;
  if (max === min) {
    L.fill(0, lo, lo + n);
    qkxScale = 0;
    qkxMin = -min;
    return;
  }
  let iscale = fr(nmax / fr(max - min));
  let scale = fr(1 / iscale);
  let bestError = 0;
  for (let i = 0; i < n; i++) {
    const l = Math.max(0, Math.min(nmax, nearestInt(fr(iscale * fr(x[xo + i]! - min)))));
    L[lo + i] = l;
    const diff = fr(fr(fr(scale * l) + min) - x[xo + i]!);
    bestError = fr(bestError + fr(w[i]! * fr(diff * diff)));
  }
  for (let is = 0; is <= nstep; is++) {
    // (max − min) with min as refined so far, as ggml's loop has it.
    iscale = fr(fr(fr(rmin + fr(rdelta * is)) + nmax) / fr(max - min));
    let sumL = 0, sumL2 = 0, sumXL = 0;
    for (let i = 0; i < n; i++) {
      const l = Math.max(0, Math.min(nmax, nearestInt(fr(iscale * fr(x[xo + i]! - min)))));
      Laux[i] = l;
      const wl = fr(w[i]! * l);
      sumL = fr(sumL + wl);
      sumL2 = fr(sumL2 + fr(wl * l));
      sumXL = fr(sumXL + fr(wl * x[xo + i]!));
    }
    const D = fr(fr(sumW * sumL2) - fr(sumL * sumL));
    if (D > 0) {
      let thisScale = fr(fr(fr(sumW * sumXL) - fr(sumX * sumL)) / D);
      let thisMin = fr(fr(fr(sumL2 * sumX) - fr(sumL * sumXL)) / D);
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = fr(sumXL / sumL2);
      }
      let curError = 0;
      for (let i = 0; i < n; i++) {
        const diff = fr(fr(fr(thisScale * Laux[i]!) + thisMin) - x[xo + i]!);
        curError = fr(curError + fr(w[i]! * fr(diff * diff)));
      }
      if (curError < bestError) {
        for (let i = 0; i < n; i++) L[lo + i] = Laux[i]!;
        bestError = curError;
        scale = thisScale;
        min = thisMin;
      }
    }
  }
  qkxScale = scale;
  qkxMin = -min;
}

/** get_scale_min_k4 into scratch (the quantizer's hot loop). */
let k4Scale = 0;
let k4Min = 0;
function scaleMinK4Into(j: number, q: Uint8Array, o: number): void {
  if (j < 4) {
    k4Scale = q[o + j]! & 63;
    k4Min = q[o + j + 4]! & 63;
  } else {
    k4Scale = (q[o + j + 4]! & 0xf) | ((q[o + j - 4]! >> 6) << 4);
    k4Min = (q[o + j + 4]! >> 4) | ((q[o + j]! >> 6) << 4);
  }
}

/**
 * quantize_row_q4_K_ref: per 32-value sub-block a scale and min by make_qkx2_quants (weights av_x + |x|), the
 * eight scales and mins quantized to 6 bits against the block's largest (d = max_scale/63, dmin = max_min/63),
 * then every value re-quantized against its sub-block's 6-bit scale and min.
 */
export function quantizeQ4_K(x: Float32Array): Uint8Array {
  if (x.length % 256 !== 0) throw new GgufError(`Q4_K needs a multiple of 256 values, got ${x.length}`);
  const out = new Uint8Array(typeBytes('Q4_K', x.length));
  const dv = new DataView(out.buffer);
  const L = new Uint8Array(256);
  const Laux = new Uint8Array(32);
  const weights = new Float32Array(32);
  const scales = new Float32Array(8);
  const mins = new Float32Array(8);
  for (let i = 0; i < x.length / 256; i++) {
    const o = 144 * i;
    const xb = 256 * i;
    let maxScale = 0, maxMin = 0;
    for (let j = 0; j < 8; j++) {
      const xo = xb + 32 * j;
      let sumX2 = 0;
      for (let l = 0; l < 32; l++) sumX2 = fr(sumX2 + fr(x[xo + l]! * x[xo + l]!));
      const avX = fr(Math.sqrt(fr(sumX2 / 32)));
      for (let l = 0; l < 32; l++) weights[l] = fr(avX + Math.abs(x[xo + l]!));
      makeQkx2Quants(32, 15, x, xo, weights, L, 32 * j, Laux, -1, 0.1, 20);
      scales[j] = qkxScale;
      mins[j] = qkxMin;
      if (scales[j]! > maxScale) maxScale = scales[j]!;
      if (mins[j]! > maxMin) maxMin = mins[j]!;
    }
    const invScale = maxScale > 0 ? fr(63 / maxScale) : 0;
    const invMin = maxMin > 0 ? fr(63 / maxMin) : 0;
    const sc = o + 4;
    for (let j = 0; j < 8; j++) {
      // uint8_t ls = nearest_int(…): the int is truncated to 8 bits, then capped at 63.
      const ls = Math.min(63, nearestInt(fr(invScale * scales[j]!)) & 0xff);
      const lm = Math.min(63, nearestInt(fr(invMin * mins[j]!)) & 0xff);
      if (j < 4) {
        out[sc + j] = ls;
        out[sc + j + 4] = lm;
      } else {
        out[sc + j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
        out[sc + j - 4]! |= (ls >> 4) << 6;
        out[sc + j]! |= (lm >> 4) << 6;
      }
    }
    const dBits = f32ToF16(fr(maxScale / 63));
    const dminBits = f32ToF16(fr(maxMin / 63));
    dv.setUint16(o, dBits, true);
    dv.setUint16(o + 2, dminBits, true);
    const d0 = h2f(dBits), dmin0 = h2f(dminBits);
    for (let j = 0; j < 8; j++) {
      scaleMinK4Into(j, out, sc);
      const d = fr(d0 * k4Scale);
      if (d === 0) continue;
      const dm = fr(dmin0 * k4Min);
      for (let ii = 0; ii < 32; ii++) L[32 * j + ii] = Math.max(0, Math.min(15, nearestInt(fr(fr(x[xb + 32 * j + ii]! + dm) / d))));
    }
    for (let j = 0, q = o + 16; j < 256; j += 64, q += 32) {
      for (let l = 0; l < 32; l++) out[q + l] = L[j + l]! | (L[j + l + 32]! << 4);
    }
  }
  return out;
}

/** Values → bytes of type t (F32, F16, Q8_0, Q4_0, Q4_K: the types we write). */
export function quantize(t: GgmlTypeName, x: Float32Array): Uint8Array {
  switch (t) {
    case 'F32':
      return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
    case 'F16': {
      const h = new Uint16Array(x.length);
      for (let i = 0; i < x.length; i++) h[i] = f32ToF16(x[i]!);
      return new Uint8Array(h.buffer);
    }
    case 'Q8_0':
      return quantizeQ8_0(x);
    case 'Q4_0':
      return quantizeQ4_0(x);
    case 'Q4_K':
      return quantizeQ4_K(x);
    default:
      throw new GgufError(`writing ${t} is not supported (we write F32, F16, Q8_0, Q4_0 and Q4_K)`);
  }
}

/** The GGUF types the engine keeps block-quantized (common/engine/quant.ts) instead of dequantizing to f32. */
export const KEPT_QUANT_TYPES: readonly GgmlTypeName[] = ['Q4_0', 'Q4_1', 'Q4_K', 'Q8_0'];

/**
 * A [rows, cols] tensor of type t as MatMulNBits blocks of 32, exactly the values ggml dequantizes to up to float
 * rounding, or null for a type that is not kept (KEPT_QUANT_TYPES): then read it as f32.
 *   Q8_0: scale d, q + 128 with the default zero point 128.     Q4_0: scale d, the nibble, default zero point 8.
 *   Q4_1: x = d·q + m       → scale d, zero point −m/d.
 *   Q4_K: x = d·sc·q − dmin·m per sub-block of 32 (6-bit sc, m) → scale d·sc, zero point dmin·m / (d·sc).
 * ggml packs a block's 32 nibbles as low = x[0..15], high = x[16..31] (Q4_K: low = sub-block 2k, high = 2k+1, per
 * 64 values); MatMulNBits as low = x[2j], high = x[2j+1], so the nibbles are repacked. A block whose scale is 0
 * (every value equal, −m) is stored as q = 0, scale 1, zero point m′ so that it still dequantizes exactly.
 */
export function toBlockQuant(t: GgmlTypeName, src: Uint8Array, rows: number, cols: number): QuantWeight | null {
  if (!KEPT_QUANT_TYPES.includes(t)) return null;
  const n = rows * cols;
  if (src.length !== typeBytes(t, n)) throw new GgufError(`${n} ${t} values need ${typeBytes(t, n)} bytes, got ${src.length}`);
  if (cols % GGML_TYPES[t].block !== 0) throw new GgufError(`${t} rows of ${cols} values are not whole blocks`);
  const nb = n / 32;
  const dv = new DataView(src.buffer, src.byteOffset, src.byteLength);
  const u16 = (o: number): number => dv.getUint16(o, true);
  const scales = new Float32Array(nb);
  if (t === 'Q8_0') {
    const q = new Uint8Array(n);
    for (let i = 0; i < nb; i++) {
      scales[i] = h2f(u16(34 * i));
      for (let j = 0; j < 32; j++) q[32 * i + j] = dv.getInt8(34 * i + 2 + j) + 128;
    }
    return quantWeight({ bits: 8, zeroPoints: false }, rows, cols, q, scales, null);
  }
  const q = new Uint8Array(n / 2);
  const zp = t === 'Q4_0' ? null : new Float32Array(nb);
  // Block b's 32 nibbles, value j from byte `at(j)` and nibble `hiOf(j)`, into MatMulNBits order.
  const pack = (b: number, byteOf: (j: number) => number, hiOf: (j: number) => boolean, zero: boolean): void => {
    for (let j = 0; j < 16; j++) {
      const v = (k: number): number => (zero ? 0 : hiOf(k) ? src[byteOf(k)]! >> 4 : src[byteOf(k)]! & 0xf);
      q[16 * b + j] = v(2 * j) | (v(2 * j + 1) << 4);
    }
  };
  const setBlock = (b: number, d: number, negMin: number, byteOf: (j: number) => number, hiOf: (j: number) => boolean): void => {
    // x = d·q − negMin
    if (d === 0) {
      scales[b] = 1;
      zp![b] = negMin;
      pack(b, byteOf, hiOf, true);
    } else {
      scales[b] = d;
      zp![b] = negMin / d;
      pack(b, byteOf, hiOf, false);
    }
  };
  for (let i = 0; i < (t === 'Q4_K' ? n / 256 : nb); i++) {
    if (t === 'Q4_0') {
      const o = 18 * i;
      scales[i] = h2f(u16(o));
      pack(i, (j) => o + 2 + (j & 15), (j) => j >= 16, false);
    } else if (t === 'Q4_1') {
      const o = 20 * i;
      setBlock(i, h2f(u16(o)), -h2f(u16(o + 2)), (j) => o + 4 + (j & 15), (j) => j >= 16);
    } else {
      const o = 144 * i;
      const d = h2f(u16(o));
      const dmin = h2f(u16(o + 2));
      for (let s = 0; s < 8; s++) {
        scaleMinK4Into(s, src, o + 4);
        const ql = o + 16 + 32 * (s >> 1);
        setBlock(8 * i + s, fr(d * k4Scale), fr(dmin * k4Min), (j) => ql + j, () => (s & 1) === 1);
      }
    }
  }
  return quantWeight({ bits: 4, zeroPoints: zp !== null }, rows, cols, q, scales, zp);
}
