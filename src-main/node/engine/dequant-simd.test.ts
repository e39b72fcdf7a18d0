import { describe, expect, it } from 'vitest';
import { dequantizeRows, quantWeight, quantize, type QuantSpec } from '../../common/engine/quant.ts';
import { Rng } from '../../common/engine/rng.ts';
import { SimdDequantizer, simdDequantAvailable } from './dequant-simd.ts';

const bits = (a: Float32Array): Uint32Array => new Uint32Array(a.buffer, a.byteOffset, a.length);

describe('SimdDequantizer', () => {
  it('runs here (Node 24 has WebAssembly SIMD)', () => {
    expect(simdDequantAvailable()).toBe(true);
  });

  const specs: QuantSpec[] = [
    { bits: 4, zeroPoints: false },
    { bits: 4, zeroPoints: true },
    { bits: 8, zeroPoints: false },
  ];
  for (const spec of specs) {
    it(`gives dequantizeRows' bits for ${spec.bits}-bit weights${spec.zeroPoints ? ' with float zero points' : ''}`, () => {
      const rng = new Rng(spec.bits * 10 + (spec.zeroPoints ? 1 : 0));
      const [rows, cols] = [37, 96];
      const w = new Float32Array(rows * cols).map(() => rng.normal() * 0.05);
      const q = quantize(w, rows, cols, spec);
      const d = new SimdDequantizer(rows * cols + 8, (rows * cols) / 32); // alloc rounds each buffer up to 4 values
      d.alloc(5); // the buffer below does not start at the arena's first byte
      const out = d.alloc(rows * cols);
      expect(bits(d.dequantize(q, out))).toEqual(bits(dequantizeRows(q, 0, rows)));
    });
  }

  it('rounds odd scales and zero points as the JS loop does (tiny, huge, negative, every nibble)', () => {
    const [rows, cols] = [2, 64];
    const nb = (rows * cols) / 32;
    const qweight = new Uint8Array((rows * cols) / 2).map((_, i) => (i * 37 + 11) & 255);
    const scales = Float32Array.of(1e-40, -3.3e38, 0.1, -7.25);
    const zeroPoints = Float32Array.of(7.3, -0.6, 15.99, 1e-3);
    const q = quantWeight({ bits: 4, zeroPoints: true }, rows, cols, qweight, scales, zeroPoints);
    const d = new SimdDequantizer(rows * cols, nb);
    const out = d.alloc(rows * cols);
    expect(bits(d.dequantize(q, out))).toEqual(bits(dequantizeRows(q, 0, rows)));
  });

  it('refuses a buffer outside its arena, a weight larger than its staging, and an arena past 4 GiB', () => {
    const q = quantize(new Float32Array(64).fill(0.5), 2, 32, { bits: 4, zeroPoints: false });
    const d = new SimdDequantizer(64, 2);
    expect(() => d.dequantize(q, new Float32Array(64))).toThrow(/arena buffer/);
    d.alloc(64);
    expect(() => d.alloc(1)).toThrow(/arena full/);
    const big = quantize(new Float32Array(128).fill(0.5), 4, 32, { bits: 4, zeroPoints: false });
    const small = new SimdDequantizer(128, 2);
    expect(() => small.dequantize(big, small.alloc(128))).toThrow(/staging/);
    expect(() => new SimdDequantizer(2 ** 30, 1)).toThrow(/4 GiB/);
  });
});
