// Which execution provider a round trains on (the `training.device` setting). A provider is used only after a probe
// ran the real training path on it (a one-layer model's layer graphs, tiled head and LoRA backward, driver.ts) and got
// the CPU's answer: ORT reports a provider as present whether or not an adapter, a driver or its libraries exist, and
// Dawn may hand out an adapter that computes wrongly. Sessions on a GPU provider refuse to place any node on the CPU
// (runtime.ts), so a graph with an op the provider lacks fails the probe instead of running half on the CPU.
//
// ORT does not report the WebGPU adapter Dawn picked (no API in onnxruntime-node 1.30, nor in its verbose log), so the
// adapter is described by what selects it: the Vulkan ICD named by VK_ICD_FILENAMES, or the system's default.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import ort from 'onnxruntime-node';
import { ProviderUnavailableError, type ExecutionProvider } from './runtime.ts';
import type { TrainingDevice } from '../../common/config.ts';
import type { DeviceChoice } from '../../common/system.ts';
import { modelParams, parseModelConfig } from '../../common/engine/families/registry.ts';
import { numel } from '../../common/engine/families/params.ts';
import { Rng } from '../../common/engine/rng.ts';
import { Engine } from './engine.ts';
import { PROBE_CONFIG, probeOps, type OpProbe } from './op-probe.ts';

export type GpuProvider = Exclude<ExecutionProvider, 'cpu'>;

/** Tried by `auto`, in this order: the vendor's own provider before the portable one. */
export const AUTO_ORDER: readonly GpuProvider[] = ['cuda', 'dml', 'webgpu'];

/** The bounds for a GPU step against the CPU step on the same inputs. */
export const LOGPROB_TOLERANCE = 1e-3;
export const GRAD_REL_TOLERANCE = 1e-2;

export interface ProbeResult {
  provider: GpuProvider;
  ok: boolean;
  /** Why the provider cannot train here (null when ok). */
  error: string | null;
  adapter: string;
  /** Largest |logp_provider − logp_cpu| over the probe's tokens (null if it did not run). */
  maxLogprobDiff: number | null;
  /** Largest |g_provider − g_cpu| / max|g_cpu| over the LoRA gradients (null if it did not run). */
  maxGradRelDiff: number | null;
  /** Each ONNX op type of the training graphs run alone on the provider (op-probe.ts; null if it did not run). */
  ops: OpProbe | null;
  seconds: number;
}


export function adapterName(provider: ExecutionProvider): string {
  switch (provider) {
    case 'cpu':
      return os.cpus()[0]?.model.trim() ?? 'CPU';
    case 'webgpu': {
      const icd = process.env['VK_ICD_FILENAMES'] ?? process.env['VK_DRIVER_FILES'];
      return icd !== undefined && icd !== '' ? `WebGPU (Dawn) on the Vulkan ICD ${path.basename(icd)}` : "WebGPU (Dawn), the system's default adapter";
    }
    case 'cuda':
      return `CUDA device ${process.env['CUDA_VISIBLE_DEVICES']?.split(',')[0] ?? '0'}`;
    case 'dml':
      return 'DirectML default adapter';
  }
}

/** The probe's one-layer model (op-probe.ts PROBE_CONFIG) with seeded weights, on `provider`, lowered without `missingOps`. */
export function probeEngine(provider: ExecutionProvider, missingOps: readonly string[] = []): Engine {
  const config = parseModelConfig(PROBE_CONFIG);
  const weights = new Map<string, Float32Array>();
  for (const p of modelParams(config)) {
    const a = new Float32Array(numel(p.shape));
    if (p.init === 'ones') a.fill(1);
    else if (p.init === 'normal') new Rng(7).fork(p.hfKey).fillNormal(a, 0.3);
    weights.set(p.hfKey, a);
  }
  return Engine.fromWeights(config, (k) => weights.get(k)!, { dtype: 'float32', threads: 1, buckets: [16], headChunk: 16, provider, missingOps });
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The logprobs and LoRA gradients of one fixed sequence on an engine (the cotangent is fixed too). */
async function probeStep(engine: Engine): Promise<{ logp: Float64Array; grads: Float64Array[] }> {
  const adapter = engine.newAdapter({ r: 4, alpha: 8 }, 3);
  const rng = new Rng(11);
  for (const p of adapter.pairs) rng.fork(p.baseKey).fillNormal(p.b, 0.05); // nonzero B: every gradient is nonzero
  const tokens = Array.from({ length: 13 }, (_, i) => (i * 37 + 5) % engine.config.vocabSize);
  const logp = await engine.logprobs(tokens, { adapter, start: 1 });
  const g = await engine.driver.grad(tokens, 1, adapter, (lp) => lp.map((_, i) => (i % 3) - 1));
  return { logp, grads: g.grads.flatMap((p) => [Float64Array.from(p.a), Float64Array.from(p.b)]) };
}

/** Largest |a − b| / max|b| over tensors (the gradient scale, so tiny entries do not dominate). */
export function maxRelDiff(a: readonly ArrayLike<number>[], b: readonly ArrayLike<number>[]): number {
  let worst = 0;
  a.forEach((x, k) => {
    const y = b[k]!;
    let scale = 0;
    let diff = 0;
    for (let i = 0; i < y.length; i++) {
      scale = Math.max(scale, Math.abs(y[i]!));
      diff = Math.max(diff, Math.abs(x[i]! - y[i]!));
    }
    worst = Math.max(worst, scale === 0 ? diff : diff / scale);
  });
  return worst;
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}

/**
 * Whether ONNX Runtime's CUDA provider library sits beside onnxruntime-node's binding, where ORT loads it from. The
 * npm package installs it only on request (ONNXRUNTIME_NODE_INSTALL_CUDA); without it a CUDA session fails after ORT
 * prints a library-load error to stderr, so the probe checks for the file first and says what is missing.
 */
function cudaProviderInstalled(): boolean {
  const root = path.dirname(createRequire(import.meta.url).resolve('onnxruntime-node/package.json'));
  const file = process.platform === 'win32' ? 'onnxruntime_providers_cuda.dll' : 'libonnxruntime_providers_cuda.so';
  return existsSync(path.join(root, 'bin', 'napi-v6', process.platform, process.arch, file));
}

/** Runs the probe step on `provider` and on the CPU and compares them (LOGPROB_TOLERANCE, GRAD_REL_TOLERANCE). */
export async function probeProvider(provider: GpuProvider): Promise<ProbeResult> {
  const t0 = performance.now();
  const adapter = adapterName(provider);
  let ops: OpProbe | null = null;
  const done = (r: Omit<ProbeResult, 'provider' | 'adapter' | 'seconds' | 'ops'>): ProbeResult => ({ provider, adapter, ops, seconds: (performance.now() - t0) / 1000, ...r });
  if (!ort.listSupportedBackends().some((b) => b.name === provider)) {
    return done({ ok: false, error: new ProviderUnavailableError(provider, `not built into onnxruntime-node for ${process.platform}/${process.arch}`).message, maxLogprobDiff: null, maxGradRelDiff: null });
  }
  if (provider === 'cuda' && !cudaProviderInstalled()) {
    const why = "ONNX Runtime's CUDA provider library is not installed (onnxruntime-node adds it when installed with ONNXRUNTIME_NODE_INSTALL_CUDA=v12)";
    return done({ ok: false, error: new ProviderUnavailableError(provider, why).message, maxLogprobDiff: null, maxGradRelDiff: null });
  }
  // The op types the provider lacks are lowered as compositions (substitutes.ts), in the probe step as in a round.
  ops = await probeOps(provider);
  if (ops.checked.every((c) => !c.ok)) return done({ ok: false, error: `no op of the training graphs ran: ${ops.checked[0]?.error ?? 'none checked'}`, maxLogprobDiff: null, maxGradRelDiff: null });
  const dev = probeEngine(provider, ops.missing);
  const cpu = probeEngine('cpu');
  try {
    let got: Awaited<ReturnType<typeof probeStep>>;
    try {
      got = await probeStep(dev);
    } catch (e) {
      return done({ ok: false, error: message(e), maxLogprobDiff: null, maxGradRelDiff: null });
    }
    const want = await probeStep(cpu);
    const maxLogprobDiff = maxAbsDiff(got.logp, want.logp);
    const maxGradRelDiff = maxRelDiff(got.grads, want.grads);
    const ok = maxLogprobDiff <= LOGPROB_TOLERANCE && maxGradRelDiff <= GRAD_REL_TOLERANCE;
    const error = ok ? null : `execution provider '${provider}' computes the probe step wrongly: log-probs differ from the CPU's by up to ${maxLogprobDiff.toExponential(2)} (bound ${LOGPROB_TOLERANCE}), LoRA gradients by up to ${maxGradRelDiff.toExponential(2)} relative (bound ${GRAD_REL_TOLERANCE})`;
    return done({ ok, error, maxLogprobDiff, maxGradRelDiff });
  } finally {
    await cpu.close();
    await dev.close().catch(() => undefined);
  }
}

const probes = new Map<GpuProvider, Promise<ProbeResult>>();

/** probeProvider once per process (a probe compiles a dozen sessions; on a software adapter that takes seconds). */
export function probeOnce(provider: GpuProvider): Promise<ProbeResult> {
  let p = probes.get(provider);
  if (p === undefined) {
    p = probeProvider(provider);
    probes.set(provider, p);
  }
  return p;
}

/**
 * The provider for `requested`: cpu as is; a named GPU provider only if its probe passes (otherwise a
 * ProviderUnavailableError naming it and the probe's failure); auto, the first GPU provider whose probe passes, else
 * the CPU with every probe's failure as the reason.
 */
export async function chooseDevice(requested: TrainingDevice, probe: (p: GpuProvider) => Promise<ProbeResult> = probeOnce): Promise<DeviceChoice> {
  if (requested === 'cpu') return { requested, provider: 'cpu', adapter: adapterName('cpu'), reason: null };
  if (requested !== 'auto') {
    const r = await probe(requested);
    if (!r.ok) throw new ProviderUnavailableError(requested, `its probe failed: ${r.error}`);
    return { requested, provider: requested, adapter: r.adapter, reason: null, missingOps: r.ops?.missing ?? [] };
  }
  const failures: string[] = [];
  for (const p of AUTO_ORDER) {
    const r = await probe(p);
    if (r.ok) return { requested, provider: p, adapter: r.adapter, reason: null, missingOps: r.ops?.missing ?? [] };
    failures.push(`${p}: ${r.error}`);
  }
  return { requested, provider: 'cpu', adapter: adapterName('cpu'), reason: `no GPU provider passed its probe (${failures.join('; ')})` };
}
