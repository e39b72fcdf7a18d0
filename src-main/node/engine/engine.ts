// The compute API over a loaded model: logprobs, one training step's loss and LoRA gradients, sampling, and a
// train-loop helper (gradient accumulation, clipping, AdamW). The trainer worker and the tests call this.
import { BadInputError } from '../../common/errors.ts';
import { modelLinearParams, modelParams } from '../../common/engine/models/registry.ts';
import type { ModelConfig } from '../../common/engine/models/registry.ts';
import type { ResolvedParam } from '../../common/engine/models/params.ts';
import type { FloatDType } from '../../common/engine/models/llama.ts';
import type { LoraAdapter, LoraSpec } from '../../common/engine/lora.ts';
import { DEFAULT_LORA_TARGETS, fromBase, loraSpec, peftKeys } from '../../common/engine/lora.ts';
import type { Objective } from '../../common/engine/objectives.ts';
import { AdamW, GradAccumulator, clipGradNorm } from '../../common/engine/adamw.ts';
import type { AdamWOptions } from '../../common/engine/adamw.ts';
import { Rng } from '../../common/engine/rng.ts';
import { pick } from '../../common/engine/sampling.ts';
import { loadHfModel } from './hf.ts';
import type { HfModel } from './hf.ts';
import type { ReinTokenizer } from './tokenizer.ts';
import { Runtime } from './runtime.ts';
import { Driver } from './driver.ts';
import type { DriverOptions, DriverWeights, FArray } from './driver.ts';

export interface EngineOptions extends Partial<Omit<DriverOptions, 'dtype'>> {
  /** float32 for training; float64 for gradient checks. */
  dtype?: FloatDType;
  /** ORT intra-op threads (default: every core). */
  threads?: number;
}

/** One rated sequence of a training batch: the tokens, where the response starts, and its advantage. */
export interface StepSequence {
  tokens: readonly number[];
  /** Index of the first response token (the first scored one); ≥ 1. */
  start: number;
  advantage: number;
}

export interface TokenStats {
  /** The policy's logprobs of the response tokens. */
  logp: Float64Array;
  /** The base model's, when the objective needed them. */
  ref: Float64Array | null;
  /** Per-token k3 KL to the base, when computed. */
  kl: Float64Array | null;
}

export interface StepResult {
  loss: number;
  /** dLoss/d tensor by PEFT key (base_model.model.….lora_A.weight), in the engine's dtype, in the adapter's order. */
  grads: Map<string, FArray>;
  /** The same gradients as a list [A₀, B₀, A₁, B₁, …] (the order of `adapterParams`). */
  gradList: FArray[];
  tokens: TokenStats[];
}

export interface SampleOptions {
  adapter?: LoraAdapter | null;
  /** 0 means greedy. */
  temperature?: number;
  topP?: number;
  seed?: number;
  maxTokens?: number;
  /** Stop after any of these (default: the model's EOS ids). */
  stop?: readonly number[];
}

/** The trainable tensors of an adapter in a fixed order: [A₀, B₀, A₁, B₁, …]. */
export function adapterParams(adapter: LoraAdapter): Float32Array[] {
  return adapter.pairs.flatMap((p) => [p.a, p.b]);
}

export class Engine {
  readonly config: ModelConfig;
  readonly params: ResolvedParam[];
  readonly tokenizer: ReinTokenizer | null;
  readonly driver: Driver;
  private readonly runtime: Runtime;

  private constructor(config: ModelConfig, weights: DriverWeights, tokenizer: ReinTokenizer | null, opts: EngineOptions) {
    const dtype = opts.dtype ?? 'float32';
    this.config = config;
    this.params = modelParams(config);
    this.tokenizer = tokenizer;
    // ORT's level-2 fusions turn x·sigmoid(x) into com.microsoft.QuickGelu, which has only a float kernel; float64
    // graphs (gradient checks) therefore run with basic optimisation.
    this.runtime = new Runtime({ intraOpThreads: opts.threads, optimization: dtype === 'float64' ? 'basic' : 'all' });
    this.driver = new Driver(config, weights, this.runtime, { ...opts, dtype });
  }

  /** Loads an HF model directory (config.json, safetensors, tokenizer) through node/engine/hf.ts. */
  static load(dir: string, opts: EngineOptions = {}): Engine {
    const m = loadHfModel(dir);
    try {
      return Engine.fromWeights(m.config, (key) => m.read(key, { as: opts.dtype === 'float64' ? 'f64' : 'f32' }), opts, m.tokenizer);
    } finally {
      m.close();
    }
  }

  /** From weights in memory, by HF key (the benchmark generates them; tests may perturb them). */
  static fromWeights(config: ModelConfig, read: (hfKey: string) => FArray, opts: EngineOptions = {}, tokenizer: ReinTokenizer | null = null): Engine {
    const params = modelParams(config);
    const layers: Record<string, FArray>[] = Array.from({ length: config.numLayers }, () => ({}));
    const model: Record<string, FArray> = {};
    const want = opts.dtype ?? 'float32';
    for (const p of params) {
      let a = read(p.hfKey);
      if (want === 'float64' && !(a instanceof Float64Array)) a = Float64Array.from(a);
      if (want === 'float32' && !(a instanceof Float32Array)) a = Float32Array.from(a);
      if (p.layer === null) model[p.name] = a;
      else layers[p.layer]![p.name] = a;
    }
    const embed = model['embed_tokens']!;
    const weights: DriverWeights = { layers, embed, norm: model['norm']!, lmHead: config.tieWordEmbeddings ? embed : model['lm_head']! };
    return new Engine(config, weights, tokenizer, opts);
  }

  static fromHf(m: HfModel, opts: EngineOptions = {}): Engine {
    return Engine.fromWeights(m.config, (key) => m.read(key, { as: opts.dtype === 'float64' ? 'f64' : 'f32' }), opts, m.tokenizer);
  }

  /**
   * A fresh adapter (B = 0) for this model. Without explicit targets, the default modules this model has (an MoE
   * model's LoRA targets are its attention projections only, models/moe.ts).
   */
  newAdapter(spec: Partial<LoraSpec> = {}, seed = 0): LoraAdapter {
    const linears = modelLinearParams(this.config);
    const have = new Set(linears.map((p) => p.module));
    const targets = spec.targets ?? DEFAULT_LORA_TARGETS.filter((t) => have.has(t));
    return fromBase(linears, loraSpec({ ...spec, targets }), seed);
  }

  /** log p(tokens[t] | tokens[<t]) for t from `start` (default 1) to the end. */
  logprobs(tokens: readonly number[], opts: { adapter?: LoraAdapter | null; start?: number } = {}): Promise<Float64Array> {
    return this.driver.logprobs(tokens, opts.start ?? 1, opts.adapter ?? null);
  }

  /**
   * One step over a batch: per sequence, the base logprobs when the objective needs them, then the policy forward,
   * the objective's dLoss/dlogp, and the backward into the LoRA tensors. Each sequence weighs 1/B.
   */
  async step(batch: readonly StepSequence[], objective: Objective, adapter: LoraAdapter): Promise<StepResult> {
    if (batch.length === 0) throw new BadInputError('step needs at least one sequence', 'batch');
    const sums = adapter.pairs.map((p) => ({ a: new Float64Array(p.a.length), b: new Float64Array(p.b.length) }));
    const tokens: TokenStats[] = [];
    let loss = 0;
    const weight = 1 / batch.length;
    for (const s of batch) {
      const ref = objective.needsRef ? await this.driver.logprobs(s.tokens, s.start, null) : null;
      let kl: Float64Array | null = null;
      const r = await this.driver.grad(s.tokens, s.start, adapter, (logp) => {
        const out = objective.sequence({ logp, ref, advantage: s.advantage }, weight);
        loss += out.loss;
        kl = out.kl;
        return out.dlogp;
      });
      r.grads.forEach((g, k) => {
        addInto(sums[k]!.a, g.a);
        addInto(sums[k]!.b, g.b);
      });
      tokens.push({ logp: r.logp, ref, kl });
    }
    const grads = new Map<string, FArray>();
    const gradList: FArray[] = [];
    const out = (s: Float64Array): FArray => (this.driver.dtype === 'float64' ? s : Float32Array.from(s));
    adapter.pairs.forEach((p, k) => {
      const keys = peftKeys(p.baseKey);
      const a = out(sums[k]!.a);
      const b = out(sums[k]!.b);
      grads.set(keys.a, a);
      grads.set(keys.b, b);
      gradList.push(a, b);
    });
    return { loss, grads, gradList, tokens };
  }

  /** Autoregressive sampling with temperature and nucleus (top-p) filtering; full recompute per token (correct, slow). */
  async sample(prompt: readonly number[], opts: SampleOptions = {}): Promise<{ tokens: number[]; logprobs: number[] }> {
    const temperature = opts.temperature ?? 1;
    const topP = opts.topP ?? 1;
    const maxTokens = opts.maxTokens ?? 64;
    if (!(temperature >= 0) || !Number.isFinite(temperature)) throw new BadInputError(`temperature must be ≥ 0, got ${temperature}`, 'temperature');
    if (!(topP > 0 && topP <= 1)) throw new BadInputError(`topP must be in (0, 1], got ${topP}`, 'topP');
    if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new BadInputError(`maxTokens must be a positive integer, got ${maxTokens}`, 'maxTokens');
    const stop = new Set(opts.stop ?? this.config.eosTokenIds);
    const rng = new Rng(opts.seed ?? 0);
    const seq = [...prompt];
    const out: number[] = [];
    const lps: number[] = [];
    const sampled = { logprob: 0 };
    for (let n = 0; n < maxTokens; n++) {
      const lp = await this.driver.nextLogprobs(seq, opts.adapter ?? null);
      const tok = pick(lp instanceof Float64Array ? lp : Float64Array.from(lp), temperature, topP, rng, sampled);
      out.push(tok);
      // μ: the token's log probability under the tempered, truncated distribution it was drawn from (sampling.ts).
      lps.push(sampled.logprob);
      seq.push(tok);
      if (stop.has(tok)) break;
    }
    return { tokens: out, logprobs: lps };
  }

  async close(): Promise<void> {
    await this.runtime.dispose();
  }
}

function addInto(dst: Float64Array, src: FArray): void {
  for (let i = 0; i < dst.length; i++) dst[i] += src[i]!;
}

export interface TrainStepOptions {
  /** Global grad-norm clipping (torch clip_grad_norm_); 0 turns it off. */
  maxGradNorm?: number;
  lr?: number;
}

/**
 * One optimizer step over several micro-batches: their gradients are averaged (weight 1 each), clipped, and
 * applied by AdamW to the adapter's tensors in place.
 */
export async function trainStep(
  engine: Engine,
  adapter: LoraAdapter,
  optimizer: AdamW,
  microBatches: readonly (readonly StepSequence[])[],
  objective: Objective,
  opts: TrainStepOptions = {},
): Promise<{ loss: number; gradNorm: number }> {
  const params = adapterParams(adapter);
  if (optimizer.params.length !== params.length || optimizer.params.some((p, i) => p !== params[i])) {
    throw new BadInputError('trainStep: the optimizer was not built over this adapter (use new AdamW(adapterParams(adapter)))', 'optimizer');
  }
  const acc = new GradAccumulator(params.map((p) => p.length));
  let loss = 0;
  for (const mb of microBatches) {
    const r = await engine.step(mb, objective, adapter);
    acc.add(r.gradList);
    loss += r.loss / microBatches.length;
  }
  const grads = acc.mean();
  const maxNorm = opts.maxGradNorm ?? 1;
  const gradNorm = maxNorm > 0 ? clipGradNorm(grads, maxNorm) : Math.sqrt(grads.reduce((s, g) => s + g.reduce((t, x) => t + x * x, 0), 0));
  optimizer.step(grads, opts.lr);
  return { loss, gradNorm };
}

export function newOptimizer(adapter: LoraAdapter, opts: Partial<AdamWOptions> = {}): AdamW {
  return new AdamW(adapterParams(adapter), opts);
}
