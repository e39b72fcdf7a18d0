// Llama-family decoder: HF LlamaForCausalLM (Llama 2, Llama 3.x with rope_scaling "llama3"),
// Qwen2ForCausalLM (Qwen2 / Qwen2.5: q/k/v biases), Qwen3ForCausalLM (Qwen3: RMSNorm over each q/k head before
// RoPE, no biases) and MistralForCausalLM (Llama's layer with an optional sliding attention window). Read top to
// bottom: dimension legend, config, parameter table, forward.
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
//   W    sliding attention window (Mistral sliding_window): query i sees keys j with i − W < j ≤ i
import { z } from 'zod';
import { MAX_LAYERS, ModelConfigError, resolveParams } from './params.ts';
import type { ParamRow, ResolvedParam } from './params.ts';
import { Graph } from '../ir.ts';
import type { Tensor } from '../ir.ts';
import * as op from '../ops.ts';
import { grad } from '../autodiff.ts';
import { groupedAttention, layerInputs, quantizeActivations, rmsNorm, rope, ropeInvFreq, ropeTables, type ActQuantTable, type FloatDType, type HeadGrad, type RopeScaling } from '../composites.ts';
import { loraLinear, type LayerLora } from '../lora.ts';
import { type QuantInputs, type QuantSpec, frozenLinear, matmulDequant, quantInputs } from '../quant.ts';
import { type HeadTiling, headTiles, tiledLogprobs } from '../head.ts';

/** Which weights of a graph are block-quantized (quant.ts), by parameter-table name; the others are f32 inputs. */
export type QuantLayout = Readonly<Record<string, QuantSpec>>;

export const LLAMA_ARCHITECTURES = ['LlamaForCausalLM', 'Qwen2ForCausalLM', 'Qwen3ForCausalLM', 'MistralForCausalLM'] as const;
export type LlamaArchitecture = (typeof LLAMA_ARCHITECTURES)[number];

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
  /** Qwen3: RMSNorm with its own [D] weight over each query and key head, before RoPE (HF Qwen3Attention). */
  qkNorm: boolean;
  /** Mistral: keys older than this many positions are masked (HF sliding_window); null for full causal attention. */
  slidingWindow: number | null;
  bosTokenId: number | null;
  eosTokenIds: number[];
  /**
   * A GGUF base only (gguf/load.ts): how llama.cpp rounds each frozen linear's input for that weight's type, so our
   * forward computes what llama.cpp serves from the same file. Absent: exact f32 products.
   */
  actQuant?: ActQuantTable;
}

export type LlamaDim = 'V' | 'H' | 'I' | 'Q' | 'KV' | 'D';

export function llamaDims(c: LlamaConfig): Record<LlamaDim, number> {
  return { V: c.vocabSize, H: c.hiddenSize, I: c.intermediateSize, Q: c.numHeads * c.headDim, KV: c.numKvHeads * c.headDim, D: c.headDim };
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
  num_hidden_layers: posInt.max(MAX_LAYERS),
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
  sliding_window: posInt.nullish(),
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
  const isQwen3 = architecture === 'Qwen3ForCausalLM';
  if (isQwen3 && j.attention_bias === true) throw new ModelConfigError('Qwen3 attention_bias is not supported', 'attention_bias');
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
    mlpBias: !isQwen2 && !isQwen3 && j.mlp_bias === true,
    qkNorm: isQwen3,
    // Only Mistral applies sliding_window unconditionally; Qwen2/3 gate it behind use_sliding_window (refused above).
    slidingWindow: architecture === 'MistralForCausalLM' ? (j.sliding_window ?? null) : null,
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
  { name: 'q_norm', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.q_norm.weight', shape: ['D'], kind: 'norm', init: 'ones', when: (c) => c.qkNorm },
  { name: 'k_norm', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.k_norm.weight', shape: ['D'], kind: 'norm', init: 'ones', when: (c) => c.qkNorm },
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

// Forward. One decoder-layer graph serves every layer (its weights are graph inputs, fed layer by layer by the driver
// in node/engine/driver.ts); the embedding lookup is a row copy in the driver; the final norm + lm_head +
// log-softmax + target gather is its own graph, run over chunks of tokens so [T, V] never exists whole.
// T is a symbol, bound per shape bucket when a graph is emitted.

/**
 * The decoder-layer graph. Inputs: 'x' [T, H]; 'rope_cos', 'rope_sin' [T, D/2] (ropeTablesFor); 'mask' [T, T], 0 on and
 * below the diagonal and −∞ above (composites.ts causalMaskTable); the layer's weights under their parameter-table names ('q_proj',
 * 'q_proj.bias', 'input_layernorm', …); with LoRA, '<module>.lora_A' [r, in] and '<module>.lora_B' [out, r].
 * Output: 'y' [T, H].
 */
/** A config with Llama's fields under another architecture name (families/moe.ts reuses the attention block). */
export type LlamaLike = Omit<LlamaConfig, 'architecture'> & { architecture: string };

/**
 * A family that keeps this attention block and replaces the MLP (families/moe.ts): its layer weights (graph inputs)
 * and its MLP, given the normed input h2 [T, H], the LoRA-aware linear and the weight inputs; returns [T, H].
 */
export interface LayerVariant {
  name: string;
  params: readonly ResolvedParam[];
  mlp: (h2: Tensor, linear: (h: Tensor, m: string) => Tensor, w: Readonly<Record<string, Tensor>>) => Tensor;
}

export function llamaLayerGraph(c: LlamaLike, dtype: FloatDType, lora: LayerLora | null, variant?: LayerVariant, quant: QuantLayout = {}): Graph {
  const quantized = Object.keys(quant).length > 0;
  const g = new Graph(`${variant?.name ?? 'llama'}_layer${lora === null ? '' : '_lora'}${quantized ? '_q' : ''}`);
  const T = 'T';
  const H = c.hiddenSize;
  const D = c.headDim;
  const NH = c.numHeads;
  const KVH = c.numKvHeads;

  const { x, cos, sin, mask } = layerInputs(g, dtype, H, D); // [T, H], [T, D/2] ×2, [T, T]
  const w: Record<string, Tensor> = {};
  const qw: Record<string, QuantInputs> = {}; // quantized linears: '<name>.qweight', '.scales', ('.zero_points')
  for (const p of variant?.params ?? llamaLayerParams(c as LlamaConfig, 0)) {
    const spec = quant[p.name];
    if (spec === undefined) w[p.name] = g.input(p.name, dtype, p.shape);
    else qw[p.name] = quantInputs(g, p.name, p.shape[0] as number, p.shape[1] as number, spec);
  }
  const linear = loraLinear(g, dtype, w, lora, 'llamaLayerGraph', qw, c.actQuant?.modules);

  // Attention block.
  const h = rmsNorm(x, w['input_layernorm']!, c.rmsNormEps); // [T, H]
  const v0 = linear(h, 'v_proj'); // [T, KVH·D]
  let q0: Tensor; // [T, NH, D]
  let k0: Tensor; // [T, KVH, D]
  if (c.qkNorm) {
    // Qwen3: per-head RMSNorm of q and k before RoPE; the softmax scale comes after the norm (RoPE is linear).
    q0 = op.mul(rmsNorm(op.reshape(linear(h, 'q_proj'), [T, NH, D]), w['q_norm']!, c.rmsNormEps), 1 / Math.sqrt(D));
    k0 = rmsNorm(op.reshape(linear(h, 'k_proj'), [T, KVH, D]), w['k_norm']!, c.rmsNormEps);
  } else {
    q0 = op.reshape(op.mul(linear(h, 'q_proj'), 1 / Math.sqrt(D)), [T, NH, D]); // softmax scale folded into q
    k0 = op.reshape(linear(h, 'k_proj'), [T, KVH, D]);
  }
  const q1 = rope(q0, cos, sin, 'half'); // [T, NH, D]
  const k1 = rope(k0, cos, sin, 'half'); // [T, KVH, D]
  const o = groupedAttention(q1, k1, v0, mask, { nHeads: NH, nKvHeads: KVH, headDim: D }); // [T, NH·D], causal
  const x1 = op.add(x, linear(o, 'o_proj')); // [T, H]

  // MLP block: SwiGLU, down(silu(gate(h)) · up(h)).
  const h2 = rmsNorm(x1, w['post_attention_layernorm']!, c.rmsNormEps); // [T, H]
  if (variant !== undefined) {
    g.output('y', op.add(x1, variant.mlp(h2, linear, w))); // [T, H]
    return g;
  }
  const gate = linear(h2, 'gate_proj'); // [T, I]
  const act = op.mul(op.mul(gate, op.sigmoid(gate)), linear(h2, 'up_proj')); // [T, I]
  g.output('y', op.add(x1, linear(act, 'down_proj'))); // [T, H]
  return g;
}

/**
 * The head graph over a chunk of T tokens: final RMSNorm, lm_head, log-softmax, and the log-probability of each
 * target. Inputs: 'h' [T, H] (the last layer's output), 'norm' [H], 'lm_head' [V, H] (embed_tokens when tied),
 * 'targets' [T] int64. Outputs: 'logp' [T]; unless `withGrad` is 'none', also 'dlogp_dh' [T, H], the gradient of
 * Σ logp toward h. Because logp_t depends on h_t alone (the norm is per token), row t of it is ∂logp_t/∂h_t, so the
 * backward of any loss of the logps is dLoss/dh_t = dLoss/dlogp_t · dlogp_dh_t: the lm_head backward happens in the
 * same pass as its forward, and no [T, V] value outlives the chunk.
 *
 * With `tiles` ('none' and 'fused' only; the driver's default), the lm_head is read in row tiles with a running
 * log-sum-exp (head.ts), so no [T, V] value exists; it then also takes 'lm_head.rows' [T, H] (W[targets]) and, for an
 * f32 head, 'lm_head.tileK' [n, H] views in place of 'lm_head'.
 *
 * 'fused' is a performance exception (house style 6; llama.test.ts proves it equals 'symbolic'): with p = softmax,
 * ∂logp_t/∂hn_t = W[target_t] − p_t·W, so one Exp over [T, V] and a Gemm whose C input is the gathered rows replace
 * the symbolic chain's scatter of a one-hot, reduce, exp, mul and sub over [T, V].
 */
export function llamaHeadGraph(c: LlamaLike, dtype: FloatDType, withGrad: HeadGrad, quant: QuantSpec | null = null, tiles: HeadTiling | null = null): Graph {
  const tiled = tiles !== null && withGrad !== 'symbolic';
  const g = new Graph(`${withGrad === 'none' ? 'llama_head' : `llama_head_grad_${withGrad}`}${quant === null ? '' : '_q'}${tiled ? '_tiled' : ''}`);
  const T = 'T';
  const H = c.hiddenSize;
  const V = c.vocabSize;
  const h = g.input('h', dtype, [T, H]); // [T, H]
  const norm = g.input('norm', dtype, [H]); // [H]
  if (tiled) {
    // The vocabulary in tiles with a running log-sum-exp (head.ts): no [T, V] buffer, the same log p and ∂log p/∂h.
    const hn = rmsNorm(h, norm, c.rmsNormEps); // [T, H]
    const parts = headTiles(g, dtype, V, H, quant, tiles.tileValues); // f32 'lm_head.tileK' [n, H] or the quantized parts
    const rows = g.input('lm_head.rows', dtype, [T, H]); // [T, H], W[targets]
    const { logp, dx } = tiledLogprobs(quantizeActivations(hn, c.actQuant?.lmHead), parts, rows, withGrad === 'fused');
    g.output('logp', logp); // [T]
    if (dx !== null) g.output('dlogp_dh', grad([hn], [h], [dx])[0]!); // [T, H], straight through the rounding
    return g;
  }
  // [V, H], f32 or quantized ('lm_head.qweight', …)
  const W = quant === null ? g.input('lm_head', dtype, [V, H]) : quantInputs(g, 'lm_head', V, H, quant);
  const targets = g.input('targets', 'int64', [T]); // [T]
  const hn = rmsNorm(h, norm, c.rmsNormEps); // [T, H]
  // The rounding is straight through, so ∂logp/∂hn below is the same expression as without it.
  const logits = frozenLinear(quantizeActivations(hn, c.actQuant?.lmHead), W); // [T, V]
  const lsm = op.logSoftmax(logits, 1); // [T, V]
  const logp = op.reshape(op.gatherElements(lsm, op.reshape(targets, [T, 1]), 1), [T]); // [T]
  g.output('logp', logp);
  if (withGrad !== 'none' && 'spec' in W) {
    // A quantized lm_head: the autodiff down to the logits, then G·W with W dequantized one part at a time in order
    // (matmulDequant), so at most one part of the [V, H] head exists in f32.
    const dlogits = grad([logp], [logits])[0]!; // [T, V]
    g.output('dlogp_dh', grad([hn], [h], [matmulDequant(dlogits, W)])[0]!); // [T, H]
  } else if (withGrad === 'symbolic') g.output('dlogp_dh', grad([logp], [h])[0]!); // [T, H]
  else if (withGrad === 'fused' && !('spec' in W)) {
    const dhn = op.gemm(op.exp(lsm), W, { alpha: -1 }, op.gather(W, targets, 0)); // [T, H] = W[targets] − p·W
    g.output('dlogp_dh', grad([hn], [h], [dhn])[0]!); // [T, H], through the norm by the autodiff
  }
  return g;
}

/** Final norm, lm_head and log-softmax over the whole vocabulary, for sampling: 'h' [T, H] → 'logp_all' [T, V]. */
export function llamaLogitsGraph(c: LlamaLike, dtype: FloatDType, quant: QuantSpec | null = null): Graph {
  const g = new Graph(`llama_logits${quant === null ? '' : '_q'}`);
  const h = g.input('h', dtype, ['T', c.hiddenSize]); // [T, H]
  const norm = g.input('norm', dtype, [c.hiddenSize]); // [H]
  const W = quant === null ? g.input('lm_head', dtype, [c.vocabSize, c.hiddenSize]) : quantInputs(g, 'lm_head', c.vocabSize, c.hiddenSize, quant); // [V, H]
  const hn = quantizeActivations(rmsNorm(h, norm, c.rmsNormEps), c.actQuant?.lmHead); // [T, H]
  g.output('logp_all', op.logSoftmax(frozenLinear(hn, W), 1)); // [T, V]
  return g;
}

/** RoPE angle tables of this config for positions 0..T−1: cos and sin of p·inv_freq_i, row-major [T, D/2], float64. */
export function ropeTablesFor(c: Pick<LlamaConfig, 'headDim' | 'ropeTheta' | 'ropeScaling'>, T: number): { cos: Float64Array; sin: Float64Array } {
  return ropeTablesAt(c, [...Array(T).keys()]);
}

/** The same tables at any positions, one row per position (a packed sequence's: composites.ts PackedRows). */
export function ropeTablesAt(c: Pick<LlamaConfig, 'headDim' | 'ropeTheta' | 'ropeScaling'>, positions: ArrayLike<number>): { cos: Float64Array; sin: Float64Array } {
  const t = ropeTables(Array.from(positions), ropeInvFreq(c.headDim, c.ropeTheta, c.ropeScaling), 'float64');
  return { cos: t.cos as Float64Array, sin: t.sin as Float64Array };
}
