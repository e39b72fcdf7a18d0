// ggml's block formats against ggml itself: fixtures/ggml-quants-ref.json holds what ggml's C reference
// quantizers wrote for 512 fixed values (gaussian blocks, outliers, an all-positive block, a zero sub-block, mixed
// scales) and what its dequantizers read back (fixtures/ggml-quants-ref.c says how it was built). Our dequantizer
// must give ggml's floats bit for bit from ggml's bytes, for every type we read; our quantizers must write ggml's
// bytes for the types we write. Hand-built blocks check each layout from its definition (ggml-common.h), element by
// element, independently of the loops in quant.ts.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { f32ToF16 } from '../safetensors.ts';
import { dequantize, quantize, toBlockQuant, typeBytes } from './quant.ts';
import { dequantize as dequantizeBlocks } from '../../../common/engine/quant.ts';
import type { GgmlTypeName } from './quant.ts';

const ref = JSON.parse(readFileSync(path.join(import.meta.dirname, 'fixtures', 'ggml-quants-ref.json'), 'utf8')) as Record<string, unknown>;
const hex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s, 'hex'));
const f32s = (s: string): Float32Array => new Float32Array(hex(s).buffer);
const input = f32s(ref['input'] as string);
const cases = (['Q8_0', 'Q4_0', 'Q4_1', 'Q4_K', 'Q5_K', 'Q6_K'] as const).map((t) => {
  const c = ref[t] as { bytes: string; output: string };
  return { t, bytes: hex(c.bytes), output: f32s(c.output) };
});

/** Index of the first difference in bits (−1 when equal), so a failure names the element. */
function firstBitDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  return ua.findIndex((v, i) => v !== ub[i]);
}

describe('dequantize: ggml bytes → ggml floats, bit for bit', () => {
  it.each(cases)('$t', ({ t, bytes, output }) => {
    expect(bytes.length).toBe(typeBytes(t, 512));
    const y = dequantize(t, bytes, 512);
    expect(firstBitDiff(y, output)).toBe(-1);
    // The fixture is a real quantization of the input: close to it, and not all zero.
    let err = 0;
    for (let i = 0; i < 512; i++) err = Math.max(err, Math.abs(y[i]! - input[i]!));
    expect(err).toBeLessThan(t === 'Q8_0' ? 0.01 : 0.2);
    expect(y.some((v) => v !== 0)).toBe(true);
  });
});

describe('quantize: our reference quantizers write ggml bytes', () => {
  it.each(cases.filter((c) => ['Q8_0', 'Q4_0', 'Q4_K'].includes(c.t)))('$t', ({ t, bytes }) => {
    const ours = quantize(t as GgmlTypeName, input);
    const at = ours.findIndex((b, i) => b !== bytes[i]);
    expect({ at, len: ours.length }).toEqual({ at: -1, len: bytes.length });
  });

  it('round trips: F16 and F32 exactly at representable values; an all-zero input stays zero in every type', () => {
    const v = Float32Array.from([0, 1, -2.5, 65504, 2 ** -24, -0.1]);
    expect(dequantize('F32', quantize('F32', v), 6)).toEqual(v);
    expect(Array.from(dequantize('F16', quantize('F16', v), 6))).toEqual([0, 1, -2.5, 65504, 2 ** -24, Math.fround(-0.0999755859375)]);
    for (const t of ['Q8_0', 'Q4_0', 'Q4_K'] as const) expect(dequantize(t, quantize(t, new Float32Array(256)), 256).every((x) => x === 0)).toBe(true);
  });
});

// Hand-built blocks: each expected value is written from the layout's definition for that one element.
describe('layouts from their definitions', () => {
  const f16 = (x: number): [number, number] => {
    const h = f32ToF16(x);
    return [h & 0xff, h >> 8];
  };

  it('BF16 is the top half of an f32; F16 is IEEE half', () => {
    const bf = Uint8Array.from([0x80, 0x3f, 0x40, 0xc0]); // 1.0, -3.0
    expect(Array.from(dequantize('BF16', bf, 2))).toEqual([1, -3]);
    expect(Array.from(dequantize('F16', Uint8Array.from([0x00, 0x3c, 0x00, 0xc2]), 2))).toEqual([1, -3]);
  });

  it('Q8_0: d · q', () => {
    const b = new Uint8Array(34);
    b.set(f16(0.5), 0);
    for (let j = 0; j < 32; j++) b[2 + j] = (j * 8 - 128) & 0xff;
    const y = dequantize('Q8_0', b, 32);
    for (let j = 0; j < 32; j++) expect(y[j]).toBe(0.5 * (j * 8 - 128));
  });

  it('Q4_0 and Q4_1: low nibbles are the first 16 values, high nibbles the last 16', () => {
    const b = new Uint8Array(18);
    b.set(f16(0.25), 0);
    for (let j = 0; j < 16; j++) b[2 + j] = j | ((15 - j) << 4);
    const y = dequantize('Q4_0', b, 32);
    for (let j = 0; j < 16; j++) {
      expect(y[j]).toBe((j - 8) * 0.25);
      expect(y[j + 16]).toBe((15 - j - 8) * 0.25);
    }
    const c = new Uint8Array(20);
    c.set(f16(0.5), 0);
    c.set(f16(-3), 2);
    c.set(b.subarray(2), 4);
    const z = dequantize('Q4_1', c, 32);
    for (let j = 0; j < 16; j++) expect([z[j], z[j + 16]]).toEqual([j * 0.5 - 3, (15 - j) * 0.5 - 3]);
  });

  // Q4_K/Q5_K scales: 8 six-bit scales sc[s] and mins m[s] in 12 bytes: bytes 0-3 hold sc[0..3] (low 6 bits) and
  // the top 2 bits of sc[4..7]; bytes 4-7 hold m[0..3] and the top 2 bits of m[4..7]; bytes 8-11 hold the low 4 bits
  // of sc[4..7] (low nibble) and m[4..7] (high nibble).
  const sc = [1, 17, 33, 63, 5, 40, 62, 18];
  const mn = [0, 9, 63, 21, 48, 3, 30, 61];
  function packScales(): Uint8Array {
    const s = new Uint8Array(12);
    for (let i = 0; i < 4; i++) {
      s[i] = sc[i]! | ((sc[i + 4]! >> 4) << 6);
      s[i + 4] = mn[i]! | ((mn[i + 4]! >> 4) << 6);
      s[i + 8] = (sc[i + 4]! & 15) | ((mn[i + 4]! & 15) << 4);
    }
    return s;
  }
  // Element k of a 256 block: sub-block s = k/32; the 64-value chunk c = k/64 keeps its 32 bytes of nibbles, the
  // first sub-block of the chunk in the low nibbles. Q5_K's fifth bit of element k is bit s of qh[k % 32].
  const nibble = (k: number): number => (k * 7 + 3) % 16;
  const fifth = (k: number): number => ((k * 5) >> 2) & 1;

  it.each([['Q4_K'], ['Q5_K']] as const)('%s: d · sc[s] · q − dmin · m[s], 6-bit packed scales and mins', (t) => {
    const five = t === 'Q5_K';
    const b = new Uint8Array(five ? 176 : 144);
    const d = 0.01, dmin = 0.003;
    b.set(f16(d), 0);
    b.set(f16(dmin), 2);
    b.set(packScales(), 4);
    const qs = five ? 48 : 16;
    for (let k = 0; k < 256; k++) {
      const s = k >> 5, c = k >> 6, l = k & 31;
      b[qs + 32 * c + l]! |= nibble(k) << (s % 2 === 0 ? 0 : 4);
      if (five) b[16 + l]! |= fifth(k) << s;
    }
    const y = dequantize(t, b, 256);
    const D = Math.fround(f32ToF16ToF32(d)), M = Math.fround(f32ToF16ToF32(dmin));
    for (let k = 0; k < 256; k++) {
      const s = k >> 5;
      const q = nibble(k) + (five ? 16 * fifth(k) : 0);
      expect([k, y[k]]).toEqual([k, Math.fround(Math.fround(Math.fround(D * sc[s]!) * q) - Math.fround(M * mn[s]!))]);
    }
  });

  it('Q6_K: d · scale[i] · (q − 32), q from 4 low bits in ql and 2 high bits in qh; d stored last', () => {
    const b = new Uint8Array(210);
    const scales = Array.from({ length: 16 }, (_, i) => (i * 13) % 64 - 32);
    for (let i = 0; i < 16; i++) b[192 + i] = scales[i]! & 0xff;
    b.set(f16(0.02), 208);
    const q6 = (k: number): number => (k * 11 + 5) % 64;
    // Element k: half h = k/128, within it quarter g = (k%128)/32 and l = k%32. Low 4 bits: ql[64h + l + 32(g&1)],
    // low nibble for g < 2; high 2 bits: bits 2g..2g+1 of qh[32h + l]; scale index 8h + l/16 + 2g.
    for (let k = 0; k < 256; k++) {
      const h = k >> 7, g = (k & 127) >> 5, l = k & 31;
      b[64 * h + l + 32 * (g & 1)]! |= (q6(k) & 15) << (g < 2 ? 0 : 4);
      b[128 + 32 * h + l]! |= (q6(k) >> 4) << (2 * g);
    }
    const y = dequantize('Q6_K', b, 256);
    const D = f32ToF16ToF32(0.02);
    for (let k = 0; k < 256; k++) {
      const h = k >> 7, g = (k & 127) >> 5, l = k & 31;
      expect([k, y[k]]).toEqual([k, Math.fround(Math.fround(D * scales[8 * h + (l >> 4) + 2 * g]!) * (q6(k) - 32))]);
    }
  });

  it('refuses a byte count that does not match the values, and a partial block', () => {
    expect(() => dequantize('Q4_K', new Uint8Array(143), 256)).toThrow(/256 Q4_K values need 144 bytes, got 143/);
    expect(() => dequantize('Q8_0', new Uint8Array(34), 31)).toThrow(/not a whole number of Q8_0 blocks of 32/);
    expect(() => quantize('Q4_K', new Float32Array(128))).toThrow(/Q4_K needs a multiple of 256/);
  });
});

function f32ToF16ToF32(x: number): number {
  return dequantize('F16', Uint8Array.from([f32ToF16(x) & 0xff, f32ToF16(x) >> 8]), 1)[0]!;
}

describe('toBlockQuant: GGUF blocks kept quantized in MatMulNBits blocks', () => {
  const rows = 3;
  const cols = 512;
  const rnd = (seed: number): (() => number) => {
    let x = seed;
    return () => ((x = (x * 1103515245 + 12345) >>> 0) / 2 ** 32);
  };
  const check = (t: GgmlTypeName, bytes: Uint8Array): void => {
    const want = dequantize(t, bytes, rows * cols);
    const q = toBlockQuant(t, bytes, rows, cols)!;
    const got = dequantizeBlocks(q);
    let err = 0;
    let mag = 0;
    for (let i = 0; i < want.length; i++) {
      err = Math.max(err, Math.abs(got[i]! - want[i]!));
      mag = Math.max(mag, Math.abs(want[i]!));
    }
    expect(mag).toBeGreaterThan(0);
    expect(err / mag, t).toBeLessThan(1e-6);
  };

  it('Q8_0, Q4_0 and Q4_K from our quantizers dequantize to what ggml reads', () => {
    const r = rnd(1);
    const x = Float32Array.from({ length: rows * cols }, () => (r() - 0.5) * 0.2);
    for (const t of ['Q8_0', 'Q4_0', 'Q4_K'] as const) check(t, quantize(t, x));
  });

  it('Q4_1 (hand-built blocks, one with d = 0) and a Q4_K super-block whose scales are all 0', () => {
    const r = rnd(2);
    const b = new Uint8Array(typeBytes('Q4_1', rows * cols));
    const dv = new DataView(b.buffer);
    for (let i = 0; i < b.length / 20; i++) {
      dv.setUint16(20 * i, i === 5 ? 0 : f32ToF16(r() * 0.01), true);
      dv.setUint16(20 * i + 2, f32ToF16(-r() * 0.05), true);
      for (let j = 0; j < 16; j++) b[20 * i + 4 + j] = Math.floor(r() * 256);
    }
    check('Q4_1', b);
    const k = quantize('Q4_K', Float32Array.from({ length: rows * cols }, () => r() - 0.5));
    k.fill(0, 4, 16); // the first super-block's 6-bit scales and mins: 0 → every value of it is 0
    new DataView(k.buffer).setUint16(2, f32ToF16(0.5), true); // dmin, so that the mins could matter
    check('Q4_K', k);
    expect(toBlockQuant('Q6_K', new Uint8Array(typeBytes('Q6_K', 256)), 1, 256)).toBeNull();
  });
});
