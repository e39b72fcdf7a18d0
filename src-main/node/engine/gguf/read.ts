// Reading a GGUF file (ggml docs/gguf.md, versions 2 and 3; layout in format.ts). The header is parsed through a
// bounded reader: every count and length is checked against the bytes left in the file before anything is
// allocated, so a truncated file or a header claiming 100 GB of tensors or a billion strings is a GgufError, never
// an out-of-memory crash. Tensor data is read one tensor at a time and dequantized to float32 (quant.ts).
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { GGUF_ALIGNMENT, GGUF_MAGIC, GgufError } from './format.ts';
import { GGML_TYPES, dequantize, ggmlTypeById, ggmlTypeLabel, typeBytes } from './quant.ts';
import type { GgmlTypeName } from './quant.ts';

export type GgufReadValue = number | boolean | string | GgufReadValue[];

export interface GgufTensorInfo {
  name: string;
  /** numpy / HF order (slowest-first): the reverse of the file's ne[]. */
  shape: number[];
  type: GgmlTypeName;
  /** Absolute byte offset of the data in the file, and its length. */
  offset: number;
  bytes: number;
}

/** ggml.h GGML_MAX_DIMS. */
const MAX_DIMS = 4;
const CHUNK = 1 << 20;

/** Sequential little-endian reads from a file descriptor, refusing to go past the end of the file. */
class BoundedReader {
  private buf = Buffer.alloc(0);
  private bufAt = 0; // file offset of buf[0]
  pos = 0;
  private readonly fd: number;
  readonly size: number;
  readonly path: string;
  constructor(fd: number, size: number, path: string) {
    this.fd = fd;
    this.size = size;
    this.path = path;
  }

  left(): number {
    return this.size - this.pos;
  }

  /** Fail unless `n` more bytes exist; `what` names the field for the error. */
  need(n: number, what: string): void {
    if (!(n <= this.left())) throw new GgufError(`truncated or corrupt: ${what} needs ${n} bytes at offset ${this.pos}, the file has ${this.left()} left`, this.path);
  }

  private take(n: number, what: string): number {
    this.need(n, what);
    if (this.pos < this.bufAt || this.pos + n > this.bufAt + this.buf.length) {
      const len = Math.min(Math.max(n, CHUNK), this.size - this.pos);
      this.buf = Buffer.alloc(len);
      let off = 0;
      while (off < len) {
        const got = readSync(this.fd, this.buf, off, len - off, this.pos + off);
        if (got === 0) throw new GgufError(`the file ended at ${this.pos + off} while its size is ${this.size}`, this.path);
        off += got;
      }
      this.bufAt = this.pos;
    }
    const at = this.pos - this.bufAt;
    this.pos += n;
    return at;
  }

  /** Where the last take() landed in buf. */
  last = 0;
  /** take() first, then the buffer it filled (`this.buf.readX(this.take(…))` would read the buffer before refill). */
  private view(n: number, what: string): Buffer {
    this.last = this.take(n, what);
    return this.buf;
  }

  u8(what: string): number {
    return this.view(1, what)[this.last]!;
  }
  u32(what: string): number {
    return this.view(4, what).readUInt32LE(this.last);
  }
  i32(what: string): number {
    return this.view(4, what).readInt32LE(this.last);
  }
  /** A u64 as a number; values past 2^53 (never a real size or count) are refused. */
  u64(what: string): number {
    // Two u32 halves, not a BigInt: every string's length is a u64, and a vocabulary has 150,000 of them.
    const b = this.view(8, what);
    const hi = b.readUInt32LE(this.last + 4);
    if (hi > 0x1fffff) throw new GgufError(`${what} is ${b.readBigUInt64LE(this.last)}, beyond any file's size`, this.path);
    return hi * 0x1_0000_0000 + b.readUInt32LE(this.last);
  }
  i64(what: string): number {
    return Number(this.view(8, what).readBigInt64LE(this.last));
  }
  str(what: string): string {
    const n = this.u64(`${what} length`);
    const at = this.take(n, what);
    return this.buf.toString('utf8', at, at + n);
  }
  scalar(type: number, what: string): GgufReadValue {
    switch (type) {
      case 0: return this.u8(what);
      case 1: return this.view(1, what).readInt8(this.last);
      case 2: return this.view(2, what).readUInt16LE(this.last);
      case 3: return this.view(2, what).readInt16LE(this.last);
      case 4: return this.u32(what);
      case 5: return this.i32(what);
      case 6: return shortestF32(this.view(4, what).readFloatLE(this.last));
      case 7: return this.u8(what) !== 0;
      case 8: return this.str(what);
      case 10: return this.u64(what);
      case 11: return this.i64(what);
      case 12: return this.view(8, what).readDoubleLE(this.last);
      default: throw new GgufError(`${what} has value type ${type}, which GGUF does not define`, this.path);
    }
  }
}

/**
 * The shortest decimal that is this float32 (1e-6 rather than 9.999999974752427e-7): a config value written from
 * JSON as f32 (rms_norm_eps, rope_theta) reads back as the number that was written.
 */
function shortestF32(v: number): number {
  for (let p = 1; p <= 9; p++) {
    const d = Number(v.toPrecision(p));
    if (Math.fround(d) === v) return d;
  }
  return v;
}

/** Smallest encoding of one value of a GGUF value type (a string is at least its u64 length). */
const MIN_BYTES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 8: 8, 9: 12, 10: 8, 11: 8, 12: 8 };

function readValue(r: BoundedReader, what: string): GgufReadValue {
  const type = r.u32(`${what} type`);
  return type === 9 ? readArray(r, what, 0) : r.scalar(type, what);
}

/**
 * A top-level array of strings, walked and checked but not decoded (GgufOpenOptions.skipStringArrays): its element
 * count, or null when the value is something else (then read as usual).
 */
function skipStringArray(r: BoundedReader, what: string): number | null {
  const at = r.pos;
  if (r.u32(`${what} type`) !== 9 || r.u32(`${what} element type`) !== 8) {
    r.pos = at;
    return null;
  }
  const n = r.u64(`${what} count`);
  r.need(n * 8, `${what} (${n} elements)`);
  for (let i = 0; i < n; i++) {
    const len = r.u64(`${what}[${i}] length`);
    r.need(len, `${what}[${i}]`);
    r.pos += len;
  }
  return n;
}

/** An array's element type, count and elements; an array of arrays repeats that per element. */
function readArray(r: BoundedReader, what: string, depth: number): GgufReadValue[] {
  if (depth > 3) throw new GgufError(`${what} nests arrays more than 4 deep`, r.path);
  const elem = r.u32(`${what} element type`);
  const n = r.u64(`${what} count`);
  const min = MIN_BYTES[elem];
  if (min === undefined) throw new GgufError(`${what} has element type ${elem}, which GGUF does not define`, r.path);
  r.need(n * min, `${what} (${n} elements)`);
  const out = new Array<GgufReadValue>(n);
  for (let i = 0; i < n; i++) out[i] = elem === 9 ? readArray(r, `${what}[${i}]`, depth + 1) : r.scalar(elem, what);
  return out;
}

export interface GgufOpenOptions {
  /**
   * Walk arrays of strings (the vocabulary and merges: 300,000 strings in a Qwen or Llama 3 file) without decoding
   * them, for a listing that needs only the header: a second or so less per file. Their keys are in `skipped`.
   */
  skipStringArrays?: boolean;
}

export class GgufFile {
  readonly path: string;
  readonly version: number;
  readonly size: number;
  readonly metadata: ReadonlyMap<string, GgufReadValue>;
  readonly tensors: ReadonlyMap<string, GgufTensorInfo>;
  private fd: number | null;

  /** Arrays of strings not decoded (GgufOpenOptions.skipStringArrays): key → element count. */
  readonly skipped: ReadonlyMap<string, number>;

  private constructor(path: string, fd: number, version: number, size: number, md: Map<string, GgufReadValue>, tensors: Map<string, GgufTensorInfo>, skipped: Map<string, number>) {
    this.skipped = skipped;
    this.path = path;
    this.fd = fd;
    this.version = version;
    this.size = size;
    this.metadata = md;
    this.tensors = tensors;
  }

  /** Open and validate the whole header (every tensor's type and extent), reading no tensor data. */
  static open(path: string, opts: GgufOpenOptions = {}): GgufFile {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (e) {
      throw new GgufError(`cannot open: ${(e as Error).message}`, path);
    }
    try {
      const size = fstatSync(fd).size;
      const r = new BoundedReader(fd, size, path);
      if (size < 24 || r.u32('magic') !== GGUF_MAGIC) throw new GgufError('not a GGUF file (no "GGUF" magic at the start)', path);
      const version = r.u32('version');
      if (version !== 2 && version !== 3) throw new GgufError(`GGUF version ${version} is not supported (2 and 3 are)`, path, { version });
      const nTensors = r.u64('tensor count');
      const nKv = r.u64('metadata count');
      // A key/value is at least a key length, a type and a byte; a tensor info at least 8 + 4 + 8 + 4 + 8 bytes.
      r.need(nKv * 13 + nTensors * 32, `${nKv} metadata entries and ${nTensors} tensor infos`);
      const md = new Map<string, GgufReadValue>();
      const skipped = new Map<string, number>();
      for (let i = 0; i < nKv; i++) {
        const key = r.str(`metadata key ${i}`);
        const n = opts.skipStringArrays === true ? skipStringArray(r, `metadata ${key}`) : null;
        if (n !== null) skipped.set(key, n);
        else md.set(key, readValue(r, `metadata ${key}`));
      }
      const alignment = md.get('general.alignment') ?? GGUF_ALIGNMENT;
      if (typeof alignment !== 'number' || alignment <= 0 || (alignment & (alignment - 1)) !== 0) throw new GgufError(`general.alignment ${String(alignment)} is not a power of two`, path);
      const infos: { name: string; ne: number[]; type: GgmlTypeName; rel: number }[] = [];
      for (let i = 0; i < nTensors; i++) {
        const name = r.str(`tensor ${i} name`);
        const nDims = r.u32(`tensor ${name} dims`);
        if (nDims < 1 || nDims > MAX_DIMS) throw new GgufError(`tensor ${name} has ${nDims} dims (ggml allows 1 to ${MAX_DIMS})`, path, { tensor: name });
        const ne: number[] = [];
        for (let d = 0; d < nDims; d++) ne.push(r.u64(`tensor ${name} dim ${d}`));
        const typeId = r.u32(`tensor ${name} type`);
        const type = ggmlTypeById(typeId);
        if (type === null) {
          throw new GgufError(`tensor ${name} has ggml type ${ggmlTypeLabel(typeId)}, which we cannot read (we read ${Object.keys(GGML_TYPES).join(', ')})`, path, { tensor: name, type: ggmlTypeLabel(typeId) });
        }
        infos.push({ name, ne, type, rel: r.u64(`tensor ${name} offset`) });
      }
      const dataStart = Math.ceil(r.pos / alignment) * alignment;
      const tensors = new Map<string, GgufTensorInfo>();
      for (const t of infos) {
        if (tensors.has(t.name)) throw new GgufError(`tensor ${t.name} appears twice`, path, { tensor: t.name });
        const block = GGML_TYPES[t.type].block;
        if (t.ne[0]! % block !== 0) throw new GgufError(`tensor ${t.name}: a row of ${t.ne[0]} is not a whole number of ${t.type} blocks of ${block}`, path, { tensor: t.name });
        const n = t.ne.reduce((a, d) => a * d, 1);
        const bytes = typeBytes(t.type, n);
        const offset = dataStart + t.rel;
        if (t.rel % alignment !== 0) throw new GgufError(`tensor ${t.name}: data offset ${t.rel} is not aligned to ${alignment}`, path, { tensor: t.name });
        if (!(offset + bytes <= size)) {
          throw new GgufError(`truncated or corrupt: tensor ${t.name} [${t.ne.join(', ')}] ${t.type} needs bytes ${offset}..${offset + bytes}, the file has ${size}`, path, { tensor: t.name });
        }
        tensors.set(t.name, { name: t.name, shape: [...t.ne].reverse(), type: t.type, offset, bytes });
      }
      return new GgufFile(path, fd, version, size, md, tensors, skipped);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  /** A metadata value, type-checked. */
  get(key: string, type: 'number'): number | undefined;
  get(key: string, type: 'string'): string | undefined;
  get(key: string, type: 'boolean'): boolean | undefined;
  get(key: string, type: 'array'): GgufReadValue[] | undefined;
  get(key: string, type: 'number' | 'string' | 'boolean' | 'array'): GgufReadValue | undefined {
    const v = this.metadata.get(key);
    if (v === undefined) return undefined;
    if (type === 'array' ? !Array.isArray(v) : typeof v !== type) throw new GgufError(`metadata ${key} is ${JSON.stringify(v).slice(0, 40)}, not a ${type}`, this.path, { key });
    return v;
  }

  info(name: string): GgufTensorInfo {
    const t = this.tensors.get(name);
    if (t === undefined) throw new GgufError(`no tensor ${name}`, this.path, { tensor: name });
    return t;
  }

  readBytes(name: string): Uint8Array {
    const t = this.info(name);
    if (this.fd === null) throw new GgufError('the file is closed', this.path);
    const out = new Uint8Array(t.bytes);
    let off = 0;
    while (off < out.length) {
      const n = readSync(this.fd, out, off, out.length - off, t.offset + off);
      if (n === 0) throw new GgufError(`the file ended while reading tensor ${name}`, this.path, { tensor: name });
      off += n;
    }
    return out;
  }

  /** A tensor's values as float32, dequantized as ggml does, row-major in `shape`. */
  read(name: string): Float32Array {
    const t = this.info(name);
    return dequantize(t.type, this.readBytes(name), t.shape.reduce((a, d) => a * d, 1));
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}
