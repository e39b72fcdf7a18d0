// Runs a Llama-family model layer by layer on ORT: the one decoder-layer graph (weights are inputs) is fed each
// layer's weights in turn, the head graph runs over chunks of tokens, and the backward walks the layers in reverse
// through the vjp split's backward graph. Sequences are padded on the right to a shape bucket so sessions are reused;
// with a causal mask, padding after the last real token changes nothing before it, and its rows are kept out of the
// loss (their cotangent is zero).
import { BadInputError } from '../../common/errors.ts';
import type { Graph } from '../../common/engine/ir.ts';
import { vjpSplit } from '../../common/engine/autodiff.ts';
import type { VjpSplit } from '../../common/engine/autodiff.ts';
import { loraInputNames } from '../../common/engine/lora.ts';
import { modelGraphs } from '../../common/engine/families/registry.ts';
import type { ModelConfig, ModelGraphs } from '../../common/engine/families/registry.ts';
import type { FloatDType, HeadGrad } from '../../common/engine/composites.ts';
import type { LayerLora } from '../../common/engine/lora.ts';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { loraScale } from '../../common/engine/lora.ts';
import { DeviceTensor, Resident, type Feed, type HostTensor, type Runtime, type SessionConstants } from './runtime.ts';
import { QUANT_BLOCK, type QuantSpec, type QuantWeight, dequantize, dequantizeRows, isQuant, quantFeeds } from '../../common/engine/quant.ts';
import { SimdDequantizer, simdDequantAvailable } from './dequant-simd.ts';
import type { QuantLayout } from '../../common/engine/families/llama.ts';
import { HEAD_TILE_VALUES, headTileName, headTileRanges } from '../../common/engine/head.ts';

export type FArray = Float32Array | Float64Array;

/**
 * The frozen weights, by parameter-table name: one record per layer, and the model-scope ones. A linear weight (and
 * embed_tokens / lm_head) may be block-quantized (common/engine/quant.ts): a layer's are dequantized into a reused
 * f32 scratch for each run of the f32 layer graph (DriverOptions.dequantizeLayerMaxBytes; a larger layer's graph reads
 * them through MatMulNBits), the lm_head goes through MatMulNBits, and the embedding rows are dequantized on lookup.
 */
export interface DriverWeights {
  layers: Record<string, FArray | QuantWeight>[];
  embed: FArray | QuantWeight;
  norm: FArray;
  /** lm_head, or embed_tokens itself when the embeddings are tied. */
  lmHead: FArray | QuantWeight;
}

/** DriverWeights with every weight in f32 (or f64). */
export interface F32Weights {
  layers: Record<string, FArray>[];
  embed: FArray;
  norm: FArray;
  lmHead: FArray;
}

export interface DriverOptions {
  dtype: FloatDType;
  /** Token-count buckets a sequence is padded up to (ascending); longer sequences use multiples of the last. */
  buckets?: readonly number[];
  /**
   * Rows per head-graph run (256; fewer for a shorter sequence: the bucket of its rows). The head reads the
   * vocabulary in tiles (head.ts), and each run reads the whole lm_head once (a quantized one is dequantized once
   * per run), so larger chunks are faster; but ORT still holds about one [chunk, V] f32 in all for a run (Qwen2-0.5B:
   * 128 rows +0.08 GiB peak RSS and 1.28 s a run, 256 rows +0.16 GiB and 1.76 s, 512 rows +0.32 GiB and 2.70 s).
   */
  headChunk?: number;
  /** The lm_head backward: the hand-fused one (default) or the autodiff's. */
  headGrad?: Exclude<HeadGrad, 'none'>;
  /**
   * Above this bucket, the backward recomputes each layer's forward instead of keeping its residuals: 512 for an f32
   * base, 256 for a block-quantized one (RECOMPUTE_ABOVE_QUANT).
   */
  recomputeAbove?: number;
  /** Values per tile of an f32 lm_head in the head graphs (head.ts HEAD_TILE_VALUES). */
  headTileValues?: number;
  /**
   * Block-quantized layer weights baked into per-layer sessions as constants, which ORT prepacks for MatMulNBits
   * (about 2× faster than the fed weights it dequantizes into f32 per call; the same product to float rounding), at
   * the cost of one packed copy (≈1.3× the quantized bytes) per layer graph kind in use, for one shape bucket at a
   * time, and of one ORT arena per layer session: each keeps its high-water mark of a layer's transients (about
   * 200 MB per layer at T = 512 for a 0.5B; onnxruntime-node has no shared allocator, and without an arena ORT runs
   * many times slower). Off by default: docs/performance.md, "Quantized bases", has the measurements.
   */
  prepack?: boolean;
  /**
   * The most bytes of one layer's weights in f32 that the driver dequantizes per run (DEQUANTIZE_LAYER_MAX_BYTES):
   * a block-quantized layer no larger is fed to the f32 layer graph, its weights dequantized into a reused buffer
   * before each run (WebAssembly SIMD, dequant-simd.ts), instead of going through MatMulNBits. ORT 1.30's MatMulNBits
   * with fed (not prepacked) weights dequantizes them far slower than this (bench/quant-profile.ts: 0.5B layer forward
   * 367 ms against 130 ms for the f32 graph, and the backward's dequantization another ~250 ms; the JS loop takes
   * ~1.1 ns a value, 17 ms a 0.5B layer, the SIMD one ~0.2 ns).
   * 0 turns it off; prepack: true does too. On a runtime that keeps weights on the device (WebGPU), a layer without
   * zero points reads its weights through MatMulNBits unless this is given.
   */
  dequantizeLayerMaxBytes?: number;
}

/**
 * dequantizeLayerMaxBytes's default: a Qwen2-0.5B layer is 59 MB in f32, a Llama-3-8B or Qwen2.5-7B layer 0.87 GB
 * (its step at seq 512: 256 against 398 s of CPU through MatMulNBits, peak RSS 7.07 against 6.64 GiB; docs/models-and-formats.md). A larger
 * layer goes through MatMulNBits.
 */
export const DEQUANTIZE_LAYER_MAX_BYTES = 2 ** 30;

/** A set of f32 buffers for one layer's dequantized weights, by name, and the layer they hold. */
interface LayerScratch {
  layer: number;
  buffers: Map<string, Float32Array>;
  /** The WebAssembly SIMD arena the buffers live in (dequant-simd.ts), or null where the JS loop fills them. */
  simd: SimdDequantizer | null;
}

/**
 * recomputeAbove's default for a block-quantized base. Whoever runs a 4-bit base is short of memory, and there the
 * residuals are the step's largest buffers: at 512 tokens a Qwen2-0.5B keeps 3.3 GiB of them for 24 layers beside
 * 0.7 GiB of weights. Recomputing each layer's forward in the backward keeps only its input (docs/performance.md).
 */
export const RECOMPUTE_ABOVE_QUANT = 256;

export const DEFAULT_BUCKETS = [16, 32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048] as const;

/** Per-layer LoRA feeds and where each pair's gradients go. */
interface LoraPlan {
  spec: LayerLora;
  /**
   * Per layer: input name → array (converted to the driver's dtype once per call), Resident for the call: under
   * WebGPU the forward and the backward of one call read one device copy.
   */
  feeds: Record<string, Resident>[];
  /** Per layer: [input name, pair index, 'a' | 'b'] for every LoRA input of the layer. */
  slots: { name: string; pair: number; which: 'a' | 'b' }[][];
}

interface LoraGraphs {
  graph: Graph;
  split: VjpSplit;
  recompute: VjpSplit;
}

export interface SequenceForward {
  /** Log-probabilities of tokens[start..n), [n − start]. */
  logp: Float64Array;
}

/** One sequence of a pack (Driver.packedGrad): its ids, the pack's shared prefix first, and its first scored token. */
export interface PackMember {
  tokens: readonly number[];
  start: number;
}

/** What a pack's run gives per member, in the members' order. */
export interface PackGrad {
  /** Per member, the log-probabilities of tokens[start..n). */
  logps: Float64Array[];
  /** d(Σ_members Σ_t dlogp_t·logp_t)/d(A, B) per pair, in the adapter's order, in the driver's dtype. */
  grads: { a: FArray; b: FArray }[];
}

/**
 * A layer's RoPE tables and mask, in the driver's dtype: Resident for the causal tables of a bucket (uploaded once
 * under WebGPU), host arrays for a pack's, which change with every pack.
 */
interface LayerTables {
  cos: FArray | Resident;
  sin: FArray | Resident;
  mask: FArray | Resident;
}

export interface SequenceGrad extends SequenceForward {
  /** d(Σ_t dlogp_t·logp_t)/d(A, B) per pair, in the adapter's order, in the driver's dtype. */
  grads: { a: FArray; b: FArray }[];
}

/** Gradients of every weight, shaped like DriverWeights (lmHead is absent when the embeddings are tied: embed has both). */
export interface FullGrad extends SequenceForward {
  grads: { layers: Record<string, Float64Array>[]; embed: Float64Array; norm: Float64Array; lmHead: Float64Array | null };
}

export class Driver {
  readonly config: ModelConfig;
  readonly dtype: FloatDType;
  readonly buckets: readonly number[];
  readonly headChunk: number;
  readonly headGradMode: Exclude<HeadGrad, 'none'>;
  readonly recomputeAbove: number;
  readonly headTileValues: number;
  private readonly rt: Runtime;
  private readonly w: DriverWeights;
  private readonly baseLayers = new Map<string, Graph>();
  private readonly head: Graph;
  private readonly headGrad: Graph;
  private readonly logits: Graph;
  private readonly loraGraphs = new Map<string, LoraGraphs>();
  private fullGraphs: { layer: VjpSplit; head: VjpSplit } | null = null;
  /** Per layer kind and bucket; Resident, so under WebGPU each bucket's tables are uploaded once. */
  private readonly tables = new Map<string, LayerTables>();
  /** The family's graphs and per-layer tables (families/registry.ts). */
  private readonly family: ModelGraphs;
  /**
   * Which weights of each layer are quantized, and the lm_head's. Layers with the same layout share one graph (a
   * Q4_K_M file keeps some layers' v_proj/down_proj in Q6_K, read as f32: two or three layouts in all).
   */
  private readonly layerQuant: QuantLayout[];
  private readonly layoutKeys: string[];
  private readonly headQuant: QuantSpec | null;
  /** The lm_head the head graphs read: weights.lmHead, or its f32 dequantization (see the constructor). */
  private readonly lmHead: FArray | QuantWeight;
  /**
   * Per layer, the weight feeds under the graph's input names (a quantized weight is 2 or 3 inputs). They are
   * Resident, so under WebGPU each is uploaded once and later layers and steps read the device copy; host arrays once
   * `weights` has lent them out to be changed.
   */
  private layerFeeds: Record<string, Feed>[];
  private headFeeds: Record<string, Feed>;
  /** Per layer, its quantized weights' feeds to bake into the layer's sessions (DriverOptions.prepack), or undefined. */
  private readonly layerConsts: (SessionConstants | undefined)[];
  /**
   * Per layer, the quantized weights fed dequantized to the f32 layer graph (DriverOptions.dequantizeLayerMaxBytes),
   * by name; empty for a layer that reads them through MatMulNBits (or has none).
   */
  private readonly layerDequant: [string, QuantWeight][][];
  /** The quantization each layer's graph is built for: the layer's own, or none when its weights are dequantized. */
  private readonly graphQuant: QuantLayout[];
  /** Free scratch sets (one is enough for sequential runs; concurrent calls each take their own). */
  private readonly scratchFree: LayerScratch[] = [];

  constructor(config: ModelConfig, weights: DriverWeights, runtime: Runtime, opts: DriverOptions) {
    this.config = config;
    this.dtype = opts.dtype;
    this.buckets = opts.buckets ?? DEFAULT_BUCKETS;
    this.headChunk = opts.headChunk ?? 256;
    this.headGradMode = opts.headGrad ?? 'fused';
    this.headTileValues = opts.headTileValues ?? HEAD_TILE_VALUES;
    this.rt = runtime;
    this.w = weights;
    if (weights.layers.length !== config.numLayers) {
      throw new BadInputError(`driver: ${weights.layers.length} layers of weights for a ${config.numLayers}-layer model`, 'weights');
    }
    const layout = (r: Record<string, FArray | QuantWeight>): QuantLayout => {
      const q: Record<string, QuantSpec> = {};
      for (const [k, v] of Object.entries(r)) if (isQuant(v)) q[k] = v.spec;
      return q;
    };
    this.layerQuant = weights.layers.map(layout);
    const prepack = opts.prepack ?? false;
    const dqMax = prepack ? 0 : (opts.dequantizeLayerMaxBytes ?? DEQUANTIZE_LAYER_MAX_BYTES);
    // On a runtime that keeps weights on the device, dequantized f32 copies would cross to it at every run: the
    // block-quantized weights go up once instead, and the layer graphs read them through MatMulNBits. Not with zero
    // points: ORT 1.30's WebGPU MatMulNBits has no kernel for float zero points (the op probe lists that variant).
    const onDevice = (q: [string, QuantWeight][]): boolean => runtime.deviceResident && opts.dequantizeLayerMaxBytes === undefined && q.every(([, w]) => !w.spec.zeroPoints);
    this.layerDequant = weights.layers.map((r) => {
      const q = Object.entries(r).filter((e): e is [string, QuantWeight] => isQuant(e[1]));
      const bytes = Object.values(r).reduce((n, v) => n + 4 * (isQuant(v) ? v.rows * v.cols : v.length), 0);
      return q.length > 0 && bytes <= dqMax && !onDevice(q) && this.dtype === 'float32' ? q : [];
    });
    this.graphQuant = this.layerQuant.map((q, i) => (this.layerDequant[i]!.length > 0 ? {} : q));
    this.layoutKeys = this.graphQuant.map((q) => JSON.stringify(Object.entries(q).sort()));
    // ORT 1.30's WebGPU MatMulNBits has no kernel with float zero points (the op probe lists it): on a runtime that
    // keeps weights on the device, such an lm_head is dequantized to f32 once and goes up as that.
    const L0 = weights.lmHead;
    this.lmHead = runtime.deviceResident && isQuant(L0) && L0.spec.zeroPoints ? dequantize(L0) : L0;
    this.headQuant = isQuant(this.lmHead) ? this.lmHead.spec : null;
    this.recomputeAbove = opts.recomputeAbove ?? (this.quantized ? RECOMPUTE_ABOVE_QUANT : 512);
    if (this.quantized && this.dtype !== 'float32') throw new BadInputError('driver: quantized weights run in float32 only (MatMulNBits has no float64 kernel)', 'dtype');
    const feeds = (r: Record<string, FArray | QuantWeight>): Record<string, Feed> => {
      const f: Record<string, Feed> = {};
      for (const [k, v] of Object.entries(r)) {
        if (isQuant(v)) for (const [n, a] of Object.entries(quantFeeds(k, v))) f[n] = new Resident(a);
        else f[k] = new Resident(v);
      }
      return f;
    };
    this.layerFeeds = weights.layers.map((r, i) => (this.layerDequant[i]!.length > 0 ? feeds(Object.fromEntries(Object.entries(r).filter(([, v]) => !isQuant(v)))) : feeds(r)));
    this.layerConsts = weights.layers.map((r, i) => {
      const values: Record<string, Float32Array | Uint8Array> = {};
      for (const [k, v] of Object.entries(r)) if (isQuant(v)) Object.assign(values, quantFeeds(k, v));
      return prepack && Object.keys(values).length > 0 ? { id: `layer${i}`, values } : undefined;
    });
    this.headFeeds = { norm: new Resident(weights.norm), ...feeds({ lm_head: this.lmHead }) };
    const W = this.lmHead;
    if (!isQuant(W)) {
      // The tiled head graphs read the f32 lm_head as row tiles: views of the one buffer.
      headTileRanges(config.vocabSize, config.hiddenSize, this.headTileValues).forEach(([r0, r1], k) => {
        this.headFeeds[headTileName(k)] = new Resident(W.subarray(r0 * config.hiddenSize, r1 * config.hiddenSize));
      });
    }
    this.family = modelGraphs(config);
    // The vocabulary in tiles (head.ts): the [chunk, V] logits, their log-softmax and its cotangent never exist.
    const tiles = { tileValues: this.headTileValues };
    this.head = this.family.head(this.dtype, 'none', this.headQuant, tiles);
    this.headGrad = this.family.head(this.dtype, this.headGradMode, this.headQuant, tiles);
    this.logits = this.family.logits(this.dtype, this.headQuant);
  }

  /** The f32 weights the graphs are fed; pretraining (node/demo) updates them in place. Throws for a quantized base. */
  get weights(): F32Weights {
    if (this.quantized) throw new BadInputError('this base is block-quantized: its weights are frozen (load it with quantized: false to train them all)', 'weights');
    // The caller may change them in place, which a device copy would not see: from now on they are fed from the host.
    const host = (f: Record<string, Feed>): Record<string, Feed> => {
      const out: Record<string, Feed> = {};
      for (const [k, v] of Object.entries(f)) {
        if (v instanceof Resident) v.release();
        out[k] = v instanceof Resident ? v.data : v;
      }
      return out;
    };
    this.layerFeeds = this.layerFeeds.map(host);
    this.headFeeds = host(this.headFeeds);
    return this.w as F32Weights;
  }

  /** Whether any base weight is block-quantized. */
  get quantized(): boolean {
    return this.layerQuant.some((q) => Object.keys(q).length > 0) || this.headQuant !== null || isQuant(this.w.embed);
  }

  /** The padded length for n tokens. */
  bucket(n: number): number {
    for (const b of this.buckets) if (n <= b) return b;
    const last = this.buckets[this.buckets.length - 1]!;
    return Math.ceil(n / last) * last;
  }

  private alloc(n: number): FArray {
    return this.dtype === 'float64' ? new Float64Array(n) : new Float32Array(n);
  }

  private cast(a: FArray): FArray {
    if (this.dtype === 'float64') return a instanceof Float64Array ? a : Float64Array.from(a);
    return a instanceof Float32Array ? a : Float32Array.from(a);
  }

  /** Layer i's RoPE tables and mask at T tokens (Gemma's local and global layers differ; other families share one). */
  private shapeTables(T: number, layer: number): LayerTables {
    const kind = this.family.layerKind(layer);
    const key = `${kind}|${T}`;
    let t = this.tables.get(key);
    if (t === undefined) {
      const { cos, sin, mask } = this.family.tables(kind, T);
      t = { cos: new Resident(this.cast(cos)), sin: new Resident(this.cast(sin)), mask: new Resident(this.cast(mask)) };
      this.tables.set(key, t);
    }
    return t;
  }

  private checkTokens(tokens: readonly number[]): void {
    const V = this.config.vocabSize;
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i]!;
      if (!Number.isInteger(t) || t < 0 || t >= V) throw new BadInputError(`token ${i} is ${t}, outside the vocabulary [0, ${V})`, 'tokens');
    }
  }

  /** The embedding step: row copies of embed_tokens, zero rows for the padding. [T, H] */
  private embed(tokens: readonly number[], T: number): FArray {
    const H = this.config.hiddenSize;
    const x = this.alloc(T * H);
    const E = this.w.embed;
    for (let t = 0; t < tokens.length; t++) {
      const r = tokens[t]!;
      if (isQuant(E)) dequantizeRows(E, r, r + 1, x.subarray(t * H, (t + 1) * H) as Float32Array);
      else x.set(E.subarray(r * H, (r + 1) * H), t * H);
    }
    const scale = this.family.embedScale(this.dtype);
    if (scale !== 1) for (let i = 0; i < tokens.length * H; i++) x[i] *= scale;
    return x;
  }

  private loraPlan(adapter: LoraAdapter): LoraPlan {
    const spec: LayerLora = { targets: [...new Set(adapter.pairs.map((p) => p.module))], r: adapter.spec.r, scale: loraScale(adapter.spec) };
    const L = this.config.numLayers;
    const feeds: Record<string, Resident>[] = Array.from({ length: L }, () => ({}));
    const slots: LoraPlan['slots'] = Array.from({ length: L }, () => []);
    adapter.pairs.forEach((p, k) => {
      if (p.layer < 0 || p.layer >= L) throw new BadInputError(`adapter pair ${p.baseKey} names layer ${p.layer} of a ${L}-layer model`, 'adapter');
      const n = loraInputNames(p.module);
      feeds[p.layer]![n.a] = new Resident(this.cast(p.a));
      feeds[p.layer]![n.b] = new Resident(this.cast(p.b));
      slots[p.layer]!.push({ name: n.a, pair: k, which: 'a' }, { name: n.b, pair: k, which: 'b' });
    });
    // One layer graph serves all layers, so every layer must carry the same modules (PEFT adapters from Rein do).
    const want = spec.targets.length * 2;
    for (let i = 0; i < L; i++) {
      if (slots[i]!.length !== want) throw new BadInputError(`adapter: layer ${i} has ${slots[i]!.length / 2} LoRA pairs, expected ${spec.targets.length} (${spec.targets.join(', ')})`, 'adapter');
    }
    return { spec, feeds, slots };
  }

  /** Layer i's graph without LoRA. */
  private baseLayer(i: number): Graph {
    let g = this.baseLayers.get(this.layoutKeys[i]!);
    if (g === undefined) {
      g = this.family.layer(this.dtype, null, this.graphQuant[i]!);
      this.baseLayers.set(this.layoutKeys[i]!, g);
    }
    return g;
  }

  private loraGraphsFor(spec: LayerLora, layer: number): LoraGraphs {
    const key = `${[...spec.targets].sort().join(',')}|${spec.r}|${spec.scale}|${this.layoutKeys[layer]!}`;
    let g = this.loraGraphs.get(key);
    if (g === undefined) {
      const graph = this.family.layer(this.dtype, spec, this.graphQuant[layer]!);
      const wrt = ['x', ...spec.targets.flatMap((m) => [loraInputNames(m).a, loraInputNames(m).b])];
      g = { graph, split: vjpSplit(graph, { outputs: ['y'], wrt }), recompute: vjpSplit(graph, { outputs: ['y'], wrt, recompute: true }) };
      this.loraGraphs.set(key, g);
    }
    return g;
  }

  /**
   * Runs a graph of layer i: its weight feeds are added to `feeds` (quantized ones dequantized into a scratch set
   * when the layer's graph is the f32 one), and its prepacked constants passed on.
   */
  private async runLayer(i: number, graph: Graph, bind: { T: number }, feeds: Record<string, Feed>, keep: readonly string[], fetch?: readonly string[]): Promise<{ kept: Record<string, Feed>; out: Record<string, HostTensor> }> {
    const dq = this.layerDequant[i]!;
    if (dq.length === 0) return this.rt.runKeep(graph, bind, { ...feeds, ...this.layerFeeds[i]! }, keep, fetch, this.layerConsts[i]);
    const s = this.scratchFree.pop() ?? this.newScratch();
    try {
      const w: Record<string, Float32Array> = {};
      for (const [k, q] of dq) {
        const b = s.buffers.get(k)!;
        const n = q.rows * q.cols;
        w[k] = b.length === n ? b : b.subarray(0, n);
      }
      if (s.layer !== i) {
        for (const [k, q] of dq) {
          if (s.simd !== null) s.simd.dequantize(q, w[k]!);
          else dequantizeRows(q, 0, q.rows, w[k]);
        }
        s.layer = i;
      }
      return await this.rt.runKeep(graph, bind, { ...feeds, ...this.layerFeeds[i]!, ...w }, keep, fetch);
    } finally {
      this.scratchFree.push(s);
    }
  }

  /**
   * A scratch set: one buffer per weight name, the size of that name's largest weight over the layers. They live in a
   * WebAssembly SIMD arena, which dequantizes ~6× faster than the JS loop and to the same bits (dequant-simd.ts), or
   * are plain buffers the JS loop fills where this runtime has no SIMD or the arena would pass 4 GiB.
   */
  private newScratch(): LayerScratch {
    const largest = new Map<string, number>();
    let blocks = 0;
    for (const dq of this.layerDequant) {
      for (const [k, q] of dq) {
        largest.set(k, Math.max(largest.get(k) ?? 0, q.rows * q.cols));
        blocks = Math.max(blocks, (q.rows * q.cols) / QUANT_BLOCK);
      }
    }
    let simd: SimdDequantizer | null = null;
    if (simdDequantAvailable()) {
      try {
        // Each buffer rounds up to 16 bytes in the arena.
        simd = new SimdDequantizer([...largest.values()].reduce((a, n) => a + n + 4, 0), blocks);
      } catch (e) {
        if (!(e instanceof RangeError)) throw e;
      }
    }
    const buffers = new Map<string, Float32Array>();
    for (const [k, n] of largest) buffers.set(k, simd === null ? new Float32Array(n) : simd.alloc(n));
    return { layer: -1, buffers, simd };
  }

  /**
   * Runs every layer forward; returns the last layer's output [T, H] on the host. Under WebGPU each layer's output
   * stays on the device for the next layer. `tables`: layer i's (a pack's), else the causal ones.
   */
  private async layersForward(x0: FArray, T: number, plan: LoraPlan | null, tables?: (i: number) => LayerTables): Promise<FArray> {
    const L = this.config.numLayers;
    let x: Feed = x0;
    for (let i = 0; i < L; i++) {
      const graph = plan === null ? this.baseLayer(i) : this.loraGraphsFor(plan.spec, i).graph;
      const tab = tables?.(i) ?? this.shapeTables(T, i);
      const feeds: Record<string, Feed> = { x, rope_cos: tab.cos, rope_sin: tab.sin, mask: tab.mask, ...(plan?.feeds[i] ?? {}) };
      const r = await this.runLayer(i, graph, { T }, feeds, i < L - 1 ? ['y'] : [], i < L - 1 ? [] : ['y']);
      free(x);
      x = r.kept['y'] ?? r.out['y']!.data;
    }
    return x as FArray;
  }

  /** The embedding and every layer with `adapter`'s LoRA (its device copies, if any, freed after). [T, H] */
  private async forward(tokens: readonly number[], T: number, adapter: LoraAdapter | null): Promise<FArray> {
    const plan = adapter === null ? null : this.loraPlan(adapter);
    try {
      return await this.layersForward(this.embed(tokens, T), T, plan);
    } finally {
      if (plan !== null) releasePlan(plan);
    }
  }

  /** The head over rows [r0, r1) of h, predicting targets[r − r0]; chunked. */
  private async headRows(h: FArray, rows: number, targets: readonly number[], dlogpOut: FArray | null): Promise<Float64Array> {
    const H = this.config.hiddenSize;
    const C = Math.min(this.headChunk, this.bucket(rows));
    const logp = new Float64Array(rows);
    const graph = dlogpOut === null ? this.head : this.headGrad;
    for (let r0 = 0; r0 < rows; r0 += C) {
      const n = Math.min(C, rows - r0);
      let hc = h.subarray(r0 * H, (r0 + n) * H) as FArray;
      if (n < C) {
        // Zero rows normalise to zero (x/√(0+eps)), so the padding is finite and its outputs are dropped.
        const p = this.alloc(C * H);
        p.set(hc);
        hc = p;
      }
      const tg = new BigInt64Array(C);
      for (let i = 0; i < n; i++) tg[i] = BigInt(targets[r0 + i]!);
      const out = await this.rt.run(graph, { T: C }, { h: hc, ...this.headFeeds, targets: tg, 'lm_head.rows': this.headRowsOf(targets, r0, n, C) });
      const lp = out['logp']!.data as FArray;
      for (let i = 0; i < n; i++) logp[r0 + i] = lp[i]!;
      if (dlogpOut !== null) dlogpOut.set((out['dlogp_dh']!.data as FArray).subarray(0, n * H), r0 * H);
    }
    return logp;
  }

  /** The lm_head's rows of targets[r0 .. r0 + n), [C, H] (zero rows past n): what the tiled head reads as W[targets]. */
  private headRowsOf(targets: readonly number[], r0: number, n: number, C: number): FArray {
    const H = this.config.hiddenSize;
    const W = this.lmHead;
    const out = this.alloc(C * H);
    for (let i = 0; i < n; i++) {
      const t = targets[r0 + i]!;
      if (isQuant(W)) dequantizeRows(W, t, t + 1, out.subarray(i * H, (i + 1) * H) as Float32Array);
      else out.set(W.subarray(t * H, (t + 1) * H), i * H);
    }
    return out;
  }

  private checkSpan(tokens: readonly number[], start: number): void {
    this.checkTokens(tokens);
    if (!Number.isInteger(start) || start < 1 || start >= tokens.length) {
      throw new BadInputError(`start must be an integer in [1, ${tokens.length - 1}] (the first scored token), got ${start}`, 'start');
    }
  }

  /** log p(tokens[t] | tokens[<t]) for t in [start, n). */
  async logprobs(tokens: readonly number[], start: number, adapter: LoraAdapter | null): Promise<Float64Array> {
    this.checkSpan(tokens, start);
    const T = this.bucket(tokens.length);
    const h = await this.forward(tokens, T, adapter);
    const H = this.config.hiddenSize;
    // Row t−1 predicts token t.
    return this.headRows(h.subarray((start - 1) * H, (tokens.length - 1) * H) as FArray, tokens.length - start, tokens.slice(start), null);
  }

  /** Log-probabilities over the whole vocabulary for the next token after `tokens`: [V]. */
  async nextLogprobs(tokens: readonly number[], adapter: LoraAdapter | null): Promise<FArray> {
    this.checkTokens(tokens);
    if (tokens.length === 0) throw new BadInputError('nextLogprobs needs at least one token', 'tokens');
    const T = this.bucket(tokens.length);
    const h = await this.forward(tokens, T, adapter);
    const H = this.config.hiddenSize;
    const last = h.slice((tokens.length - 1) * H, tokens.length * H) as FArray;
    return (await this.rt.run(this.logits, { T: 1 }, { h: last, ...this.headFeeds }))['logp_all']!.data as FArray;
  }

  /**
   * The last decoder layer's output for every real token: [n, H] (padding rows dropped). The reward model
   * (node/reward/features.ts) mean-pools the answer's rows of it.
   */
  async hiddenStates(tokens: readonly number[], adapter: LoraAdapter | null): Promise<FArray> {
    this.checkTokens(tokens);
    if (tokens.length === 0) throw new BadInputError('hiddenStates needs at least one token', 'tokens');
    const T = this.bucket(tokens.length);
    const h = await this.forward(tokens, T, adapter);
    return h.slice(0, tokens.length * this.config.hiddenSize) as FArray;
  }

  /**
   * Log-probabilities over the whole vocabulary after every prefix of `tokens`, from one forward pass: row t ([V])
   * scores the token after tokens[0..t]. The causal mask makes row t equal nextLogprobs(tokens[0..t]).
   */
  async positionLogprobs(tokens: readonly number[], adapter: LoraAdapter | null): Promise<FArray[]> {
    this.checkTokens(tokens);
    if (tokens.length === 0) throw new BadInputError('positionLogprobs needs at least one token', 'tokens');
    const T = this.bucket(tokens.length);
    const h = await this.forward(tokens, T, adapter);
    const H = this.config.hiddenSize;
    const V = this.config.vocabSize;
    const n = tokens.length;
    const all = (await this.rt.run(this.logits, { T: n }, { h: h.slice(0, n * H) as FArray, ...this.headFeeds }))['logp_all']!.data as FArray;
    return Array.from({ length: n }, (_, t) => all.slice(t * V, (t + 1) * V) as FArray);
  }

  /**
   * Forward with residuals, the objective's cotangent, then the backward layer by layer. `cotangent` maps the
   * policy's logps of tokens[start..n) to dLoss/dlogp (the objective runs between the two passes).
   */
  async grad(tokens: readonly number[], start: number, adapter: LoraAdapter, cotangent: (logp: Float64Array) => Float64Array | Promise<Float64Array>): Promise<SequenceGrad> {
    this.checkSpan(tokens, start);
    const plan = this.loraPlan(adapter);
    try {
      return await this.gradWith(tokens, start, adapter, plan, cotangent);
    } finally {
      releasePlan(plan);
    }
  }

  private async gradWith(tokens: readonly number[], start: number, adapter: LoraAdapter, plan: LoraPlan, cotangent: (logp: Float64Array) => Float64Array | Promise<Float64Array>): Promise<SequenceGrad> {
    const T = this.bucket(tokens.length);
    // Row t−1 predicts token t.
    const rows = Int32Array.from({ length: tokens.length - start }, (_, r) => start - 1 + r);
    const r = await this.gradRows(this.embed(tokens, T), T, (i) => this.shapeTables(T, i), rows, tokens.slice(start), adapter, plan, cotangent);
    return { logp: r.logp, grads: r.grads };
  }

  /**
   * grad for sequences that begin with the same `prefix` ids, in one run: the prefix once, then each member's
   * suffix, under a mask that lets each suffix see the prefix and itself only, at the positions it has alone
   * (composites.ts packedMaskTable, PackedRows). Every suffix row so computes what it computes in its own sequence,
   * and the backward sums the prefix's cotangent over the members in the same pass: the result is the sum of the
   * members' grad() runs, to float rounding, at the cost of one sequence of P + Σ (nᵢ − P) tokens. `cotangent` maps
   * the members' logps to their dLoss/dlogp, in the members' order. Each member needs 1 ≤ prefix ≤ start (its scored
   * tokens are its own: the first one may follow the prefix's last row, which then predicts for several members).
   */
  async packedGrad(prefix: number, members: readonly PackMember[], adapter: LoraAdapter, cotangent: (logps: Float64Array[]) => Float64Array[] | Promise<Float64Array[]>): Promise<PackGrad> {
    const p = this.pack(prefix, members);
    const plan = this.loraPlan(adapter);
    try {
      const r = await this.gradRows(this.embed(p.tokens, p.T), p.T, p.tables, p.rows, p.targets, adapter, plan, async (logp) => {
        const d = await cotangent(p.split(logp));
        if (d.length !== members.length) throw new BadInputError(`the objective gave cotangents for ${d.length} of a pack's ${members.length} sequences`, 'objective');
        const all = new Float64Array(logp.length);
        d.forEach((x, k) => {
          if (x.length !== p.spans[k]![1] - p.spans[k]![0]) throw new BadInputError(`the objective gave ${x.length} cotangents for ${p.spans[k]![1] - p.spans[k]![0]} tokens`, 'objective');
          all.set(x, p.spans[k]![0]);
        });
        return all;
      });
      return { logps: p.split(r.logp), grads: r.grads };
    } finally {
      releasePlan(plan);
    }
  }

  /** logprobs for the members of a pack, from one forward (see packedGrad): per member, tokens[start..n). */
  async packedLogprobs(prefix: number, members: readonly PackMember[], adapter: LoraAdapter | null): Promise<Float64Array[]> {
    const p = this.pack(prefix, members);
    const plan = adapter === null ? null : this.loraPlan(adapter);
    let h: FArray;
    try {
      h = await this.layersForward(this.embed(p.tokens, p.T), p.T, plan, p.tables);
    } finally {
      if (plan !== null) releasePlan(plan);
    }
    const H = this.config.hiddenSize;
    const hRows = this.alloc(p.rows.length * H);
    p.rows.forEach((row, r) => hRows.set(h.subarray(row * H, (row + 1) * H), r * H));
    return p.split(await this.headRows(hRows, p.rows.length, p.targets, null));
  }

  /**
   * A pack's rows: the prefix, then each member's suffix, padded to a bucket. `rows` and `targets` list, member by
   * member, the row that predicts each scored token and that token; `spans` is each member's range of them.
   */
  private pack(prefix: number, members: readonly PackMember[]): {
    tokens: number[];
    T: number;
    tables: (i: number) => LayerTables;
    rows: Int32Array;
    targets: number[];
    spans: [number, number][];
    split: (all: Float64Array) => Float64Array[];
  } {
    if (members.length === 0) throw new BadInputError('a pack needs at least one sequence', 'members');
    const head = members[0]!.tokens;
    members.forEach((m, k) => {
      this.checkSpan(m.tokens, m.start);
      if (!Number.isInteger(prefix) || prefix < 1 || prefix > m.start) {
        throw new BadInputError(`a pack's prefix must be an integer in [1, ${m.start}] (sequence ${k}'s first scored token), got ${prefix}`, 'prefix');
      }
      for (let t = 0; t < prefix; t++) {
        if (m.tokens[t] !== head[t]) throw new BadInputError(`sequence ${k} of a pack differs from the first at token ${t}, inside the shared prefix of ${prefix}`, 'members');
      }
    });
    const tokens = head.slice(0, prefix);
    const positions: number[] = [...Array(prefix).keys()];
    const segments: number[] = Array<number>(prefix).fill(0);
    const rows: number[] = [];
    const targets: number[] = [];
    const spans: [number, number][] = [];
    members.forEach((m, k) => {
      const off = tokens.length;
      for (let t = prefix; t < m.tokens.length; t++) {
        tokens.push(m.tokens[t]!);
        positions.push(t);
        segments.push(k + 1);
      }
      const r0 = rows.length;
      // Row t−1 predicts token t: the prefix's last row for a first scored token right after the prefix.
      for (let t = m.start; t < m.tokens.length; t++) {
        rows.push(t - 1 < prefix ? t - 1 : off + (t - 1 - prefix));
        targets.push(m.tokens[t]!);
      }
      spans.push([r0, rows.length]);
    });
    const T = this.bucket(tokens.length);
    for (let t = tokens.length; t < T; t++) {
      positions.push(0);
      segments.push(-1);
    }
    const packed = { positions: Int32Array.from(positions), segments: Int32Array.from(segments) };
    const byKind = new Map<string, LayerTables>();
    const tables = (i: number): LayerTables => {
      const kind = this.family.layerKind(i);
      let t = byKind.get(kind);
      if (t === undefined) {
        const { cos, sin, mask } = this.family.packedTables(kind, packed, this.dtype);
        t = { cos: this.cast(cos), sin: this.cast(sin), mask: this.cast(mask) };
        byKind.set(kind, t);
      }
      return t;
    };
    return { tokens, T, tables, rows: Int32Array.from(rows), targets, spans, split: (all) => spans.map(([a, b]) => all.slice(a, b)) };
  }

  /**
   * Forward with residuals over x0 [T, H], the head on `rows` (each predicting targets[r]), the objective's
   * cotangent, then the backward layer by layer: grad's and packedGrad's one body. A row may predict for several
   * scored tokens (a pack's prefix row), so its cotangents add up.
   */
  private async gradRows(
    x0: FArray,
    T: number,
    tables: (i: number) => LayerTables,
    rows: Int32Array,
    targets: readonly number[],
    adapter: LoraAdapter,
    plan: LoraPlan,
    cotangent: (logp: Float64Array) => Float64Array | Promise<Float64Array>,
  ): Promise<{ logp: Float64Array; grads: { a: FArray; b: FArray }[] }> {
    const H = this.config.hiddenSize;
    const L = this.config.numLayers;
    const recompute = T > this.recomputeAbove;
    const splitOf = (i: number): VjpSplit => (recompute ? this.loraGraphsFor(plan.spec, i).recompute : this.loraGraphsFor(plan.spec, i).split);
    const bind = { T };

    // Forward, keeping per layer what the backward needs: the residuals, or only the layer input when recomputing.
    // Under WebGPU they stay on the device, with each layer's output; the last layer's output comes to the host.
    const saved: Record<string, Feed>[] = [];
    let x: Feed = x0;
    for (let i = 0; i < L; i++) {
      const tab = tables(i);
      const feeds: Record<string, Feed> = { x, rope_cos: tab.cos, rope_sin: tab.sin, mask: tab.mask, ...plan.feeds[i]! };
      const last = i === L - 1;
      const residuals = recompute ? [] : splitOf(i).residuals;
      const graph = recompute ? this.loraGraphsFor(plan.spec, i).graph : splitOf(i).forward;
      const r = await this.runLayer(i, graph, bind, feeds, last ? residuals : ['y', ...residuals], last ? ['y'] : []);
      saved.push({ x, ...r.kept });
      delete saved[i]!['y'];
      x = r.kept['y'] ?? r.out['y']!.data;
    }
    const h = x as FArray;

    const n = rows.length;
    const hRows = this.alloc(n * H);
    for (let r = 0; r < n; r++) hRows.set(h.subarray(rows[r]! * H, (rows[r]! + 1) * H), r * H);
    const dlogpDh = this.alloc(n * H);
    const logp = await this.headRows(hRows, n, targets, dlogpDh);
    const dlogp = await cotangent(logp);
    if (dlogp.length !== n) throw new BadInputError(`the objective gave ${dlogp.length} cotangents for ${n} tokens`, 'objective');
    const dyTop = this.alloc(T * H);
    for (let r = 0; r < n; r++) {
      const d = dlogp[r]!;
      const o = rows[r]! * H;
      for (let j = 0; j < H; j++) dyTop[o + j]! += d * dlogpDh[r * H + j]!;
    }

    // Backward: the LoRA gradients come to the host (the optimizer runs there); d_x stays on the device for the layer
    // below, and the first layer's is not computed at all.
    const grads = adapter.pairs.map((p) => ({ a: this.alloc(p.a.length), b: this.alloc(p.b.length) }));
    let dy: Feed = dyTop;
    for (let i = L - 1; i >= 0; i--) {
      const tab = tables(i);
      const feeds: Record<string, Feed> = { rope_cos: tab.cos, rope_sin: tab.sin, mask: tab.mask, ...plan.feeds[i]!, ...saved[i]!, d_y: dy };
      const split = splitOf(i);
      const dx = split.gradients['x']!;
      const r = await this.runLayer(i, split.backward, bind, feeds, i > 0 ? [dx] : [], plan.slots[i]!.map((s) => split.gradients[s.name]!));
      for (const v of Object.values(saved[i]!)) free(v);
      saved[i] = {};
      free(dy);
      for (const s of plan.slots[i]!) grads[s.pair]![s.which].set(r.out[split.gradients[s.name]!]!.data as FArray);
      dy = r.kept[dx] ?? dyTop;
    }
    return { logp, grads };
  }

  /**
   * Full-parameter gradient, for pretraining: as `grad`, but toward every weight rather than a LoRA adapter. The
   * layer graph's weights are graph inputs, so the same autodiff splits it over them; the head (norm, lm_head) is
   * differentiated by its own split, recomputed per chunk so no [T, V] value is kept. Tied embeddings get the
   * lm_head gradient plus the scatter of the input gradient into the rows of the tokens read.
   */
  async fullGrad(tokens: readonly number[], start: number, cotangent: (logp: Float64Array) => Float64Array): Promise<FullGrad> {
    this.checkSpan(tokens, start);
    const T = this.bucket(tokens.length);
    const H = this.config.hiddenSize;
    const L = this.config.numLayers;
    const w = this.weights; // f32 only: every weight gets a gradient
    const names = Object.keys(w.layers[0]!);
    this.fullGraphs ??= {
      layer: vjpSplit(this.baseLayer(0), { outputs: ['y'], wrt: ['x', ...names] }),
      // The untiled head: its gradient toward the whole lm_head input.
      head: vjpSplit(this.family.head(this.dtype, 'none', null), { outputs: ['logp'], wrt: ['h', 'norm', 'lm_head'], recompute: true }),
    };
    const { layer, head } = this.fullGraphs;
    const bind = { T };
    const saved: Record<string, Feed>[] = [];
    let x = this.embed(tokens, T);
    for (let i = 0; i < L; i++) {
      const tab = this.shapeTables(T, i);
      const out = await this.rt.run(layer.forward, bind, { x, rope_cos: tab.cos, rope_sin: tab.sin, mask: tab.mask, ...this.layerFeeds[i]! });
      const res: Record<string, Feed> = { x };
      for (const r of layer.residuals) res[r] = out[r]!.data;
      saved.push(res);
      x = out['y']!.data as FArray;
    }
    const rows = tokens.length - start;
    const hRows = x.subarray((start - 1) * H, (tokens.length - 1) * H) as FArray;
    const targets = tokens.slice(start);
    const logp = await this.headRows(hRows, rows, targets, null);
    const dlogp = cotangent(logp);
    if (dlogp.length !== rows) throw new BadInputError(`the objective gave ${dlogp.length} cotangents for ${rows} tokens`, 'objective');

    const V = this.config.vocabSize;
    const gNorm = new Float64Array(H);
    const gHead = new Float64Array(V * H);
    let dy = this.alloc(T * H);
    const C = this.headChunk;
    for (let r0 = 0; r0 < rows; r0 += C) {
      const n = Math.min(C, rows - r0);
      const hc = this.alloc(C * H);
      hc.set(hRows.subarray(r0 * H, (r0 + n) * H));
      const tg = new BigInt64Array(C);
      const d = this.alloc(C);
      for (let i = 0; i < n; i++) {
        tg[i] = BigInt(targets[r0 + i]!);
        d[i] = dlogp[r0 + i]!;
      }
      const out = await this.rt.run(head.backward, { T: C }, { h: hc, norm: w.norm, lm_head: w.lmHead, targets: tg, [head.cotangents['logp']!]: d });
      dy.set((out[head.gradients['h']!]!.data as FArray).subarray(0, n * H), (start - 1 + r0) * H);
      addInto(gNorm, out[head.gradients['norm']!]!.data as FArray);
      addInto(gHead, out[head.gradients['lm_head']!]!.data as FArray);
    }

    const gLayers: Record<string, Float64Array>[] = Array.from({ length: L }, () => ({}));
    for (let i = L - 1; i >= 0; i--) {
      const tab = this.shapeTables(T, i);
      const out = await this.rt.run(layer.backward, bind, { rope_cos: tab.cos, rope_sin: tab.sin, mask: tab.mask, ...this.layerFeeds[i]!, ...saved[i]!, d_y: dy });
      saved[i] = {};
      for (const nm of names) gLayers[i]![nm] = Float64Array.from(out[layer.gradients[nm]!]!.data as FArray);
      dy = out[layer.gradients['x']!]!.data as FArray;
    }
    // The embedding is a row copy (scaled for Gemma), so its gradient is the input gradient added into each token's row.
    const scale = this.family.embedScale(this.dtype);
    const tied = w.lmHead === w.embed;
    const gEmbed = tied ? gHead : new Float64Array(w.embed.length);
    for (let t = 0; t < tokens.length; t++) {
      const o = tokens[t]! * H;
      for (let j = 0; j < H; j++) gEmbed[o + j]! += scale * dy[t * H + j]!;
    }
    return { logp, grads: { layers: gLayers, embed: gEmbed, norm: gNorm, lmHead: tied ? null : gHead } };
  }
}

function releasePlan(plan: LoraPlan): void {
  for (const f of plan.feeds) for (const r of Object.values(f)) r.release();
}

/** Frees a device tensor the driver is done with now, rather than when the garbage collector finds it. */
function free(v: Feed): void {
  if (v instanceof DeviceTensor) v.dispose();
}

function addInto(acc: Float64Array, a: ArrayLike<number>): void {
  for (let i = 0; i < acc.length; i++) acc[i]! += a[i]!;
}
