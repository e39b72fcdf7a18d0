// Gemma decoder: HF Gemma2ForCausalLM and Gemma3ForCausalLM (text only; model_type gemma3_text). Read top to bottom:
// dimension legend, config, parameter table, forward. Sources: transformers models/gemma2/modeling_gemma2.py and
// models/gemma3/modeling_gemma3.py; llama.cpp src/models/gemma2.cpp and gemma3.cpp (the referee of the parity tests).
// What differs from Llama (llama.ts):
//   - the embedding is scaled by √H (Gemma*ScaledWordEmbedding / inputs_embeds * normalizer): done by the driver's
//     row copy (gemmaEmbedScale), since the lookup is not a graph;
//   - every RMSNorm scales by (1 + w) (GemmaRMSNorm), the weights in the files being offsets from 1;
//   - four norms per layer: input, post-attention (on the attention output, before the residual add),
//     pre-feed-forward and post-feed-forward (on the MLP output);
//   - GeGLU MLP with the tanh GELU (hidden_activation "gelu_pytorch_tanh");
//   - scores scaled by query_pre_attn_scalar^−½ instead of D^−½; Gemma 2 soft-caps them (cap·tanh(s/cap)) before the
//     mask; Gemma 2 soft-caps the final logits too;
//   - layers alternate local (sliding window) and global attention: Gemma 2 every other layer starting local,
//     Gemma 3 five local then one global (layer_types when config.json lists them);
//   - Gemma 3 normalises each q/k head (a (1 + w) RMSNorm over D) before RoPE, and its local layers use RoPE base
//     rope_local_base_freq without rope_scaling while global ones use rope_theta with it.
//
// Dimension legend
//   T    tokens in the sequence (activations are 2-D [T, H], batch 1 per sequence)
//   H    hidden size                      (hidden_size)
//   V    vocabulary size                  (vocab_size)
//   I    MLP intermediate size            (intermediate_size)
//   NH   query heads, KVH key/value heads (num_attention_heads, num_key_value_heads; GQA)
//   D    head dimension                   (head_dim; Gemma's is not H / NH)
//   Q    NH · D,  KV  KVH · D
//   W    sliding window of local layers   (sliding_window): query i sees keys j with i − W < j ≤ i
import { z } from 'zod';
import { MAX_LAYERS, ModelConfigError, resolveParams } from './params.ts';
import type { ParamRow, ResolvedParam } from './params.ts';
import { ropeTablesAt, ropeTablesFor } from './llama.ts';
import { loraLinear, type LayerLora } from '../lora.ts';
import type { LlamaConfig } from './llama.ts';
import { Graph } from '../ir.ts';
import type { Tensor } from '../ir.ts';
import * as op from '../ops.ts';
import { causalMaskTable, geglu, groupedAttention, layerInputs, packedMaskTable, quantizeActivations, rmsNorm, rope, softcap, type FloatDType, type HeadGrad, type PackedRows, type RopeScaling } from '../composites.ts';
import { grad } from '../autodiff.ts';

export const GEMMA_ARCHITECTURES = ['Gemma2ForCausalLM', 'Gemma3ForCausalLM'] as const;
export type GemmaArchitecture = (typeof GEMMA_ARCHITECTURES)[number];

export type GemmaLayerType = 'sliding_attention' | 'full_attention';

/** Llama's fields (shared code reads them: GGUF metadata, the driver) plus Gemma's own. */
export interface GemmaConfig extends Omit<LlamaConfig, 'architecture'> {
  architecture: GemmaArchitecture;
  /** Scores are scaled by queryPreAttnScalar^−½ (query_pre_attn_scalar). */
  queryPreAttnScalar: number;
  /** Gemma 2: cap·tanh(scores/cap) before the mask (attn_logit_softcapping); null for none. */
  attnLogitSoftcapping: number | null;
  /** Gemma 2: cap·tanh(logits/cap) (final_logit_softcapping); null for none. */
  finalLogitSoftcapping: number | null;
  /** Per layer: local (sliding window `slidingWindow`) or global attention. */
  layerTypes: GemmaLayerType[];
  /** RoPE base of the local layers (Gemma 3 rope_local_base_freq; Gemma 2 uses rope_theta everywhere). */
  ropeLocalTheta: number;
}

export type GemmaDim = 'V' | 'H' | 'I' | 'Q' | 'KV' | 'D';

export function gemmaDims(c: GemmaConfig): Record<GemmaDim, number> {
  return { V: c.vocabSize, H: c.hiddenSize, I: c.intermediateSize, Q: c.numHeads * c.headDim, KV: c.numKvHeads * c.headDim, D: c.headDim };
}

const posInt = z.number().int().positive();
const tokenId = z.number().int().nonnegative();
const hfGemmaSchema = z.looseObject({
  vocab_size: posInt,
  hidden_size: posInt,
  intermediate_size: posInt,
  num_hidden_layers: posInt.max(MAX_LAYERS),
  num_attention_heads: posInt,
  num_key_value_heads: posInt.optional(),
  head_dim: posInt.optional(),
  hidden_activation: z.string().nullish(),
  hidden_act: z.string().nullish(),
  rms_norm_eps: z.number().positive().max(1),
  rope_theta: z.number().positive().optional(),
  rope_local_base_freq: z.number().positive().optional(),
  rope_scaling: z.looseObject({ rope_type: z.string().optional(), type: z.string().optional(), factor: z.number().positive().optional() }).nullish(),
  max_position_embeddings: posInt.optional(),
  query_pre_attn_scalar: z.number().positive().optional(),
  attn_logit_softcapping: z.number().positive().nullish(),
  final_logit_softcapping: z.number().positive().nullish(),
  sliding_window: posInt.nullish(),
  sliding_window_pattern: posInt.optional(),
  layer_types: z.array(z.enum(['sliding_attention', 'full_attention'])).optional(),
  attention_bias: z.boolean().optional(),
  tie_word_embeddings: z.boolean().optional(),
  bos_token_id: tokenId.nullish(),
  eos_token_id: z.union([tokenId, z.array(tokenId)]).nullish(),
});

/** Parse a Gemma 2/3 config.json (architectures[0] already checked by the caller). Throws ModelConfigError naming the field. */
export function parseGemmaConfig(json: unknown, architecture: GemmaArchitecture): GemmaConfig {
  const parsed = hfGemmaSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join('.');
    throw new ModelConfigError(`config.json field "${field}": ${issue.message}`, field);
  }
  const j = parsed.data;
  const gemma3 = architecture === 'Gemma3ForCausalLM';
  const act = j.hidden_activation ?? j.hidden_act ?? 'gelu_pytorch_tanh';
  if (act !== 'gelu_pytorch_tanh') throw new ModelConfigError(`hidden_activation "${act}" is not supported (only gelu_pytorch_tanh)`, 'hidden_activation');
  if (j.attention_bias === true) throw new ModelConfigError('Gemma attention_bias is not supported', 'attention_bias');
  const numKvHeads = j.num_key_value_heads ?? j.num_attention_heads;
  if (j.num_attention_heads % numKvHeads !== 0) {
    throw new ModelConfigError(`num_attention_heads (${j.num_attention_heads}) is not a multiple of num_key_value_heads (${numKvHeads})`, 'num_key_value_heads');
  }
  const headDim = j.head_dim ?? 256; // Gemma2Config / Gemma3TextConfig default
  if (headDim % 2 !== 0) throw new ModelConfigError(`head_dim (${headDim}) must be even for RoPE`, 'head_dim');
  const L = j.num_hidden_layers;
  // HF Gemma2: layer i is local when i is even; Gemma3: when (i + 1) % sliding_window_pattern != 0 (default 6).
  const pattern = gemma3 ? (j.sliding_window_pattern ?? 6) : 2;
  const layerTypes: GemmaLayerType[] =
    j.layer_types ?? Array.from({ length: L }, (_, i): GemmaLayerType => ((i + 1) % pattern !== 0 ? 'sliding_attention' : 'full_attention'));
  if (layerTypes.length !== L) throw new ModelConfigError(`layer_types lists ${layerTypes.length} layers, num_hidden_layers is ${L}`, 'layer_types');
  const slidingWindow = j.sliding_window ?? 4096;
  let ropeScaling: RopeScaling | null = null;
  const rs = j.rope_scaling ?? null;
  const kind = rs?.rope_type ?? rs?.type;
  if (rs !== null && kind !== 'default') {
    if (kind !== 'linear' || rs.factor === undefined) throw new ModelConfigError(`rope_scaling ${JSON.stringify(rs)} is not supported for Gemma (linear only)`, 'rope_scaling');
    ropeScaling = { type: 'linear', factor: rs.factor };
  }
  const ropeTheta = j.rope_theta ?? (gemma3 ? 1_000_000 : 10000);
  const eos = j.eos_token_id;
  return {
    architecture,
    vocabSize: j.vocab_size,
    hiddenSize: j.hidden_size,
    intermediateSize: j.intermediate_size,
    numLayers: L,
    numHeads: j.num_attention_heads,
    numKvHeads,
    headDim,
    rmsNormEps: j.rms_norm_eps,
    ropeTheta,
    ropeScaling,
    maxPositionEmbeddings: j.max_position_embeddings ?? 8192,
    tieWordEmbeddings: j.tie_word_embeddings ?? true,
    qkvBias: false,
    oBias: false,
    mlpBias: false,
    qkNorm: gemma3,
    slidingWindow,
    bosTokenId: j.bos_token_id ?? null,
    eosTokenIds: eos === undefined || eos === null ? [] : Array.isArray(eos) ? eos : [eos],
    queryPreAttnScalar: j.query_pre_attn_scalar ?? headDim,
    attnLogitSoftcapping: gemma3 ? null : (j.attn_logit_softcapping ?? null),
    finalLogitSoftcapping: j.final_logit_softcapping ?? null,
    layerTypes,
    ropeLocalTheta: gemma3 ? (j.rope_local_base_freq ?? 10000) : ropeTheta,
  };
}

// The parameter table (HF names; linear weights [out, in]). Norm weights are offsets from 1, hence init 'offsets'.
// Our names for the four layer norms say where they sit: HF's post_attention_layernorm is Gemma's norm of the
// attention output, not Llama's pre-MLP norm, and llama.cpp names it differently (gguf/arch.ts).
export const GEMMA_PARAMS: readonly ParamRow<GemmaConfig, GemmaDim>[] = [
  { name: 'embed_tokens', scope: 'model', hfKey: 'model.embed_tokens.weight', shape: ['V', 'H'], kind: 'embedding', init: 'normal' },
  { name: 'input_layernorm', scope: 'layer', hfKey: 'model.layers.{i}.input_layernorm.weight', shape: ['H'], kind: 'norm', init: 'offsets' },
  { name: 'q_proj', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.q_proj.weight', shape: ['Q', 'H'], kind: 'linear', init: 'normal' },
  { name: 'k_proj', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.k_proj.weight', shape: ['KV', 'H'], kind: 'linear', init: 'normal' },
  { name: 'v_proj', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.v_proj.weight', shape: ['KV', 'H'], kind: 'linear', init: 'normal' },
  { name: 'o_proj', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.o_proj.weight', shape: ['H', 'Q'], kind: 'linear', init: 'normal' },
  { name: 'q_norm', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.q_norm.weight', shape: ['D'], kind: 'norm', init: 'offsets', when: (c) => c.qkNorm },
  { name: 'k_norm', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.k_norm.weight', shape: ['D'], kind: 'norm', init: 'offsets', when: (c) => c.qkNorm },
  { name: 'post_attention_norm', scope: 'layer', hfKey: 'model.layers.{i}.post_attention_layernorm.weight', shape: ['H'], kind: 'norm', init: 'offsets' },
  { name: 'pre_feedforward_layernorm', scope: 'layer', hfKey: 'model.layers.{i}.pre_feedforward_layernorm.weight', shape: ['H'], kind: 'norm', init: 'offsets' },
  { name: 'gate_proj', scope: 'layer', hfKey: 'model.layers.{i}.mlp.gate_proj.weight', shape: ['I', 'H'], kind: 'linear', init: 'normal' },
  { name: 'up_proj', scope: 'layer', hfKey: 'model.layers.{i}.mlp.up_proj.weight', shape: ['I', 'H'], kind: 'linear', init: 'normal' },
  { name: 'down_proj', scope: 'layer', hfKey: 'model.layers.{i}.mlp.down_proj.weight', shape: ['H', 'I'], kind: 'linear', init: 'normal' },
  { name: 'post_feedforward_layernorm', scope: 'layer', hfKey: 'model.layers.{i}.post_feedforward_layernorm.weight', shape: ['H'], kind: 'norm', init: 'offsets' },
  { name: 'norm', scope: 'model', hfKey: 'model.norm.weight', shape: ['H'], kind: 'norm', init: 'offsets' },
  { name: 'lm_head', scope: 'model', hfKey: 'lm_head.weight', shape: ['V', 'H'], kind: 'linear', init: 'normal', when: (c) => !c.tieWordEmbeddings },
];

export function gemmaParams(c: GemmaConfig): ResolvedParam[] {
  return resolveParams(GEMMA_PARAMS, c, gemmaDims(c), c.numLayers);
}

/** The linear weights inside the decoder layers (LoRA targets). */
export function gemmaLinearParams(c: GemmaConfig): ResolvedParam[] {
  return gemmaParams(c).filter((p) => p.kind === 'linear' && p.layer !== null);
}

/** HF Gemma2Model / Gemma3TextScaledWordEmbedding: embeddings × √H, the constant in the activations' dtype. */
export function gemmaEmbedScale(c: Pick<GemmaConfig, 'hiddenSize'>, dtype: FloatDType): number {
  const s = Math.sqrt(c.hiddenSize);
  return dtype === 'float32' ? Math.fround(s) : s;
}

// Forward. One layer graph serves local and global layers alike: what differs (the mask, the RoPE tables) is fed
// per layer by the driver from gemmaLayerTables.

/** RoPE tables and additive mask for a layer of this type at T tokens, in float64. */
export function gemmaLayerTables(c: GemmaConfig, type: GemmaLayerType, T: number): { cos: Float64Array; sin: Float64Array; mask: Float64Array } {
  const local = type === 'sliding_attention';
  // HF Gemma3: rotary_emb_local uses rope_local_base_freq and no scaling; llama.cpp uses freq_base_swa, scale 1.
  const { cos, sin } = ropeTablesFor({ headDim: c.headDim, ropeTheta: local ? c.ropeLocalTheta : c.ropeTheta, ropeScaling: local ? null : c.ropeScaling }, T);
  return { cos, sin, mask: causalMaskTable(T, local ? c.slidingWindow : null) };
}

/** The same for a packed sequence's rows (composites.ts PackedRows): the window counts positions, not rows. */
export function gemmaPackedTables(c: GemmaConfig, type: GemmaLayerType, rows: PackedRows, dtype: FloatDType): { cos: Float64Array; sin: Float64Array; mask: Float32Array | Float64Array } {
  const local = type === 'sliding_attention';
  const { cos, sin } = ropeTablesAt({ headDim: c.headDim, ropeTheta: local ? c.ropeLocalTheta : c.ropeTheta, ropeScaling: local ? null : c.ropeScaling }, rows.positions);
  return { cos, sin, mask: packedMaskTable(rows, local ? c.slidingWindow : null, dtype) };
}

/**
 * The decoder-layer graph. Inputs: 'x' [T, H]; 'rope_cos', 'rope_sin' [T, D/2]; 'mask' [T, T] (the layer type's,
 * gemmaLayerTables); the layer's weights under their table names; with LoRA, '<module>.lora_A' [r, in] and
 * '<module>.lora_B' [out, r]. Output: 'y' [T, H].
 */
export function gemmaLayerGraph(c: GemmaConfig, dtype: FloatDType, lora: LayerLora | null): Graph {
  const g = new Graph(lora === null ? 'gemma_layer' : 'gemma_layer_lora');
  const T = 'T';
  const H = c.hiddenSize;
  const D = c.headDim;
  const NH = c.numHeads;
  const KVH = c.numKvHeads;
  const eps = c.rmsNormEps;

  const { x, cos, sin, mask } = layerInputs(g, dtype, H, D); // [T, H], [T, D/2] ×2, [T, T]
  const w: Record<string, Tensor> = {};
  for (const p of gemmaParams(c).filter((q) => q.layer === 0)) w[p.name] = g.input(p.name, dtype, p.shape);
  const linear = loraLinear(g, dtype, w, lora, 'gemmaLayerGraph', {}, c.actQuant?.modules);
  // GemmaRMSNorm: x / √(mean(x²) + eps) · (1 + w), over the last axis.
  const norm = (t: Tensor, name: string): Tensor => rmsNorm(t, w[name]!, eps, { onePlus: true });

  // Attention block.
  const h = norm(x, 'input_layernorm'); // [T, H]
  let q0 = op.reshape(linear(h, 'q_proj'), [T, NH, D]); // [T, NH, D]
  let k0 = op.reshape(linear(h, 'k_proj'), [T, KVH, D]); // [T, KVH, D]
  const v0 = linear(h, 'v_proj'); // [T, KVH·D]
  if (c.qkNorm) {
    q0 = norm(q0, 'q_norm'); // Gemma 3: per head, before RoPE
    k0 = norm(k0, 'k_norm');
  }
  // The score scale folded into q (RoPE is linear, so before or after it is the same; llama.cpp scales after).
  const q1 = op.mul(rope(q0, cos, sin, 'half'), 1 / Math.sqrt(c.queryPreAttnScalar)); // [T, NH, D]
  const k1 = rope(k0, cos, sin, 'half'); // [T, KVH, D]
  const o = groupedAttention(q1, k1, v0, mask, { nHeads: NH, nKvHeads: KVH, headDim: D, softcap: c.attnLogitSoftcapping }); // [T, NH·D]
  const x1 = op.add(x, norm(linear(o, 'o_proj'), 'post_attention_norm')); // [T, H]

  // MLP block: GeGLU between two norms.
  const h2 = norm(x1, 'pre_feedforward_layernorm'); // [T, H]
  const act = geglu(linear(h2, 'gate_proj'), linear(h2, 'up_proj')); // [T, I]
  g.output('y', op.add(x1, norm(linear(act, 'down_proj'), 'post_feedforward_layernorm'))); // [T, H]
  return g;
}

/** Final (1 + w) norm, lm_head and Gemma 2's final soft-cap: h [T, H] → logits [T, V]. */
function gemmaLogits(c: GemmaConfig, h: Tensor, norm: Tensor, W: Tensor): { hn: Tensor; logits: Tensor } {
  const hn = rmsNorm(h, norm, c.rmsNormEps, { onePlus: true }); // [T, H]
  const raw = op.gemm(quantizeActivations(hn, c.actQuant?.lmHead), W, { transB: true }); // [T, V], straight through
  return { hn, logits: c.finalLogitSoftcapping === null ? raw : softcap(raw, c.finalLogitSoftcapping) };
}

/**
 * The head graph (same inputs and outputs as llamaHeadGraph): 'h' [T, H], 'norm' [H], 'lm_head' [V, H], 'targets' [T]
 * → 'logp' [T] and, unless `withGrad` is 'none', 'dlogp_dh' [T, H]. The fused lm_head backward (W[target] − p·W)
 * holds only without the final soft-cap, so with one (Gemma 2) 'fused' falls back to the autodiff's graph.
 */
export function gemmaHeadGraph(c: GemmaConfig, dtype: FloatDType, withGrad: HeadGrad): Graph {
  const mode: HeadGrad = withGrad === 'fused' && c.finalLogitSoftcapping !== null ? 'symbolic' : withGrad;
  const g = new Graph(mode === 'none' ? 'gemma_head' : `gemma_head_grad_${mode}`);
  const T = 'T';
  const h = g.input('h', dtype, [T, c.hiddenSize]); // [T, H]
  const norm = g.input('norm', dtype, [c.hiddenSize]); // [H]
  const W = g.input('lm_head', dtype, [c.vocabSize, c.hiddenSize]); // [V, H]
  const targets = g.input('targets', 'int64', [T]); // [T]
  const { hn, logits } = gemmaLogits(c, h, norm, W);
  const lsm = op.logSoftmax(logits, 1); // [T, V]
  const logp = op.reshape(op.gatherElements(lsm, op.reshape(targets, [T, 1]), 1), [T]); // [T]
  g.output('logp', logp);
  if (mode === 'symbolic') g.output('dlogp_dh', grad([logp], [h])[0]!); // [T, H]
  if (mode === 'fused') {
    const dhn = op.gemm(op.exp(lsm), W, { alpha: -1 }, op.gather(W, targets, 0)); // [T, H]
    g.output('dlogp_dh', grad([hn], [h], [dhn])[0]!);
  }
  return g;
}

/** 'h' [T, H] → 'logp_all' [T, V], for sampling and parity. */
export function gemmaLogitsGraph(c: GemmaConfig, dtype: FloatDType): Graph {
  const g = new Graph('gemma_logits');
  const h = g.input('h', dtype, ['T', c.hiddenSize]); // [T, H]
  const norm = g.input('norm', dtype, [c.hiddenSize]); // [H]
  const W = g.input('lm_head', dtype, [c.vocabSize, c.hiddenSize]); // [V, H]
  g.output('logp_all', op.logSoftmax(gemmaLogits(c, h, norm, W).logits, 1)); // [T, V]
  return g;
}
