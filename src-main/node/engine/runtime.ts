// ORT sessions for IR graphs: one InferenceSession per (graph, bound dims, provider), created on first use and
// cached, because creating one costs milliseconds for a small graph and seconds for a large one (TOOLCHAIN.md). Inputs
// and outputs are typed arrays by name.

import os from 'node:os';
import ort from 'onnxruntime-node';
import { BadInputError, ReinError } from '../../common/errors.ts';
import { type Bindings, type DType, type Graph, bindShape, shapeSymbols } from '../../common/engine/ir.ts';
import { prepackedInputs, toOnnx } from './onnx.ts';

export type ExecutionProvider = 'cpu' | 'cuda' | 'dml' | 'webgpu';
export const EXECUTION_PROVIDERS: readonly ExecutionProvider[] = ['cpu', 'cuda', 'dml', 'webgpu'];

/** The execution provider asked for cannot run here; `missing` says what would make it work. */
export class ProviderUnavailableError extends ReinError {
  readonly provider: string;
  constructor(provider: string, missing: string, cause?: unknown) {
    super('not_available', `execution provider '${provider}' is not available: ${missing}`, { detail: { provider }, cause });
    this.name = 'ProviderUnavailableError';
    this.provider = provider;
  }
}

export type HostArray = Float32Array | Float64Array | BigInt64Array | Uint8Array;
export interface HostTensor {
  data: HostArray;
  dims: number[];
}
/** A feed: a typed array of the input's dtype (int64 may also be Int32Array/number[], bool a boolean[]). */
export type Feed = HostArray | Int32Array | readonly number[] | readonly boolean[] | HostTensor;

export interface RuntimeOptions {
  provider?: ExecutionProvider;
  /** Threads for one op; defaults to the machine's available parallelism. */
  intraOpThreads?: number;
  /** ORT graph optimisation level; by default 'all', and 'basic' for graphs that compute in float64 (see create). */
  optimization?: 'disabled' | 'basic' | 'extended' | 'all';
}

const ORT_TYPE: Record<DType, ort.Tensor.Type> = { float32: 'float32', float64: 'float64', int64: 'int64', bool: 'bool', uint8: 'uint8' };

function providerMissing(p: ExecutionProvider): string {
  switch (p) {
    case 'cuda':
      // onnxruntime-node/script/install.js: the CUDA EP binaries are fetched only when asked for.
      return "onnxruntime-node ships without the CUDA provider's libraries; with CUDA 12 and cuDNN 9 installed, rerun onnxruntime-node's install script with ONNXRUNTIME_NODE_INSTALL=cuda12";
    case 'dml':
      return 'DirectML is only bundled on Windows (x64/arm64) builds of onnxruntime-node';
    case 'webgpu':
      return 'no WebGPU adapter could be created (a GPU with Vulkan/Metal/D3D12 drivers is needed)';
    case 'cpu':
      return 'the CPU provider failed to load';
  }
}

function isHostTensor(f: Feed): f is HostTensor {
  return !ArrayBuffer.isView(f) && !Array.isArray(f) && typeof f === 'object' && 'data' in f;
}

// A feed of the wrong typed array (float32 for a float64 graph) is refused, not converted: it would silently change
// precision. Plain arrays are converted.
function toOrtTensor(name: string, dtype: DType, dims: number[], feed: Feed): ort.Tensor {
  const n = dims.reduce((p, d) => p * d, 1);
  const raw = isHostTensor(feed) ? feed.data : feed;
  const wrong = (): never => {
    throw new BadInputError(`input '${name}' is ${dtype}, got a ${Array.isArray(raw) ? 'array' : raw.constructor.name}`, name);
  };
  let data: HostArray;
  if (dtype === 'float32') data = raw instanceof Float32Array ? raw : Array.isArray(raw) ? Float32Array.from(raw as number[]) : wrong();
  else if (dtype === 'float64') data = raw instanceof Float64Array ? raw : Array.isArray(raw) ? Float64Array.from(raw as number[]) : wrong();
  else if (dtype === 'int64') {
    data = raw instanceof BigInt64Array ? raw : raw instanceof Int32Array || Array.isArray(raw) ? BigInt64Array.from(Array.from(raw as ArrayLike<number>, (v) => BigInt(v))) : wrong();
  } else data = raw instanceof Uint8Array ? raw : Array.isArray(raw) ? Uint8Array.from(raw as (number | boolean)[], (v) => (v ? 1 : 0)) : wrong();
  if (data.length !== n) throw new BadInputError(`input '${name}' needs ${n} ${dtype} values for [${dims.join(', ')}], got ${data.length}`, name);
  return new ort.Tensor(ORT_TYPE[dtype], data, dims);
}

/** One graph compiled for one bucket: its ORT session and the bound input/output types. */
export class CompiledGraph {
  readonly graph: Graph;
  readonly bindings: Bindings;
  readonly provider: ExecutionProvider;
  readonly session: ort.InferenceSession;
  private readonly inputs: { name: string; dtype: DType; dims: number[] }[];
  private disposed = false;

  constructor(graph: Graph, bindings: Bindings, provider: ExecutionProvider, session: ort.InferenceSession) {
    this.graph = graph;
    this.bindings = bindings;
    this.provider = provider;
    this.session = session;
    const used = new Set(session.inputNames);
    this.inputs = graph.inputs
      .map((t) => ({ name: t.node.attrs['name'] as string, dtype: t.dtype, dims: bindShape(t.shape, bindings) }))
      .filter((i) => used.has(i.name));
  }

  /** The inputs this compiled graph reads (an input no output needs is left out of the model). */
  get inputNames(): string[] {
    return this.inputs.map((i) => i.name);
  }

  /** Runs with feeds by input name (extra feeds are ignored, a missing one is an error); returns every output. */
  async run(feeds: Readonly<Record<string, Feed>>, outputs?: readonly string[]): Promise<Record<string, HostTensor>> {
    if (this.disposed) throw new ReinError('conflict', `graph '${this.graph.name}' was disposed`);
    const ortFeeds: Record<string, ort.Tensor> = {};
    for (const i of this.inputs) {
      const f = feeds[i.name];
      if (f === undefined) throw new BadInputError(`graph '${this.graph.name}' needs input '${i.name}'`, i.name);
      ortFeeds[i.name] = toOrtTensor(i.name, i.dtype, i.dims, f);
    }
    const res = outputs === undefined ? await this.session.run(ortFeeds) : await this.session.run(ortFeeds, [...outputs]);
    const out: Record<string, HostTensor> = {};
    for (const [name, t] of Object.entries(res)) out[name] = { data: t.data as HostArray, dims: [...t.dims] };
    return out;
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await this.session.release();
  }
}

function bindingKey(graph: Graph, bindings: Bindings): string {
  const syms = new Set<string>();
  for (const t of graph.inputs) for (const s of shapeSymbols(t.shape)) syms.add(s);
  for (const s of graph.symbols()) syms.add(s);
  return [...syms]
    .sort()
    .map((s) => `${s}=${bindings[s] ?? '?'}`)
    .join(',');
}

/**
 * Weights to bake into a session as constants (EmitOptions.constants: only where an op prepacks them), under an id
 * that names this set of values (a layer): graphs that bake any get one session per (graph, bindings, id).
 */
export interface SessionConstants {
  id: string;
  values: Readonly<Record<string, Float32Array | Uint8Array>>;
}

export class Runtime {
  readonly provider: ExecutionProvider;
  readonly intraOpThreads: number;
  private readonly optimization: RuntimeOptions['optimization'];
  private readonly cache = new Map<string, Promise<CompiledGraph>>();
  /**
   * Per (graph, constants id), the one cached key with those constants: each such session holds its own packed copy
   * of the weights, so a new shape bucket releases the previous bucket's session instead of keeping both.
   */
  private readonly constKeys = new Map<string, string>();
  /** Per graph and constant names: whether the graph bakes any of them. */
  private readonly bakes = new Map<string, boolean>();

  constructor(opts: RuntimeOptions = {}) {
    const p = opts.provider ?? 'cpu';
    if (!EXECUTION_PROVIDERS.includes(p)) throw new BadInputError(`unknown execution provider '${String(p)}' (one of ${EXECUTION_PROVIDERS.join(', ')})`, 'provider');
    this.provider = p;
    this.intraOpThreads = opts.intraOpThreads ?? os.availableParallelism();
    this.optimization = opts.optimization;
  }

  /** The compiled graph for these bindings, created once and cached per (graph, bindings, provider). */
  compile(graph: Graph, bindings: Bindings = {}, constants?: SessionConstants): Promise<CompiledGraph> {
    let consts: SessionConstants | undefined;
    if (constants !== undefined) {
      const names = Object.keys(constants.values).sort().join(',');
      const bk = `${graph.key}|${names}`;
      let bakes = this.bakes.get(bk);
      if (bakes === undefined) {
        bakes = prepackedInputs(graph, constants.values).length > 0;
        this.bakes.set(bk, bakes);
      }
      if (bakes) consts = constants;
    }
    const key = `${graph.key}|${bindingKey(graph, bindings)}|${this.provider}${consts === undefined ? '' : `|const=${consts.id}`}`;
    let c = this.cache.get(key);
    if (c === undefined && consts !== undefined) {
      const ck = `${graph.key}|const=${consts.id}`;
      const old = this.constKeys.get(ck);
      const oldC = old === undefined ? undefined : this.cache.get(old);
      if (old !== undefined) this.cache.delete(old);
      this.constKeys.set(ck, key);
      oldC?.then((o) => o.dispose()).catch(() => undefined);
    }
    if (c === undefined) {
      c = this.create(graph, bindings, consts);
      this.cache.set(key, c);
      // A failed creation is not cached: the next call retries (and fails again with its own error).
      c.catch(() => this.cache.delete(key));
    }
    return c;
  }

  private async create(graph: Graph, bindings: Bindings, constants?: SessionConstants): Promise<CompiledGraph> {
    const bytes = toOnnx(graph, constants === undefined ? { bindings } : { bindings, constants: constants.values });
    const p = this.provider;
    if (p !== 'cpu') {
      const backend = ort.listSupportedBackends().find((x) => x.name === p);
      if (backend === undefined) throw new ProviderUnavailableError(p, `not built into onnxruntime-node for ${process.platform}/${process.arch}: ${providerMissing(p)}`);
    }
    const opts: ort.InferenceSession.SessionOptions = {
      executionProviders: [p],
      intraOpNumThreads: this.intraOpThreads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      // ORT's memory pattern (one block per run, laid out from the first run's allocations) does not reuse the space
      // of values that died earlier in the run as well as its arena does: the tiled lm_head (head.ts) held twice the
      // memory with it (Qwen2-0.5B's head over 512 rows: +0.64 against +0.32 GiB peak RSS) and ran no faster.
      enableMemPattern: false,
      // ORT's extended fusions (x·sigmoid(x) -> com.microsoft.QuickGelu, ...) are applied to float64 graphs although
      // their kernels are float-only, and the session then fails to load; float64 graphs (gradient checks) get 'basic'.
      graphOptimizationLevel: this.optimization ?? (graph.nodes.some((n) => n.outputs.some((t) => t.dtype === 'float64')) ? 'basic' : 'all'),
      // Sessions with constants are many (one per layer), each with its own intra-op threads: spinning after a run,
      // they would take the cores from the next layer's session.
      // A node the provider has no kernel for would run on the CPU, copying its tensors both ways at each run: a
      // session that needs that fails instead, and the provider probe (device.ts) reports it.
      extra: {
        session: {
          ...(constants === undefined ? {} : { intra_op: { allow_spinning: '0' } }),
          ...(p === 'cpu' ? {} : { disable_cpu_ep_fallback: '1' }),
        },
      },
    };
    let session: ort.InferenceSession;
    try {
      session = await ort.InferenceSession.create(bytes, opts);
    } catch (err) {
      if (p !== 'cpu') throw new ProviderUnavailableError(p, `${providerMissing(p)} (${err instanceof Error ? err.message : String(err)})`, err);
      throw new ReinError('internal', `ONNX Runtime refused graph '${graph.name}': ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    return new CompiledGraph(graph, bindings, p, session);
  }

  /** Compiles (or reuses) and runs. */
  async run(graph: Graph, bindings: Bindings, feeds: Readonly<Record<string, Feed>>, outputs?: readonly string[], constants?: SessionConstants): Promise<Record<string, HostTensor>> {
    return (await this.compile(graph, bindings, constants)).run(feeds, outputs);
  }

  /** Releases the sessions of one graph (every bucket), or of all graphs. */
  async dispose(graph?: Graph): Promise<void> {
    const todo: Promise<CompiledGraph>[] = [];
    for (const [k, c] of this.cache) {
      if (graph === undefined || k.startsWith(`${graph.key}|`)) {
        todo.push(c);
        this.cache.delete(k);
      }
    }
    for (const c of todo) {
      try {
        await (await c).dispose();
      } catch {
        // A session that failed to create has nothing to release.
      }
    }
  }

  get size(): number {
    return this.cache.size;
  }
}
