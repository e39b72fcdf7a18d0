// The GGUF container (ggml docs/gguf.md, version 3): little-endian; header "GGUF", version u32, tensor count u64,
// key/value count u64; the key/values (string key, u32 value type, value); the tensor infos (name, n_dims u32,
// dims u64 fastest-first, ggml type u32, data offset u64 relative to the data section); padding to the alignment;
// the data section, each tensor starting at a multiple of the alignment (general.alignment, default 32).
// Tensors are streamed to disk one at a time, so a model never needs to be in memory twice.
import { writeAll, writeFileAtomic } from '../../fs-atomic.ts';
import { GGML_TYPES, quantize, typeBytes } from './quant.ts';
import { GgufError } from './errors.ts';

// The container's error lives in errors.ts, below both this file and quant.ts; it is exported here too, with the
// container's other names.
export { GgufError };

export const GGUF_MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
export const GGUF_VERSION = 3;
export const GGUF_ALIGNMENT = 32;

// gguf-py constants.py GGUFValueType.
const VT = { u8: 0, i8: 1, u16: 2, i16: 3, u32: 4, i32: 5, f32: 6, bool: 7, str: 8, arr: 9, u64: 10, i64: 11, f64: 12 } as const;

/** The ggml types this writer emits (ids and block sizes in quant.ts). */
export type GgmlType = 'F32' | 'F16' | 'Q8_0' | 'Q4_0' | 'Q4_K';

/** llama_ftype (llama.h): general.file_type. */
export const FILE_TYPE = { ALL_F32: 0, MOSTLY_F16: 1, MOSTLY_Q4_0: 2, MOSTLY_Q8_0: 7, MOSTLY_Q4_K_S: 14 } as const;

export type GgufValue =
  | { type: 'u32'; value: number }
  | { type: 'i32'; value: number }
  | { type: 'u64'; value: number }
  | { type: 'f32'; value: number }
  | { type: 'bool'; value: boolean }
  | { type: 'str'; value: string }
  | { type: 'str[]'; value: readonly string[] }
  | { type: 'i32[]'; value: readonly number[] | Int32Array }
  | { type: 'f32[]'; value: readonly number[] | Float32Array };

export const u32 = (value: number): GgufValue => ({ type: 'u32', value });
export const f32 = (value: number): GgufValue => ({ type: 'f32', value });
export const str = (value: string): GgufValue => ({ type: 'str', value });
export const bool = (value: boolean): GgufValue => ({ type: 'bool', value });

export interface GgufTensor {
  name: string;
  /** numpy / HF order (slowest-first); the file stores it reversed. */
  shape: readonly number[];
  type: GgmlType;
  /** Called once, when the tensor's turn comes, for its values in row-major order. */
  data: () => Float32Array;
}

/** A growable little-endian byte buffer for the header. */
class Bytes {
  private buf = Buffer.alloc(1 << 16);
  length = 0;
  private ensure(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = Buffer.alloc(size);
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
  u32(v: number): void {
    this.ensure(4);
    this.buf.writeUInt32LE(v, this.length);
    this.length += 4;
  }
  i32(v: number): void {
    this.ensure(4);
    this.buf.writeInt32LE(v, this.length);
    this.length += 4;
  }
  u64(v: number): void {
    this.ensure(8);
    this.buf.writeBigUInt64LE(BigInt(v), this.length);
    this.length += 8;
  }
  f32(v: number): void {
    this.ensure(4);
    this.buf.writeFloatLE(v, this.length);
    this.length += 4;
  }
  u8(v: number): void {
    this.ensure(1);
    this.buf[this.length++] = v;
  }
  str(s: string): void {
    const n = Buffer.byteLength(s, 'utf8');
    this.u64(n);
    this.ensure(n);
    this.buf.write(s, this.length, 'utf8');
    this.length += n;
  }
  pad(alignment: number): void {
    const n = (alignment - (this.length % alignment)) % alignment;
    this.ensure(n);
    this.buf.fill(0, this.length, this.length + n);
    this.length += n;
  }
  bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

function writeValue(b: Bytes, key: string, v: GgufValue): void {
  const int = (x: number, lo: number, hi: number): void => {
    if (!Number.isInteger(x) || x < lo || x > hi) throw new GgufError(`metadata ${key}: ${x} is not a valid ${v.type}`);
  };
  switch (v.type) {
    case 'u32':
      int(v.value, 0, 0xffffffff);
      b.u32(VT.u32);
      b.u32(v.value);
      return;
    case 'i32':
      int(v.value, -0x80000000, 0x7fffffff);
      b.u32(VT.i32);
      b.i32(v.value);
      return;
    case 'u64':
      int(v.value, 0, Number.MAX_SAFE_INTEGER);
      b.u32(VT.u64);
      b.u64(v.value);
      return;
    case 'f32':
      if (!Number.isFinite(v.value)) throw new GgufError(`metadata ${key}: ${v.value} is not finite`);
      b.u32(VT.f32);
      b.f32(v.value);
      return;
    case 'bool':
      b.u32(VT.bool);
      b.u8(v.value ? 1 : 0);
      return;
    case 'str':
      b.u32(VT.str);
      b.str(v.value);
      return;
    case 'str[]':
      b.u32(VT.arr);
      b.u32(VT.str);
      b.u64(v.value.length);
      for (const s of v.value) b.str(s);
      return;
    case 'i32[]':
      b.u32(VT.arr);
      b.u32(VT.i32);
      b.u64(v.value.length);
      for (const x of v.value) {
        int(x, -0x80000000, 0x7fffffff);
        b.i32(x);
      }
      return;
    case 'f32[]':
      b.u32(VT.arr);
      b.u32(VT.f32);
      b.u64(v.value.length);
      for (const x of v.value) b.f32(x);
      return;
  }
}

function encode(t: GgufTensor, data: Float32Array, path: string): Uint8Array {
  let n = 1;
  for (const d of t.shape) n *= d;
  if (data.length !== n) throw new GgufError(`tensor ${t.name}: shape [${t.shape.join(', ')}] needs ${n} values, got ${data.length}`, path);
  for (let i = 0; i < data.length; i++) {
    if (!Number.isFinite(data[i]!)) throw new GgufError(`tensor ${t.name} holds a non-finite value at flat index ${i}`, path, { tensor: t.name });
  }
  return quantize(t.type, data);
}

export interface WriteProgress {
  tensor: string;
  index: number;
  count: number;
  bytesWritten: number;
  totalBytes: number;
}

/**
 * Write a GGUF file: staged under a temporary name and renamed, so a failure never leaves a half-written file under
 * the final one. Keys keep their insertion order; tensors are written in the given order.
 */
/** ggml.h: a tensor name is a char[GGML_MAX_NAME], NUL included. */
export const GGML_MAX_NAME = 64;

export function writeGguf(
  path: string,
  metadata: ReadonlyMap<string, GgufValue>,
  tensors: readonly GgufTensor[],
  onProgress?: (p: WriteProgress) => void,
): { bytes: number } {
  const names = new Set<string>();
  for (const t of tensors) {
    if (names.has(t.name)) throw new GgufError(`tensor ${t.name} appears twice`, path);
    names.add(t.name);
    // ggml/src/gguf.cpp (gguf_init_from_file_impl) refuses `name.length() >= GGML_MAX_NAME` (64): the name and its
    // NUL must fit ggml_tensor's char name[64].
    const bytes = Buffer.byteLength(t.name);
    if (bytes >= GGML_MAX_NAME) throw new GgufError(`tensor name ${t.name} is ${bytes} bytes; ggml allows at most ${GGML_MAX_NAME - 1} (GGML_MAX_NAME ${GGML_MAX_NAME} with its NUL)`, path);
    if (t.shape.length < 1 || t.shape.length > 4) throw new GgufError(`tensor ${t.name} has ${t.shape.length} dims (1 to 4)`, path);
    // Blocks run along a row (ne[0], the last numpy dim).
    const block = GGML_TYPES[t.type].block;
    if (t.shape.at(-1)! % block !== 0) throw new GgufError(`tensor ${t.name}: rows of ${t.shape.at(-1)} are not a whole number of ${t.type} blocks of ${block}`, path);
  }
  const h = new Bytes();
  h.u32(GGUF_MAGIC);
  h.u32(GGUF_VERSION);
  h.u64(tensors.length);
  h.u64(metadata.size);
  for (const [k, v] of metadata) {
    h.str(k);
    writeValue(h, k, v);
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    h.str(t.name);
    h.u32(t.shape.length);
    for (let i = t.shape.length - 1; i >= 0; i--) h.u64(t.shape[i]!); // fastest-first
    h.u32(GGML_TYPES[t.type].id);
    h.u64(offset);
    offsets.push(offset);
    offset += typeBytes(t.type, t.shape.reduce((a, d) => a * d, 1));
    offset += (GGUF_ALIGNMENT - (offset % GGUF_ALIGNMENT)) % GGUF_ALIGNMENT;
  }
  h.pad(GGUF_ALIGNMENT);
  const headerBytes = h.length;
  const totalBytes = headerBytes + offset;

  writeFileAtomic(path, (fd) => {
    writeAll(fd, h.bytes());
    let written = headerBytes;
    const zeros = new Uint8Array(GGUF_ALIGNMENT);
    tensors.forEach((t, i) => {
      const bytes = encode(t, t.data(), path);
      writeAll(fd, bytes);
      written += bytes.length;
      const pad = (GGUF_ALIGNMENT - (bytes.length % GGUF_ALIGNMENT)) % GGUF_ALIGNMENT;
      if (pad > 0) writeAll(fd, zeros.subarray(0, pad));
      written += pad;
      onProgress?.({ tensor: t.name, index: i, count: tensors.length, bytesWritten: written, totalBytes });
    });
    if (written !== totalBytes) throw new GgufError(`wrote ${written} bytes, planned ${totalBytes}`, path);
  });
  return { bytes: totalBytes };
}

