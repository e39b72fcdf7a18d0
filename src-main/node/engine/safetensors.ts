// safetensors (huggingface/safetensors, docs "Format"): an 8-byte little-endian u64 header length N, N bytes
// of JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__"?: {string: string}}, then the
// raw little-endian tensor bytes; offsets are relative to the end of the header. The reference
// implementation caps the header at 100 MB and requires the tensors to fill the buffer without overlap.
// Reading is lazy: the header is parsed once, and each tensor is read by its own offsets on request.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { ReinError } from '../../common/errors.ts';
import { writeAll, writeFileAtomic } from '../fs-atomic.ts';

if (endianness() !== 'LE') throw new Error('safetensors IO assumes a little-endian host');

/** A corrupt, truncated or unsupported safetensors file, or a tensor in it. Carries the path and the tensor. */
export class SafetensorsError extends ReinError {
  readonly path: string;
  readonly tensor: string | undefined;
  constructor(path: string, message: string, tensor?: string) {
    super('bad_input', `${path}${tensor === undefined ? '' : ` [${tensor}]`}: ${message}`, { detail: { path, tensor } });
    this.name = 'SafetensorsError';
    this.path = path;
    this.tensor = tensor;
  }
}

const DTYPE_BYTES = {
  BOOL: 1, U8: 1, I8: 1, F8_E5M2: 1, F8_E4M3: 1, I16: 2, U16: 2, F16: 2, BF16: 2, I32: 4, U32: 4, F32: 4, I64: 8, U64: 8, F64: 8,
} as const;
export type SafetensorsDtype = keyof typeof DTYPE_BYTES;
/** The dtypes `read` converts to float. */
export const READABLE_DTYPES: readonly SafetensorsDtype[] = ['F32', 'F16', 'BF16', 'F64', 'I32', 'I64'];
export type WritableDtype = 'F32' | 'F16' | 'BF16' | 'F64';

export const MAX_HEADER_BYTES = 100_000_000;

export interface TensorInfo {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  /** Absolute byte range in the file. */
  begin: number;
  end: number;
}

export interface ReadOptions {
  /** 'f64' gives a Float64Array (gradient checks); default 'f32'. */
  as?: 'f32' | 'f64';
}

export class SafetensorsFile {
  readonly path: string;
  readonly metadata: Record<string, string> | null;
  private readonly tensors: Map<string, TensorInfo>;
  private fd: number | null;

  private constructor(path: string, fd: number, tensors: Map<string, TensorInfo>, metadata: Record<string, string> | null) {
    this.path = path;
    this.fd = fd;
    this.tensors = tensors;
    this.metadata = metadata;
  }

  /** Open a file and validate its whole header. Throws SafetensorsError on anything malformed. */
  static open(path: string): SafetensorsFile {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (e) {
      throw new SafetensorsError(path, `cannot open: ${(e as Error).message}`);
    }
    try {
      const { tensors, metadata } = parseHeader(path, fd);
      return new SafetensorsFile(path, fd, tensors, metadata);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  names(): string[] {
    return [...this.tensors.keys()];
  }

  has(name: string): boolean {
    return this.tensors.has(name);
  }

  info(name: string): TensorInfo {
    const t = this.tensors.get(name);
    if (t === undefined) throw new SafetensorsError(this.path, 'no such tensor', name);
    return t;
  }

  /** The tensor's raw bytes, read from disk now. */
  readBytes(name: string): Uint8Array {
    const t = this.info(name);
    if (this.fd === null) throw new SafetensorsError(this.path, 'the file is closed', name);
    // A fresh ArrayBuffer per tensor, so typed views over it are aligned.
    const bytes = new Uint8Array(t.end - t.begin);
    let off = 0;
    while (off < bytes.length) {
      const n = readSync(this.fd, bytes, off, bytes.length - off, t.begin + off);
      if (n === 0) throw new SafetensorsError(this.path, `file ended while reading bytes ${t.begin}..${t.end}`, name);
      off += n;
    }
    return bytes;
  }

  /** Read a tensor as float32 (or float64), converting F16/BF16/F64/I32/I64. */
  read(name: string, opts: ReadOptions = {}): Float32Array | Float64Array {
    const t = this.info(name);
    if (!READABLE_DTYPES.includes(t.dtype)) {
      throw new SafetensorsError(this.path, `dtype ${t.dtype} cannot be read as float (readable: ${READABLE_DTYPES.join(', ')})`, name);
    }
    return decode(t.dtype, this.readBytes(name), opts.as ?? 'f32');
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

function parseHeader(path: string, fd: number): { tensors: Map<string, TensorInfo>; metadata: Record<string, string> | null } {
  const size = fstatSync(fd).size;
  if (size < 8) throw new SafetensorsError(path, `file is ${size} bytes, shorter than the 8-byte header length`);
  const lenBuf = Buffer.alloc(8);
  readSync(fd, lenBuf, 0, 8, 0);
  const n = lenBuf.readBigUInt64LE(0);
  if (n > BigInt(MAX_HEADER_BYTES)) throw new SafetensorsError(path, `header length ${n} exceeds the ${MAX_HEADER_BYTES}-byte limit`);
  const headerLen = Number(n);
  if (8 + headerLen > size) throw new SafetensorsError(path, `header length ${headerLen} runs past the end of the ${size}-byte file`);
  const headerBuf = Buffer.alloc(headerLen);
  if (headerLen > 0) readSync(fd, headerBuf, 0, headerLen, 8);
  let json: unknown;
  try {
    json = JSON.parse(headerBuf.toString('utf8'));
  } catch (e) {
    throw new SafetensorsError(path, `header is not valid JSON: ${(e as Error).message}`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new SafetensorsError(path, 'header is not a JSON object');
  const dataStart = 8 + headerLen;
  const dataLen = size - dataStart;
  const tensors = new Map<string, TensorInfo>();
  let metadata: Record<string, string> | null = null;
  for (const [name, raw] of Object.entries(json as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || Object.values(raw).some((v) => typeof v !== 'string')) {
        throw new SafetensorsError(path, '__metadata__ must be an object of strings');
      }
      metadata = raw as Record<string, string>;
      continue;
    }
    const fail = (msg: string): never => {
      throw new SafetensorsError(path, msg, name);
    };
    if (typeof raw !== 'object' || raw === null) fail('entry is not an object');
    const e = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (typeof e.dtype !== 'string' || !Object.hasOwn(DTYPE_BYTES, e.dtype)) fail(`unknown dtype ${JSON.stringify(e.dtype)}`);
    const dtype = e.dtype as SafetensorsDtype;
    if (!Array.isArray(e.shape) || !e.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) fail(`bad shape ${JSON.stringify(e.shape)}`);
    const shape = e.shape as number[];
    const off = e.data_offsets;
    if (!Array.isArray(off) || off.length !== 2 || !off.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      fail(`bad data_offsets ${JSON.stringify(off)}`);
    }
    const [b, en] = off as [number, number];
    if (b > en) fail(`data_offsets [${b}, ${en}] are reversed`);
    if (en > dataLen) fail(`data_offsets [${b}, ${en}] run past the ${dataLen} data bytes`);
    let count = 1;
    for (const d of shape) count *= d;
    const want = count * DTYPE_BYTES[dtype];
    if (!Number.isSafeInteger(want) || want !== en - b) {
      fail(`shape [${shape.join(', ')}] of ${dtype} needs ${want} bytes but data_offsets span ${en - b}`);
    }
    tensors.set(name, { name, dtype, shape, begin: dataStart + b, end: dataStart + en });
  }
  const sorted = [...tensors.values()].filter((t) => t.end > t.begin).sort((x, y) => x.begin - y.begin);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]!.begin < sorted[i - 1]!.end) {
      throw new SafetensorsError(path, `data overlaps tensor ${sorted[i - 1]!.name}`, sorted[i]!.name);
    }
  }
  return { tensors, metadata };
}

function decode(dtype: SafetensorsDtype, bytes: Uint8Array, as: 'f32' | 'f64'): Float32Array | Float64Array {
  const buf = bytes.buffer;
  if (dtype === 'F32' && as === 'f32') return new Float32Array(buf, 0, bytes.length / 4);
  if (dtype === 'F64' && as === 'f64') return new Float64Array(buf, 0, bytes.length / 8);
  let src: ArrayLike<number>;
  switch (dtype) {
    case 'F32':
      src = new Float32Array(buf, 0, bytes.length / 4);
      break;
    case 'F64':
      src = new Float64Array(buf, 0, bytes.length / 8);
      break;
    case 'I32':
      src = new Int32Array(buf, 0, bytes.length / 4);
      break;
    case 'I64': {
      const big = new BigInt64Array(buf, 0, bytes.length / 8);
      const out = as === 'f64' ? new Float64Array(big.length) : new Float32Array(big.length);
      for (let i = 0; i < big.length; i++) out[i] = Number(big[i]);
      return out;
    }
    case 'F16': {
      const h = new Uint16Array(buf, 0, bytes.length / 2);
      const out = as === 'f64' ? new Float64Array(h.length) : new Float32Array(h.length);
      for (let i = 0; i < h.length; i++) out[i] = f16ToF32(h[i]!);
      return out;
    }
    case 'BF16': {
      // bf16 is the top half of an f32: widen by shifting into the high 16 bits.
      const h = new Uint16Array(buf, 0, bytes.length / 2);
      const wide = new Uint32Array(h.length);
      for (let i = 0; i < h.length; i++) wide[i] = h[i]! << 16;
      const f = new Float32Array(wide.buffer);
      return as === 'f64' ? Float64Array.from(f) : f;
    }
    default:
      throw new Error(`unreachable dtype ${dtype}`);
  }
  return as === 'f64' ? Float64Array.from(src) : Float32Array.from(src);
}

/** IEEE 754 binary16 → number (subnormals, infinities and NaN included). */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac === 0 ? sign * Infinity : NaN;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** number → binary16 bits, rounding to nearest even (as numpy's astype(float16) does). */
export function f32ToF16(x: number): number {
  f32Scratch[0] = x;
  const bits = u32Scratch[0]!;
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  let mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    let r = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    if (rest > half || (rest === half && (r & 1) === 1)) r++;
    return sign | r;
  }
  let r = mant >>> 13;
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (r & 1) === 1)) {
    r++;
    if (r === 0x400) {
      r = 0;
      e++;
      if (e >= 0x1f) return sign | 0x7c00;
    }
  }
  return sign | (e << 10) | r;
}

/** number → bfloat16 bits, rounding to nearest even (as torch's .to(torch.bfloat16) does); NaN stays NaN. */
export function f32ToBf16(x: number): number {
  f32Scratch[0] = x;
  const bits = u32Scratch[0]!;
  if ((bits & 0x7fffffff) > 0x7f800000) return ((bits >>> 16) | 0x40) & 0xffff;
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

export interface TensorToWrite {
  shape: readonly number[];
  data: Float32Array | Float64Array;
  /** Default F32. */
  dtype?: WritableDtype;
}

function encode(t: TensorToWrite): Uint8Array {
  const dtype = t.dtype ?? 'F32';
  if (dtype === 'F32') {
    const f = t.data instanceof Float32Array ? t.data : Float32Array.from(t.data);
    return new Uint8Array(f.buffer, f.byteOffset, f.byteLength);
  }
  if (dtype === 'F64') {
    const f = t.data instanceof Float64Array ? t.data : Float64Array.from(t.data);
    return new Uint8Array(f.buffer, f.byteOffset, f.byteLength);
  }
  const h = new Uint16Array(t.data.length);
  const conv = dtype === 'F16' ? f32ToF16 : f32ToBf16;
  for (let i = 0; i < h.length; i++) h[i] = conv(t.data[i]!);
  return new Uint8Array(h.buffer);
}

/**
 * Write a safetensors file with keys in sorted order (byte-identical output for the same input), the
 * header padded with spaces to a multiple of 8 bytes as the reference writer does. Written to a temporary file
 * and renamed, so a crash never leaves a half-written file under the final name.
 */
export function writeSafetensors(path: string, tensors: Record<string, TensorToWrite>, metadata?: Record<string, string>): void {
  const names = Object.keys(tensors).sort();
  const header: Record<string, unknown> = {};
  if (metadata !== undefined) header.__metadata__ = metadata;
  let offset = 0;
  for (const name of names) {
    const t = tensors[name]!;
    let count = 1;
    for (const d of t.shape) {
      if (!Number.isSafeInteger(d) || d < 0) throw new SafetensorsError(path, `bad shape [${t.shape.join(', ')}]`, name);
      count *= d;
    }
    if (count !== t.data.length) {
      throw new SafetensorsError(path, `shape [${t.shape.join(', ')}] needs ${count} values, data has ${t.data.length}`, name);
    }
    const bytes = count * DTYPE_BYTES[t.dtype ?? 'F32'];
    header[name] = { dtype: t.dtype ?? 'F32', shape: [...t.shape], data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  const jsonBytes = Buffer.byteLength(json);
  json += ' '.repeat((8 - (jsonBytes % 8)) % 8);
  const headerBuf = Buffer.from(json, 'utf8');
  const lenBuf = Buffer.alloc(8);
  lenBuf.writeBigUInt64LE(BigInt(headerBuf.length));
  writeFileAtomic(path, (fd) => {
    writeAll(fd, lenBuf);
    writeAll(fd, headerBuf);
    for (const name of names) writeAll(fd, encode(tensors[name]!));
  });
}

