import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SafetensorsError, SafetensorsFile, f16ToF32, f32ToBf16, f32ToF16, writeSafetensors } from './safetensors.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'rein-st-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A file with a hand-made header (the reference format, built independently of writeSafetensors). */
function rawFile(name: string, header: unknown, data: Uint8Array, lenOverride?: bigint): string {
  const json = Buffer.from(typeof header === 'string' ? header : JSON.stringify(header));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(lenOverride ?? BigInt(json.length));
  const p = path.join(dir, name);
  writeFileSync(p, Buffer.concat([len, json, data]));
  return p;
}

function expectError(p: string, pattern: RegExp, tensor?: string): void {
  let err: unknown;
  try {
    SafetensorsFile.open(p).close();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(SafetensorsError);
  expect((err as Error).message).toMatch(pattern);
  expect((err as SafetensorsError).path).toBe(p);
  expect((err as SafetensorsError).tensor).toBe(tensor);
}

describe('safetensors', () => {
  it('reads a file laid out by hand: F32, F16, BF16, F64, I64, metadata', () => {
    const f32 = new Float32Array([1.5, -2, 3.25, 0]);
    const f16 = new Uint16Array([0x3c00, 0xc000, 0x7c00, 0x0001]); // 1, -2, inf, smallest subnormal
    const bf16 = new Uint16Array([0x3f80, 0x4049]); // 1, 3.140625
    const f64 = new Float64Array([Math.PI]);
    const i64 = new BigInt64Array([-3n, 5n]);
    const parts = [f32, f16, bf16, f64, i64].map((a) => new Uint8Array(a.buffer));
    let off = 0;
    const span = (n: number) => [off, (off += n)];
    const header = {
      __metadata__: { format: 'pt' },
      a: { dtype: 'F32', shape: [2, 2], data_offsets: span(16) },
      h: { dtype: 'F16', shape: [4], data_offsets: span(8) },
      b: { dtype: 'BF16', shape: [2], data_offsets: span(4) },
      d: { dtype: 'F64', shape: [], data_offsets: span(8) },
      i: { dtype: 'I64', shape: [2], data_offsets: span(16) },
    };
    const p = rawFile('ok.safetensors', header, Buffer.concat(parts));
    const f = SafetensorsFile.open(p);
    expect(f.metadata).toEqual({ format: 'pt' });
    expect(f.names().sort()).toEqual(['a', 'b', 'd', 'h', 'i']);
    expect(f.info('a').shape).toEqual([2, 2]);
    expect([...f.read('a')]).toEqual([1.5, -2, 3.25, 0]);
    expect([...f.read('h')]).toEqual([1, -2, Infinity, 2 ** -24]);
    expect([...f.read('b')]).toEqual([1, 3.140625]);
    expect(f.read('d', { as: 'f64' })[0]).toBe(Math.PI);
    expect(f.read('d')).toBeInstanceOf(Float32Array);
    expect([...f.read('i')]).toEqual([-3, 5]);
    expect(() => f.read('nope')).toThrow(SafetensorsError);
    f.close();
  });

  it('round-trips F32 exactly and F16/BF16 to their precision, with deterministic bytes', () => {
    const data = new Float32Array([0.1, -1e-3, 65504, 1e-8, -0, 3.3]);
    const p1 = path.join(dir, 'w1.safetensors');
    const p2 = path.join(dir, 'w2.safetensors');
    const tensors = { z: { shape: [2, 3], data }, a: { shape: [6], data, dtype: 'F16' as const }, m: { shape: [3, 2], data, dtype: 'BF16' as const } };
    writeSafetensors(p1, tensors);
    writeSafetensors(p2, { m: tensors.m, z: tensors.z, a: tensors.a });
    expect(readFileSync(p1).equals(readFileSync(p2))).toBe(true);
    const headerLen = Number(readFileSync(p1).readBigUInt64LE(0));
    expect(headerLen % 8).toBe(0);
    const f = SafetensorsFile.open(p1);
    expect(f.names()).toEqual(['a', 'm', 'z']);
    expect([...f.read('z')]).toEqual([...data]);
    const h = f.read('a');
    const b = f.read('m');
    for (let i = 0; i < data.length; i++) {
      expect(Math.abs(h[i]! - data[i]!)).toBeLessThanOrEqual(Math.abs(data[i]!) * 2 ** -11 + 2 ** -24);
      expect(Math.abs(b[i]! - data[i]!)).toBeLessThanOrEqual(Math.abs(data[i]!) * 2 ** -8);
    }
    f.close();
  });

  it('round-trips F64 exactly (optimizer moments in a pretraining checkpoint)', () => {
    const data = Float64Array.from([0.1, -1e-300, 1 + 2 ** -52, Math.PI]);
    const p = path.join(dir, 'w64.safetensors');
    writeSafetensors(p, { m: { shape: [2, 2], data, dtype: 'F64' }, s: { shape: [1], data: new Float64Array([0.5]), dtype: 'F32' } });
    const f = SafetensorsFile.open(p);
    expect([...f.read('m', { as: 'f64' })]).toEqual([...data]);
    expect([...f.read('s')]).toEqual([0.5]);
    f.close();
  });

  it('converts half precision with round-to-nearest-even', () => {
    expect(f32ToF16(1 + 2 ** -11)).toBe(0x3c00); // tie rounds to even
    expect(f32ToF16(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(f32ToF16(70000)).toBe(0x7c00);
    expect(f16ToF32(f32ToF16(2 ** -20))).toBe(2 ** -20);
    expect(f32ToBf16(1 + 2 ** -8)).toBe(0x3f80);
    expect(f32ToBf16(1 + 3 * 2 ** -8)).toBe(0x3f82);
    expect(Number.isNaN(f16ToF32(f32ToF16(NaN)))).toBe(true);
  });

  it('refuses to write data that does not match its shape', () => {
    expect(() => writeSafetensors(path.join(dir, 'bad.safetensors'), { x: { shape: [3], data: new Float32Array(2) } })).toThrow(SafetensorsError);
  });

  describe('corrupt files get a SafetensorsError naming the path and tensor', () => {
    const four = new Uint8Array(4);
    it('shorter than the length prefix', () => {
      const p = path.join(dir, 'short.safetensors');
      writeFileSync(p, Buffer.from([1, 2, 3]));
      expectError(p, /shorter than the 8-byte/);
    });
    it('a header length past the end of the file, or absurdly large (no huge allocation)', () => {
      expectError(rawFile('len.safetensors', {}, four, 1000n), /runs past the end/);
      expectError(rawFile('huge.safetensors', {}, four, 2n ** 63n), /exceeds the/);
    });
    it('a header that is not JSON or not an object', () => {
      expectError(rawFile('json.safetensors', '{"a": [', four), /not valid JSON/);
      expectError(rawFile('arr.safetensors', '[1,2]', four), /not a JSON object/);
    });
    it('offsets out of range, reversed or overlapping', () => {
      expectError(rawFile('oob.safetensors', { x: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } }, four), /run past the 4 data bytes/, 'x');
      expectError(rawFile('rev.safetensors', { x: { dtype: 'F32', shape: [0], data_offsets: [4, 0] } }, four), /reversed/, 'x');
      const ov = { x: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, y: { dtype: 'F32', shape: [2], data_offsets: [4, 12] } };
      expectError(rawFile('ov.safetensors', ov, new Uint8Array(12)), /overlaps tensor x/, 'y');
    });
    it('dtype or shape that does not match the byte span', () => {
      expectError(rawFile('sz.safetensors', { x: { dtype: 'F32', shape: [3], data_offsets: [0, 4] } }, four), /needs 12 bytes/, 'x');
      expectError(rawFile('dt.safetensors', { x: { dtype: 'F33', shape: [1], data_offsets: [0, 4] } }, four), /unknown dtype/, 'x');
      expectError(rawFile('sh.safetensors', { x: { dtype: 'F32', shape: [-1], data_offsets: [0, 4] } }, four), /bad shape/, 'x');
      expectError(rawFile('big.safetensors', { x: { dtype: 'F64', shape: [2 ** 40, 2 ** 40], data_offsets: [0, 4] } }, four), /needs/, 'x');
    });
    it('a dtype that cannot be read as float is named at read time', () => {
      const p = rawFile('u8.safetensors', { x: { dtype: 'U8', shape: [4], data_offsets: [0, 4] } }, four);
      const f = SafetensorsFile.open(p);
      expect(() => f.read('x')).toThrow(/dtype U8 cannot be read/);
      f.close();
    });
    it('a missing file', () => {
      expectError(path.join(dir, 'absent.safetensors'), /cannot open/);
    });
  });
});
