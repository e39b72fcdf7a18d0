// Block-quantized weights dequantized with WebAssembly SIMD (128-bit), bit for bit as quant.ts dequantizeRows does
// (each value f32(f32(q − zero) · scale): one f32x4.sub and one f32x4.mul, each rounded once, as MatMulNBits does).
// The driver dequantizes a block-quantized layer into an f32 scratch for every run of its f32 graph (driver.ts
// runLayer); in JS that loop costs ~1.1 ns a value, 17 ms for a Qwen2-0.5B layer and ~1.2 s of a 0.5B LoRA step
// (docs/performance.md). Here a block of 32 is one or two 16-byte loads, two shuffles (int4: low and high nibbles interleaved
// back into order), widening to i32, and 8 f32x4 stores.
//
// The scratch the graphs are fed lives in the module's own memory, so nothing is copied out; the quantized bytes are
// copied in (a tenth of the f32 size). The memory is sized once (an arena: alloc() only), because growing a
// WebAssembly memory detaches every view of it.
import { QUANT_BLOCK, type QuantWeight } from '../../common/engine/quant.ts';

// The little of the WebAssembly JS API used here (the project's TypeScript libs do not declare it: no DOM lib).
interface WasmMemory {
  readonly buffer: ArrayBuffer;
}
interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => { exports: Record<string, unknown> };
  Memory: new (d: { initial: number; maximum: number }) => WasmMemory;
}
const wasm = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;

const PAGE = 65536;
/** WebAssembly memory32 holds at most 4 GiB (65536 pages). */
const MAX_PAGES = 65536;

// The module, assembled here (no toolchain): two functions of type (q, s, z, out, blocks, zstep) → ().
// q: the blocks' bytes, s: their f32 scales, z: their f32 zero points (zstep 4) or one value (zstep 0), out: f32.
const uleb = (n: number): number[] => {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
};
const sleb = (n: number): number[] => {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) return [...out, b];
    out.push(b | 0x80);
  }
};
const section = (id: number, body: number[]): number[] => [id, ...uleb(body.length), ...body];
const vec = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()];
const str = (s: string): number[] => vec([...s].map((c) => [c.charCodeAt(0)]));

// Locals: params 0 q, 1 s, 2 z, 3 out, 4 blocks, 5 zstep; then 6 scale, 7 zero, 8 lo, 9 hi, 10 x (v128).
const [Q, S, Z, OUT, N, ZSTEP, SV, ZV, LO, HI, X] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
const get = (i: number): number[] => [0x20, i];
const set = (i: number): number[] => [0x21, i];
const simd = (op: number): number[] => [0xfd, ...uleb(op)];
const memarg = (align: number, offset: number): number[] => [align, ...uleb(offset)];
const i32const = (n: number): number[] => [0x41, ...sleb(n)];
const addTo = (local: number, n: number[]): number[] => [...get(local), ...n, 0x6a, ...set(local)];

/** Stores x's 16 bytes (values 0-255) as 16 f32 (x − zero)·scale at out + offset. */
function store16(offset: number): number[] {
  const out: number[] = [];
  for (let k = 0; k < 4; k++) {
    out.push(...get(OUT), ...get(X));
    out.push(...simd(k < 2 ? 0x89 : 0x8a)); // i16x8.extend_{low,high}_i8x16_u
    out.push(...simd(k % 2 === 0 ? 0xa9 : 0xaa)); // i32x4.extend_{low,high}_i16x8_u
    out.push(...simd(0xfa)); // f32x4.convert_i32x4_s (the values are 0-255: exact)
    out.push(...get(ZV), ...simd(0xe5)); // f32x4.sub
    out.push(...get(SV), ...simd(0xe6)); // f32x4.mul
    out.push(...simd(0x0b), ...memarg(0, offset + 16 * k)); // v128.store
  }
  return out;
}

function body(bits: 4 | 8): number[] {
  const perBlock: number[] = [
    ...get(S), 0x2a, ...memarg(2, 0), ...simd(0x13), ...set(SV), // scale = f32x4.splat(f32.load s)
    ...get(Z), 0x2a, ...memarg(2, 0), ...simd(0x13), ...set(ZV),
  ];
  if (bits === 4) {
    perBlock.push(
      ...get(Q), ...simd(0x00), ...memarg(0, 0), ...set(X), // v128.load
      ...get(X), ...i32const(15), ...simd(0x0f), ...simd(0x4e), ...set(LO), // v128.and(x, i8x16.splat 15)
      ...get(X), ...i32const(4), ...simd(0x6d), ...set(HI), // i8x16.shr_u(x, 4)
      ...get(LO), ...get(HI), ...simd(0x0d), ...Array.from({ length: 16 }, (_, j) => (j % 2 === 0 ? j / 2 : 16 + (j - 1) / 2)), ...set(X),
      ...store16(0),
      ...get(LO), ...get(HI), ...simd(0x0d), ...Array.from({ length: 16 }, (_, j) => (j % 2 === 0 ? 8 + j / 2 : 24 + (j - 1) / 2)), ...set(X),
      ...store16(64),
      ...addTo(Q, i32const(16)),
    );
  } else {
    perBlock.push(
      ...get(Q), ...simd(0x00), ...memarg(0, 0), ...set(X), ...store16(0),
      ...get(Q), ...simd(0x00), ...memarg(0, 16), ...set(X), ...store16(64),
      ...addTo(Q, i32const(32)),
    );
  }
  perBlock.push(...addTo(S, i32const(4)), ...addTo(Z, get(ZSTEP)), ...addTo(OUT, i32const(128)), ...get(N), ...i32const(1), 0x6b, ...set(N));
  const code = [
    1, 5, 0x7b, // 5 locals of v128
    0x02, 0x40, 0x03, 0x40, // block, loop
    ...get(N), 0x45, 0x0d, 1, // br_if 1 when blocks == 0
    ...perBlock,
    0x0c, 0, // br 0
    0x0b, 0x0b, 0x0b, // end loop, block, function
  ];
  return [...uleb(code.length), ...code];
}

const MODULE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  ...section(1, vec([[0x60, ...vec([[0x7f], [0x7f], [0x7f], [0x7f], [0x7f], [0x7f]]), 0]])),
  ...section(2, vec([[...str('e'), ...str('m'), 0x02, 0x00, 1]])), // import memory e.m, at least 1 page
  ...section(3, vec([[0], [0]])),
  ...section(7, vec([[...str('d4'), 0x00, 0], [...str('d8'), 0x00, 1]])),
  ...section(10, vec([body(4), body(8)])),
]);

type Kernel = (q: number, s: number, z: number, out: number, blocks: number, zstep: number) => void;
let compiled: object | null | undefined;

/** The module, or null where this runtime has no WebAssembly SIMD (then the JS loop runs). */
function wasmModule(): object | null {
  if (compiled === undefined) compiled = wasm !== undefined && wasm.validate(MODULE) ? new wasm.Module(MODULE) : null;
  return compiled;
}

export const simdDequantAvailable = (): boolean => wasmModule() !== null;

const align16 = (n: number): number => Math.ceil(n / 16) * 16;

/**
 * One scratch arena: `outValues` f32 for the dequantized weights (alloc) and room to stage one quantized weight of at
 * most `stagingBlocks` blocks. Throws when SIMD is missing (check simdDequantAvailable) or the arena passes 4 GiB.
 */
export class SimdDequantizer {
  readonly memory: WasmMemory;
  private readonly d4: Kernel;
  private readonly d8: Kernel;
  private readonly stage: number;
  private readonly stagingBlocks: number;
  private next: number;
  private readonly end: number;

  constructor(outValues: number, stagingBlocks: number) {
    const mod = wasmModule();
    if (mod === null || wasm === undefined) throw new Error('this runtime has no WebAssembly SIMD');
    // [0, 16): the symmetric default zero point; then staging (bytes, scales, zero points); then the f32 arena.
    this.stage = 16;
    this.stagingBlocks = stagingBlocks;
    const stagingBytes = align16(stagingBlocks * QUANT_BLOCK) + 2 * align16(4 * stagingBlocks);
    this.next = this.stage + stagingBytes;
    this.end = this.next + 4 * outValues;
    const pages = Math.max(1, Math.ceil(this.end / PAGE));
    if (pages > MAX_PAGES) throw new RangeError(`a dequantization arena of ${this.end} bytes passes WebAssembly's 4 GiB`);
    this.memory = new wasm.Memory({ initial: pages, maximum: pages });
    const inst = new wasm.Instance(mod, { e: { m: this.memory } });
    this.d4 = inst.exports.d4 as Kernel;
    this.d8 = inst.exports.d8 as Kernel;
  }

  /** A new f32 buffer of n values in the arena, which takes n rounded up to 4 (never freed: the arena lives as long as its scratch). */
  alloc(n: number): Float32Array {
    if (this.next + 4 * n > this.end) throw new RangeError(`dequantization arena full: ${n} more values do not fit`);
    const b = new Float32Array(this.memory.buffer, this.next, n);
    this.next = align16(this.next + 4 * n);
    return b;
  }

  /** W as f32 [rows, cols] into out, a buffer of this arena (alloc) of exactly rows·cols values. */
  dequantize(w: QuantWeight, out: Float32Array): Float32Array {
    const blocks = (w.rows * w.cols) / QUANT_BLOCK;
    if (out.buffer !== this.memory.buffer || out.length !== w.rows * w.cols) throw new RangeError('dequantize: out must be an arena buffer of rows·cols values');
    if (blocks > this.stagingBlocks) throw new RangeError(`dequantize: ${blocks} blocks pass the staging room (${this.stagingBlocks})`);
    const mem = this.memory.buffer;
    const q = this.stage;
    const s = q + align16(blocks * QUANT_BLOCK);
    const z = s + align16(4 * blocks);
    new Uint8Array(mem, q, w.qweight.length).set(w.qweight);
    new Float32Array(mem, s, blocks).set(w.scales);
    if (w.zeroPoints !== null) new Float32Array(mem, z, blocks).set(w.zeroPoints);
    else new Float32Array(mem, 0, 1)[0] = w.spec.bits === 4 ? 8 : 128;
    const zeros = w.zeroPoints === null ? [0, 0] : [z, 4];
    (w.spec.bits === 4 ? this.d4 : this.d8)(q, s, zeros[0]!, out.byteOffset, blocks, zeros[1]!);
    return out;
  }
}
