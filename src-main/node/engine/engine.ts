// The compute API over a loaded model: logprobs, sampling, and the driver whose grad() the training step
// (node/training/step.ts) runs. The trainer worker and the tests call this.
import { BadInputError } from '../../common/errors.ts';
import type { Settings } from '../../common/config.ts';
import { modelLinearParams, modelParams } from '../../common/engine/families/registry.ts';
import type { ModelConfig } from '../../common/engine/families/registry.ts';
import type { ResolvedParam } from '../../common/engine/families/params.ts';
import type { FloatDType } from '../../common/engine/composites.ts';
import type { LoraAdapter, LoraSpec } from '../../common/engine/lora.ts';
import { DEFAULT_LORA_TARGETS, fromBase, loraSpec } from '../../common/engine/lora.ts';
import { Rng } from '../../common/engine/rng.ts';
import { type QuantWeight, isQuant } from '../../common/engine/quant.ts';
import { pick } from '../../common/engine/sampling.ts';
import { loadModel } from './hf.ts';
import type { HfModel } from './hf.ts';
import type { ReinTokenizer } from './tokenizer.ts';
import { Runtime, type ExecutionProvider, type Traffic } from './runtime.ts';
import { Driver } from './driver.ts';
import type { DriverOptions, DriverWeights, FArray } from './driver.ts';

export interface EngineOptions extends Partial<Omit<DriverOptions, 'dtype'>> {
  /** float32 for training; float64 for gradient checks. */
  dtype?: FloatDType;
  /** ORT intra-op threads (default: every core). */
  threads?: number;
  /** The ORT execution provider the graphs run on (default cpu; node/engine/device.ts picks one). */
  provider?: ExecutionProvider;
  /** ONNX op types the provider lacks (its op probe, op-probe.ts): lowered as compositions of other ops instead. */
  missingOps?: readonly string[];
  /**
   * A GGUF base: round each frozen linear's input as llama.cpp's CPU kernels do for its weight type, so the forward
   * equals what Rein's model server (llama.cpp) computes from the same file (default true; gguf/load.ts).
   */
  matchLlamaCpp?: boolean;
  /**
   * Keep a GGUF's Q4_0/Q4_1/Q4_K/Q8_0 linear weights and embedding block-quantized (common/engine/quant.ts) instead
   * of dequantizing them to f32 (default true; float32 only). About a fifth of the memory; see docs/performance.md
   * ("Quantized bases") for the measured time and memory.
   */
  quantized?: boolean;
}

/**
 * How Rein loads a base to train, score or gate on: float32, with the user's `training.matchLlamaCpp` and
 * `training.keepQuantized`. One place, so a round's π, the reward model's features (fitted after a round, scored in
 * the core) and the gym gate's play come from the same forward pass.
 */
export function baseEngineOptions(settings: Pick<Settings, 'training.matchLlamaCpp' | 'training.keepQuantized'>, threads?: number): EngineOptions {
  return { dtype: 'float32', threads, matchLlamaCpp: settings['training.matchLlamaCpp'], quantized: settings['training.keepQuantized'] };
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
    this.runtime = new Runtime({ provider: opts.provider, intraOpThreads: opts.threads, optimization: dtype === 'float64' ? 'basic' : 'all', missingOps: opts.missingOps });
    this.driver = new Driver(config, weights, this.runtime, { ...opts, dtype });
  }

  /** Loads an HF model directory (config.json, safetensors, tokenizer) or a .gguf file through node/engine/hf.ts loadModel. */
  static load(dir: string, opts: EngineOptions = {}): Engine {
    const m = loadModel(dir, { matchLlamaCpp: opts.matchLlamaCpp });
    try {
      const quant = (opts.quantized ?? true) && (opts.dtype ?? 'float32') === 'float32' && m.readQuant !== undefined;
      return Engine.fromWeights(m.config, (key) => (quant ? m.readQuant!(key) : null) ?? m.read(key, { as: opts.dtype === 'float64' ? 'f64' : 'f32' }), opts, m.tokenizer);
    } finally {
      m.close();
    }
  }

  /**
   * From weights in memory, by HF key (the benchmark generates them; tests may perturb them). A linear weight or
   * the embedding may be block-quantized (float32 only).
   */
  static fromWeights(config: ModelConfig, read: (hfKey: string) => FArray | QuantWeight, opts: EngineOptions = {}, tokenizer: ReinTokenizer | null = null): Engine {
    const params = modelParams(config);
    const layers: Record<string, FArray | QuantWeight>[] = Array.from({ length: config.numLayers }, () => ({}));
    const model: Record<string, FArray | QuantWeight> = {};
    const want = opts.dtype ?? 'float32';
    for (const p of params) {
      let a = read(p.hfKey);
      if (isQuant(a)) {
        if (p.name === 'norm' || (p.kind !== 'linear' && p.kind !== 'embedding')) throw new BadInputError(`${p.hfKey} cannot be quantized (only linear weights and the embedding)`, p.hfKey);
      } else if (want === 'float64' && !(a instanceof Float64Array)) a = Float64Array.from(a);
      else if (want === 'float32' && !(a instanceof Float32Array)) a = Float32Array.from(a);
      if (p.layer === null) model[p.name] = a;
      else layers[p.layer]![p.name] = a;
    }
    const embed = model['embed_tokens']!;
    const weights: DriverWeights = { layers, embed, norm: model['norm'] as FArray, lmHead: config.tieWordEmbeddings ? embed : model['lm_head']! };
    return new Engine(config, weights, tokenizer, opts);
  }

  static fromHf(m: HfModel, opts: EngineOptions = {}): Engine {
    return Engine.fromWeights(m.config, (key) => m.read(key, { as: opts.dtype === 'float64' ? 'f64' : 'f32' }), opts, m.tokenizer);
  }

  /**
   * A fresh adapter (B = 0) for this model. Without explicit targets, the default modules this model has (an MoE
   * model's LoRA targets are its attention projections only, families/moe.ts).
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

  /** Host↔device bytes moved by the sessions since the last call (none on the CPU; runtime.ts Traffic), and a new count. */
  resetTraffic(): Traffic {
    return this.runtime.resetTraffic();
  }

  async close(): Promise<void> {
    await this.runtime.dispose();
  }
}
