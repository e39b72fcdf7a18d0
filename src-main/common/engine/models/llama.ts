// Llama-family decoder: HF LlamaForCausalLM (Llama 2, Llama 3.x with rope_scaling "llama3") and
// Qwen2ForCausalLM (Qwen2 / Qwen2.5: q/k/v biases). Read top to bottom: dimension legend, config, parameter
// table, forward.
//
// Dimension legend
//   T    tokens in the sequence (batch 1 per sequence; activations are 2-D [T, H])
//   H    hidden size                      (config.json hidden_size)
//   V    vocabulary size                  (vocab_size)
//   I    MLP intermediate size            (intermediate_size)
//   L    decoder layers                   (num_hidden_layers)
//   NH   query heads                      (num_attention_heads)
//   KVH  key/value heads, NH % KVH == 0   (num_key_value_heads; GQA when KVH < NH)
//   D    head dimension                   (head_dim, default H / NH)
//   Q    query projection width  = NH · D
//   KV   key/value projection width = KVH · D
import { z } from 'zod';
import { ModelConfigError, resolveParams } from './params.ts';
import type { ParamRow, ResolvedParam } from './params.ts';

export const LLAMA_ARCHITECTURES = ['LlamaForCausalLM', 'Qwen2ForCausalLM'] as const;
export type LlamaArchitecture = (typeof LLAMA_ARCHITECTURES)[number];

/**
 * RoPE frequency scaling. 'llama3' is Llama 3.1+'s wavelength-dependent scaling (HF
 * modeling_rope_utils._compute_llama3_parameters); 'linear' divides positions by `factor`.
 */
export type RopeScaling =
  | {
      type: 'llama3';
      factor: number;
      lowFreqFactor: number;
      highFreqFactor: number;
      originalMaxPositionEmbeddings: number;
    }
  | { type: 'linear'; factor: number };

export interface LlamaConfig {
  architecture: LlamaArchitecture;
  vocabSize: number; // V
  hiddenSize: number; // H
  intermediateSize: number; // I
  numLayers: number; // L
  numHeads: number; // NH
  numKvHeads: number; // KVH
  headDim: number; // D
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: RopeScaling | null;
  maxPositionEmbeddings: number;
  /** No lm_head.weight in the files: logits use embed_tokens.weight. */
  tieWordEmbeddings: boolean;
  /** Biases on q/k/v (Qwen2 always; Llama when attention_bias). */
  qkvBias: boolean;
  /** Bias on o_proj (Llama attention_bias only; Qwen2's o_proj has none). */
  oBias: boolean;
  /** Biases on gate/up/down (Llama mlp_bias). */
  mlpBias: boolean;
  bosTokenId: number | null;
  eosTokenIds: number[];
}

export type LlamaDim = 'V' | 'H' | 'I' | 'Q' | 'KV';

export function llamaDims(c: LlamaConfig): Record<LlamaDim, number> {
  return { V: c.vocabSize, H: c.hiddenSize, I: c.intermediateSize, Q: c.numHeads * c.headDim, KV: c.numKvHeads * c.headDim };
}

const posInt = z.number().int().positive();
const tokenId = z.number().int().nonnegative();
const ropeScalingSchema = z.looseObject({
  rope_type: z.string().optional(),
  type: z.string().optional(),
  factor: z.number().positive().optional(),
  low_freq_factor: z.number().positive().optional(),
  high_freq_factor: z.number().positive().optional(),
  original_max_position_embeddings: posInt.optional(),
});
const hfConfigSchema = z.looseObject({
  architectures: z.array(z.string()).min(1),
  vocab_size: posInt,
  hidden_size: posInt,
  intermediate_size: posInt,
  num_hidden_layers: posInt,
  num_attention_heads: posInt,
  num_key_value_heads: posInt.optional(),
  head_dim: posInt.nullish(),
  hidden_act: z.string().optional(),
  rms_norm_eps: z.number().positive().max(1),
  rope_theta: z.number().positive().optional(),
  rope_scaling: ropeScalingSchema.nullish(),
  max_position_embeddings: posInt.optional(),
  tie_word_embeddings: z.boolean().optional(),
  attention_bias: z.boolean().optional(),
  mlp_bias: z.boolean().optional(),
  use_sliding_window: z.boolean().optional(),
  bos_token_id: tokenId.nullish(),
  eos_token_id: z.union([tokenId, z.array(tokenId)]).nullish(),
});

/** Parse an HF config.json object. Throws ModelConfigError naming the field that is missing or wrong. */
export function parseLlamaConfig(json: unknown): LlamaConfig {
  const arch = (json as { architectures?: unknown } | null)?.architectures;
  const archName = Array.isArray(arch) && typeof arch[0] === 'string' ? arch[0] : undefined;
  if (archName === undefined) throw new ModelConfigError('config.json has no "architectures" list', 'architectures');
  if (!(LLAMA_ARCHITECTURES as readonly string[]).includes(archName)) {
    throw new ModelConfigError(
      `unsupported architecture ${archName}; supported: ${LLAMA_ARCHITECTURES.join(', ')}`,
      'architectures',
      { architecture: archName },
    );
  }
  const parsed = hfConfigSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join('.');
    throw new ModelConfigError(`config.json field "${field}": ${issue.message}`, field);
  }
  const j = parsed.data;
  const architecture = archName as LlamaArchitecture;
  if (j.hidden_act !== undefined && j.hidden_act !== 'silu') {
    throw new ModelConfigError(`hidden_act "${j.hidden_act}" is not supported (only silu)`, 'hidden_act');
  }
  if (j.use_sliding_window === true) {
    throw new ModelConfigError('use_sliding_window is not supported (Qwen2 sliding-window attention)', 'use_sliding_window');
  }
  const numKvHeads = j.num_key_value_heads ?? j.num_attention_heads;
  if (j.num_attention_heads % numKvHeads !== 0) {
    throw new ModelConfigError(
      `num_attention_heads (${j.num_attention_heads}) is not a multiple of num_key_value_heads (${numKvHeads})`,
      'num_key_value_heads',
    );
  }
  let headDim = j.head_dim ?? undefined;
  if (headDim === undefined) {
    if (j.hidden_size % j.num_attention_heads !== 0) {
      throw new ModelConfigError(
        `hidden_size (${j.hidden_size}) is not a multiple of num_attention_heads (${j.num_attention_heads}) and head_dim is not given`,
        'head_dim',
      );
    }
    headDim = j.hidden_size / j.num_attention_heads;
  }
  const isQwen2 = architecture === 'Qwen2ForCausalLM';
  const eos = j.eos_token_id;
  return {
    architecture,
    vocabSize: j.vocab_size,
    hiddenSize: j.hidden_size,
    intermediateSize: j.intermediate_size,
    numLayers: j.num_hidden_layers,
    numHeads: j.num_attention_heads,
    numKvHeads,
    headDim,
    rmsNormEps: j.rms_norm_eps,
    ropeTheta: j.rope_theta ?? 10000,
    ropeScaling: parseRopeScaling(j.rope_scaling ?? null),
    maxPositionEmbeddings: j.max_position_embeddings ?? 2048,
    tieWordEmbeddings: j.tie_word_embeddings ?? false,
    qkvBias: isQwen2 || j.attention_bias === true,
    oBias: !isQwen2 && j.attention_bias === true,
    mlpBias: !isQwen2 && j.mlp_bias === true,
    bosTokenId: j.bos_token_id ?? null,
    eosTokenIds: eos === undefined || eos === null ? [] : Array.isArray(eos) ? eos : [eos],
  };
}

function parseRopeScaling(rs: z.infer<typeof ropeScalingSchema> | null): RopeScaling | null {
  if (rs === null) return null;
  const kind = rs.rope_type ?? rs.type;
  const need = (v: number | undefined, f: string): number => {
    if (v === undefined) throw new ModelConfigError(`rope_scaling.${f} is required for rope_type "${kind}"`, `rope_scaling.${f}`);
    return v;
  };
  if (kind === 'default') return null;
  if (kind === 'llama3') {
    return {
      type: 'llama3',
      factor: need(rs.factor, 'factor'),
      lowFreqFactor: need(rs.low_freq_factor, 'low_freq_factor'),
      highFreqFactor: need(rs.high_freq_factor, 'high_freq_factor'),
      originalMaxPositionEmbeddings: need(rs.original_max_position_embeddings, 'original_max_position_embeddings'),
    };
  }
  if (kind === 'linear') return { type: 'linear', factor: need(rs.factor, 'factor') };
  throw new ModelConfigError(`rope_scaling type "${String(kind)}" is not supported (llama3, linear)`, 'rope_scaling.rope_type');
}

// The parameter table. HF layout: linear weights are [out, in] and used as y = x·Wᵀ (Gemm transB=1).
// Rows in the order HF writes them; `init` is what the tiny random model uses (normal = N(0, 0.02²)).
export const LLAMA_PARAMS: readonly ParamRow<LlamaConfig, LlamaDim>[] = [
  { name: 'embed_tokens', scope: 'model', hfKey: 'model.embed_tokens.weight', shape: ['V', 'H'], kind: 'embedding', init: 'normal' },
  { name: 'input_layernorm', scope: 'layer', hfKey: 'model.layers.{i}.input_layernorm.weight', shape: ['H'], kind: 'norm', init: 'ones' },
  { name: 'q_proj', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.q_proj.weight', shape: ['Q', 'H'], kind: 'linear', init: 'normal' },
  { name: 'q_proj.bias', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.q_proj.bias', shape: ['Q'], kind: 'bias', init: 'normal', when: (c) => c.qkvBias },
  { name: 'k_proj', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.k_proj.weight', shape: ['KV', 'H'], kind: 'linear', init: 'normal' },
  { name: 'k_proj.bias', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.k_proj.bias', shape: ['KV'], kind: 'bias', init: 'normal', when: (c) => c.qkvBias },
  { name: 'v_proj', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.v_proj.weight', shape: ['KV', 'H'], kind: 'linear', init: 'normal' },
  { name: 'v_proj.bias', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.v_proj.bias', shape: ['KV'], kind: 'bias', init: 'normal', when: (c) => c.qkvBias },
  { name: 'o_proj', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.o_proj.weight', shape: ['H', 'Q'], kind: 'linear', init: 'normal' },
  { name: 'o_proj.bias', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.o_proj.bias', shape: ['H'], kind: 'bias', init: 'normal', when: (c) => c.oBias },
  { name: 'post_attention_layernorm', scope: 'layer', hfKey: 'model.layers.{i}.post_attention_layernorm.weight', shape: ['H'], kind: 'norm', init: 'ones' },
  { name: 'gate_proj', scope: 'layer', hfKey: 'model.layers.{i}.mlp.gate_proj.weight', shape: ['I', 'H'], kind: 'linear', init: 'normal' },
  { name: 'gate_proj.bias', scope: 'layer', hfKey: 'model.layers.{i}.mlp.gate_proj.bias', shape: ['I'], kind: 'bias', init: 'normal', when: (c) => c.mlpBias },
  { name: 'up_proj', scope: 'layer', hfKey: 'model.layers.{i}.mlp.up_proj.weight', shape: ['I', 'H'], kind: 'linear', init: 'normal' },
  { name: 'up_proj.bias', scope: 'layer', hfKey: 'model.layers.{i}.mlp.up_proj.bias', shape: ['I'], kind: 'bias', init: 'normal', when: (c) => c.mlpBias },
  { name: 'down_proj', scope: 'layer', hfKey: 'model.layers.{i}.mlp.down_proj.weight', shape: ['H', 'I'], kind: 'linear', init: 'normal' },
  { name: 'down_proj.bias', scope: 'layer', hfKey: 'model.layers.{i}.mlp.down_proj.bias', shape: ['H'], kind: 'bias', init: 'normal', when: (c) => c.mlpBias },
  { name: 'norm', scope: 'model', hfKey: 'model.norm.weight', shape: ['H'], kind: 'norm', init: 'ones' },
  { name: 'lm_head', scope: 'model', hfKey: 'lm_head.weight', shape: ['V', 'H'], kind: 'linear', init: 'normal', when: (c) => !c.tieWordEmbeddings },
];

/** Every weight of the model, in file order, with numeric shapes and HF keys. */
export function llamaParams(c: LlamaConfig): ResolvedParam[] {
  return resolveParams(LLAMA_PARAMS, c, llamaDims(c), c.numLayers);
}

/** The weights of one decoder layer (the per-layer graph's weight inputs), in table order. */
export function llamaLayerParams(c: LlamaConfig, layer: number): ResolvedParam[] {
  return llamaParams(c).filter((p) => p.layer === layer);
}

/** The linear weights inside the decoder layers: what LoRA may target (lm_head is never a LoRA target). */
export function llamaLinearParams(c: LlamaConfig): ResolvedParam[] {
  return llamaParams(c).filter((p) => p.kind === 'linear' && p.layer !== null);
}
