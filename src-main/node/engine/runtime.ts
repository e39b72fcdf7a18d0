// ORT sessions for IR graphs: one InferenceSession per (graph, bound dims, provider), created on first use and
// cached, because creating one costs milliseconds for a small graph and seconds for a large one (TOOLCHAIN.md). Inputs
// and outputs are typed arrays by name.
//
// Under WebGPU, values can stay on the device (DeviceTensor, Resident): onnxruntime-node 1.30 binds a session's outputs
// to GPU buffers when it is created with preferredOutputLocation 'gpu-buffer', and such a tensor can be fed to any
// session of the same process. It is a handle, not a GPUBuffer (Node has no WebGPU API), and it cannot be read back:
// its download is "not implemented" in the binding and getData() aborts the process (bench/webgpu-io.ts shows both).
// So what the host must read is fetched as a host output, and a host value reaches the device only by being fed to a
// session (Runtime.upload runs an Identity model for it). Only WebGPU outputs are wrapped that way by the binding
// (allocator 'WebGPU_Buf'); CUDA and DirectML sessions take and return host arrays, and ORT copies them each run.

import os from 'node:os';
import ort from 'onnxruntime-node';
import { BadInputError, ReinError } from '../../common/errors.ts';
import { type Bindings, type DType, type Graph, bindShape, shapeSymbols } from '../../common/engine/ir.ts';
import { substituteOps } from '../../common/engine/substitutes.ts';
import { identityModel, prepackedInputs, toOnnx } from './onnx.ts';

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

/**
 * A value a session left on the device: a GPU buffer ORT owns, fed to later sessions of the same runtime without a
 * copy. Its memory is freed by dispose() or when it is garbage-collected.
 */
export class DeviceTensor {
  readonly tensor: ort.Tensor;
  constructor(tensor: ort.Tensor) {
    if (tensor.location !== 'gpu-buffer') throw new ReinError('internal', `a device tensor must live in a GPU buffer, not '${tensor.location}'`);
    this.tensor = tensor;
  }
  get dims(): readonly number[] {
    return this.tensor.dims;
  }
  dispose(): void {
    this.tensor.dispose();
  }
}

/**
 * A host value that does not change while it is in use (a frozen base weight; a LoRA tensor for the length of one
 * forward and backward). A runtime that keeps values on the device uploads it on first use and feeds that copy from
 * then on; any other runtime feeds `data`. Whoever changes `data` must feed a new Resident.
 */
export class Resident {
  readonly data: HostArray;
  /** The device copy, on the runtime that made it (Runtime.residentCopies). */
  copy: { runtime: Runtime; tensor: Promise<DeviceTensor> } | null = null;
  constructor(data: HostArray) {
    this.data = data;
  }

  /** Frees the device copy (the next use uploads again). */
  release(): void {
    const c = this.copy;
    this.copy = null;
    void c?.tensor.then((t) => t.dispose(), () => undefined);
  }
}

/** A feed: a typed array of the input's dtype (int64 may also be Int32Array/number[], bool a boolean[]). */
export type Feed = HostArray | Int32Array | readonly number[] | readonly boolean[] | HostTensor | DeviceTensor | Resident;

/**
 * Bytes that crossed between host and device through sessions on a GPU provider: every host array fed to one (ORT
 * copies it in) and every output it returned to the host. `resident` is the part of `toDevice` that uploaded Resident
 * values; `byInput` splits `toDevice` by input name.
 */
export interface Traffic {
  toDevice: number;
  toHost: number;
  resident: number;
  byInput: Map<string, number>;
}

function dtypeOf(a: HostArray): 'float32' | 'float64' | 'int64' | 'uint8' {
  if (a instanceof Float32Array) return 'float32';
  if (a instanceof Float64Array) return 'float64';
  if (a instanceof BigInt64Array) return 'int64';
  return 'uint8';
}

export function newTraffic(): Traffic {
  return { toDevice: 0, toHost: 0, resident: 0, byInput: new Map() };
}

export interface RuntimeOptions {
  provider?: ExecutionProvider;
  /** Threads for one op; defaults to the machine's available parallelism. */
  intraOpThreads?: number;
  /** ORT graph optimisation level; by default 'all', and 'basic' for graphs that compute in float64 (see create). */
  optimization?: 'disabled' | 'basic' | 'extended' | 'all';
  /**
   * ONNX op types the provider lacks (its op probe, device.ts probeOps): graphs are lowered with compositions of
   * other ops in their place (common/engine/substitutes.ts).
   */
  missingOps?: readonly string[];
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
  return !ArrayBuffer.isView(f) && !Array.isArray(f) && !(f instanceof DeviceTensor) && !(f instanceof Resident) && typeof f === 'object' && 'data' in f;
}

/** A device tensor fed as `dims` (a view of the same buffer when only the shape differs, as a Reshape would). */
function deviceFeed(name: string, dtype: DType, dims: number[], d: DeviceTensor): ort.Tensor {
  const t = d.tensor;
  const n = dims.reduce((p, x) => p * x, 1);
  // uint8 values went up as int32 words (Runtime.upload); the buffer holds the same bytes.
  if (dtype === 'uint8' && t.type === 'int32' && t.size * 4 === n) return ort.Tensor.fromGpuBuffer(t.gpuBuffer, { dataType: 'uint8', dims });
  if (t.type !== ORT_TYPE[dtype] || t.size !== n) throw new BadInputError(`input '${name}' is ${dtype} [${dims.join(', ')}], got a device tensor ${t.type} [${t.dims.join(', ')}]`, name);
  if (t.dims.length === dims.length && t.dims.every((x, i) => x === dims[i])) return t;
  return ort.Tensor.fromGpuBuffer(t.gpuBuffer, { dataType: t.type as ort.Tensor.GpuBufferDataTypes, dims });
}

// A feed of the wrong typed array (float32 for a float64 graph) is refused, not converted: it would silently change
// precision. Plain arrays are converted.
function toOrtTensor(name: string, dtype: DType, dims: number[], feed: Exclude<Feed, DeviceTensor | Resident>): ort.Tensor {
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
  /** The outputs this session leaves on the device (WebGPU only; empty elsewhere). */
  readonly deviceOutputs: ReadonlySet<string>;
  private readonly runtime: Runtime;
  private readonly inputs: { name: string; dtype: DType; dims: number[] }[];
  private disposed = false;

  constructor(graph: Graph, bindings: Bindings, runtime: Runtime, session: ort.InferenceSession, deviceOutputs: ReadonlySet<string> = new Set()) {
    this.graph = graph;
    this.bindings = bindings;
    this.provider = runtime.provider;
    this.runtime = runtime;
    this.session = session;
    this.deviceOutputs = deviceOutputs;
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
    if (this.deviceOutputs.size > 0) throw new ReinError('internal', `graph '${this.graph.name}' was compiled to keep outputs on the device: use runKeep`);
    return (await this.exec(feeds, outputs)).out;
  }

  /**
   * Runs and returns the outputs in `keep` as feeds for later runs (device tensors where this session keeps them on
   * the device, host arrays elsewhere) and the outputs in `fetch` (default: all others) on the host.
   */
  async runKeep(feeds: Readonly<Record<string, Feed>>, keep: readonly string[], fetch?: readonly string[]): Promise<{ kept: Record<string, Feed>; out: Record<string, HostTensor> }> {
    const names = [...keep, ...(fetch ?? this.graph.outputNames.filter((n) => !keep.includes(n)))];
    const r = await this.exec(feeds, names);
    const kept: Record<string, Feed> = {};
    for (const k of keep) {
      kept[k] = r.device[k] ?? r.out[k]!.data;
      delete r.out[k];
    }
    return { kept, out: r.out };
  }

  private async exec(feeds: Readonly<Record<string, Feed>>, outputs?: readonly string[]): Promise<{ out: Record<string, HostTensor>; device: Record<string, DeviceTensor> }> {
    if (this.disposed) throw new ReinError('conflict', `graph '${this.graph.name}' was disposed`);
    const onDevice = this.runtime.deviceResident;
    const traffic = this.provider === 'cpu' ? null : this.runtime.traffic;
    const ortFeeds: Record<string, ort.Tensor> = {};
    const resident: { name: string; value: Resident; dtype: DType; dims: number[] }[] = [];
    for (const i of this.inputs) {
      const f = feeds[i.name];
      if (f === undefined) throw new BadInputError(`graph '${this.graph.name}' needs input '${i.name}'`, i.name);
      if (f instanceof DeviceTensor) ortFeeds[i.name] = deviceFeed(i.name, i.dtype, i.dims, f);
      else if (f instanceof Resident && onDevice) resident.push({ name: i.name, value: f, dtype: i.dtype, dims: i.dims });
      else {
        const t = toOrtTensor(i.name, i.dtype, i.dims, f instanceof Resident ? f.data : f);
        if (traffic !== null) {
          const bytes = (t.data as HostArray).byteLength;
          traffic.toDevice += bytes;
          traffic.byInput.set(i.name, (traffic.byInput.get(i.name) ?? 0) + bytes);
          if (f instanceof Resident) traffic.resident += bytes;
        }
        ortFeeds[i.name] = t;
      }
    }
    if (resident.length > 0) {
      const copies = await this.runtime.residentCopies(resident);
      resident.forEach((r, k) => (ortFeeds[r.name] = deviceFeed(r.name, r.dtype, r.dims, copies[k]!)));
    }
    const res = outputs === undefined ? await this.session.run(ortFeeds) : await this.session.run(ortFeeds, [...outputs]);
    const out: Record<string, HostTensor> = {};
    const device: Record<string, DeviceTensor> = {};
    for (const [name, t] of Object.entries(res)) {
      if (t.location === 'gpu-buffer') {
        device[name] = new DeviceTensor(t);
        continue;
      }
      const data = t.data as HostArray;
      if (traffic !== null) traffic.toHost += data.byteLength;
      out[name] = { data, dims: [...t.dims] };
    }
    return { out, device };
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
  /** Whether sessions can leave outputs on the device and Resident values live there (WebGPU; see the top). */
  readonly deviceResident: boolean;
  readonly missingOps: ReadonlySet<string>;
  /** Host↔device bytes through this runtime's sessions since it was created or resetTraffic() (cpu: none). */
  traffic: Traffic = newTraffic();
  /** Identity sessions that upload host values, per list of types and lengths. */
  private readonly uploads = new Map<string, Promise<ort.InferenceSession>>();

  constructor(opts: RuntimeOptions = {}) {
    const p = opts.provider ?? 'cpu';
    if (!EXECUTION_PROVIDERS.includes(p)) throw new BadInputError(`unknown execution provider '${String(p)}' (one of ${EXECUTION_PROVIDERS.join(', ')})`, 'provider');
    this.provider = p;
    this.intraOpThreads = opts.intraOpThreads ?? os.availableParallelism();
    this.optimization = opts.optimization;
    this.deviceResident = p === 'webgpu';
    this.missingOps = new Set(opts.missingOps ?? []);
  }

  /** Returns the traffic counted so far and starts a new count. */
  resetTraffic(): Traffic {
    const t = this.traffic;
    this.traffic = newTraffic();
    return t;
  }

  /**
   * The device copies of Resident values (fed as `name`), uploading those not there yet in one run of an Identity
   * graph whose outputs stay on the device: the only way a host array becomes a device tensor in onnxruntime-node (no
   * Tensor.fromGpuBuffer without a GPUBuffer to give it). The upload is flat; a feed views it in its input's shape.
   */
  residentCopies(items: readonly { name: string; value: Resident }[]): Promise<DeviceTensor[]> {
    if (!this.deviceResident) throw new ReinError('internal', `execution provider '${this.provider}' keeps no values on the device`);
    const missing = items.filter((it, k) => it.value.copy === null && items.findIndex((o) => o.value === it.value) === k);
    if (missing.length > 0) {
      const batch = this.upload(missing.map((it) => ({ name: it.name, data: it.value.data })));
      missing.forEach((it, k) => {
        const tensor = batch.then((b) => b[k]!);
        it.value.copy = { runtime: this, tensor };
        tensor.catch(() => {
          if (it.value.copy?.tensor === tensor) it.value.copy = null;
        });
      });
    }
    return Promise.all(
      items.map((it) => {
        const c = it.value.copy!;
        if (c.runtime !== this) throw new ReinError('internal', `input '${it.name}': its resident value is on another runtime's device`);
        return c.tensor;
      }),
    );
  }

  /** Host arrays copied to the device in one session run; the bytes are counted as resident, under each name. */
  private async upload(items: readonly { name: string; data: HostArray }[]): Promise<DeviceTensor[]> {
    // WebGPU has no 8-bit type (ORT's WebGPU Identity has no uint8 kernel): bytes go up as int32 words, and a feed
    // views them as uint8 again (deviceFeed). The model is written directly: the IR has no int32.
    const feeds: Record<string, ort.Tensor> = {};
    const specs = items.map((it, k) => {
      let data: HostArray | Int32Array = it.data;
      if (data instanceof Uint8Array) {
        if (data.byteLength % 4 !== 0) throw new BadInputError(`input '${it.name}': ${data.byteLength} bytes cannot go to the device as 32-bit words`, it.name);
        const a = data.byteOffset % 4 === 0 ? data : data.slice();
        data = new Int32Array(a.buffer, a.byteOffset, a.byteLength / 4);
      }
      const type = data instanceof Int32Array ? 'int32' : dtypeOf(data);
      if (type === 'uint8') throw new ReinError('internal', 'unreachable: uint8 goes up as int32');
      feeds[`x${k}`] = new ort.Tensor(type, data, [data.length]);
      return { type, n: data.length } as const;
    });
    const key = specs.map((x) => `${x.type}[${x.n}]`).join(',');
    let session = this.uploads.get(key);
    if (session === undefined) {
      const extra = { session: { disable_cpu_ep_fallback: '1' } };
      session = ort.InferenceSession.create(identityModel(specs), { executionProviders: [this.provider], preferredOutputLocation: 'gpu-buffer', extra });
      this.uploads.set(key, session);
      session.catch(() => this.uploads.delete(key));
    }
    const res = await (await session).run(feeds);
    items.forEach((it) => {
      const n = it.data.byteLength;
      this.traffic.toDevice += n;
      this.traffic.resident += n;
      this.traffic.byInput.set(it.name, (this.traffic.byInput.get(it.name) ?? 0) + n);
    });
    return items.map((it, k) => {
      const t = res[`y${k}`]!;
      if (t.location !== 'gpu-buffer') throw new ReinError('internal', `uploading '${it.name}': ORT returned the copy to the host`);
      return new DeviceTensor(t);
    });
  }

  /**
   * The compiled graph for these bindings, created once and cached per (graph, bindings, provider, the outputs it
   * keeps on the device). `keep` only takes effect where the runtime is deviceResident.
   */
  compile(graph: Graph, bindings: Bindings = {}, constants?: SessionConstants, keep: readonly string[] = []): Promise<CompiledGraph> {
    const onDevice = this.deviceResident ? [...new Set(keep)].sort() : [];
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
    const key = `${graph.key}|${bindingKey(graph, bindings)}|${this.provider}${consts === undefined ? '' : `|const=${consts.id}`}${onDevice.length === 0 ? '' : `|dev=${onDevice.join(',')}`}`;
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
      c = this.create(graph, bindings, consts, onDevice);
      this.cache.set(key, c);
      // A failed creation is not cached: the next call retries (and fails again with its own error).
      c.catch(() => this.cache.delete(key));
    }
    return c;
  }

  private async create(graph: Graph, bindings: Bindings, constants: SessionConstants | undefined, deviceOutputs: readonly string[]): Promise<CompiledGraph> {
    const lowered = substituteOps(graph, this.missingOps, bindings);
    const bytes = toOnnx(lowered, constants === undefined ? { bindings } : { bindings, constants: constants.values });
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
      ...(deviceOutputs.length === 0 ? {} : { preferredOutputLocation: Object.fromEntries(graph.outputNames.map((n) => [n, deviceOutputs.includes(n) ? 'gpu-buffer' : 'cpu'] as const)) }),
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
      const msg = err instanceof Error ? err.message : String(err);
      // ORT's words when a node has no kernel on the provider and CPU fallback is off (set above).
      if (p !== 'cpu' && msg.includes('assigned to the default CPU EP')) {
        throw new ProviderUnavailableError(p, `it has no kernel for a node of graph '${graph.name}', which ORT would run on the CPU (op-probe.ts lists such ops)`, err);
      }
      if (p !== 'cpu') throw new ProviderUnavailableError(p, `${providerMissing(p)} (${msg})`, err);
      throw new ReinError('internal', `ONNX Runtime refused graph '${graph.name}': ${msg}`, { cause: err });
    }
    return new CompiledGraph(graph, bindings, this, session, new Set(deviceOutputs));
  }

  /** Compiles (or reuses) and runs. */
  async run(graph: Graph, bindings: Bindings, feeds: Readonly<Record<string, Feed>>, outputs?: readonly string[], constants?: SessionConstants): Promise<Record<string, HostTensor>> {
    return (await this.compile(graph, bindings, constants)).run(feeds, outputs);
  }

  /** Compiles (or reuses) and runs, keeping the outputs in `keep` on the device where it can (CompiledGraph.runKeep). */
  async runKeep(graph: Graph, bindings: Bindings, feeds: Readonly<Record<string, Feed>>, keep: readonly string[], fetch?: readonly string[], constants?: SessionConstants): Promise<{ kept: Record<string, Feed>; out: Record<string, HostTensor> }> {
    return (await this.compile(graph, bindings, constants, keep)).runKeep(feeds, keep, fetch);
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
    if (graph !== undefined) return;
    const uploads = [...this.uploads.values()];
    this.uploads.clear();
    for (const u of uploads) await u.then((x) => x.release(), () => undefined);
  }

  get size(): number {
    return this.cache.size;
  }
}
