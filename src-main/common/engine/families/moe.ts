// Mixture-of-experts decoders: HF Qwen3MoeForCausalLM (Qwen3's attention with q/k norm; top-k of a softmax router,
// renormalised when norm_topk_prob; no shared expert) and MixtralForCausalLM (Mistral's attention; top-2 of the
// softmax, renormalised, i.e. a softmax over the two selected logits). Sources: transformers
// models/qwen3_moe/modeling_qwen3_moe.py Qwen3MoeSparseMoeBlock, models/mixtral/modeling_mixtral.py
// MixtralSparseMoeBlock; llama.cpp llm_graph_context::build_moe_ffn (softmax gating, norm_w). Read top to bottom:
// dimension legend, config, parameter table, forward. The attention block is Llama's (llama.ts, via LayerVariant).
//
// Dimension legend
//   T    tokens (activations [T, H], batch 1 per sequence)
//   H    hidden size        V  vocabulary      D  head dimension   Q = NH·D, KV = KVH·D (as in llama.ts)
//   E    experts per layer                    (num_experts; Mixtral num_local_experts)
//   K    experts used per token               (num_experts_per_tok)
//   EI   one expert's intermediate size       (moe_intermediate_size; Mixtral intermediate_size)
//
// Routing and the choice made here. HF picks the top K of softmax(h·Wrᵀ) per token with torch.topk and runs each
// expert on its tokens only. TopK is not in the op table, and the experts' token sets change every step, which the
// per-shape-bucket sessions cannot follow. So the layer graph computes every expert on every token and weighs the
// outputs with routing weights that are zero outside the top K: the selection mask comes from K rounds of
// ReduceMax + Equal over the probabilities (a stop-gradient: selection is piecewise constant, as torch.topk's index
// output is), and the kept probabilities (renormalised when normTopkProb) carry the gradient to the router and, through
// it, to h. The result equals HF's exactly (up to float summation order); the cost is E/K times the expert FLOPs of a
// sparse dispatch, which is fine for tiny and small MoEs and is the thing to replace (gather tokens per expert in the
// driver) before training a large one. Ties between probabilities select every tied expert (measure zero with
// real-valued weights). LoRA goes on the attention projections; the experts and the router stay frozen.
import { z } from 'zod';
import { MAX_EXPERTS, ModelConfigError, resolveParams } from './params.ts';
import type { ParamRow, ResolvedParam } from './params.ts';
import { llamaLayerGraph } from './llama.ts';
import type { FloatDType } from '../composites.ts';
import type { LayerLora } from '../lora.ts';
import type { LayerVariant, LlamaConfig } from './llama.ts';
import type { Graph, Tensor } from '../ir.ts';
import * as op from '../ops.ts';
import { silu } from '../composites.ts';

export const MOE_ARCHITECTURES = ['Qwen3MoeForCausalLM', 'MixtralForCausalLM'] as const;
export type MoeArchitecture = (typeof MOE_ARCHITECTURES)[number];

/** Llama's fields (the attention block, GGUF metadata and the driver read them) plus the experts'. */
export interface MoeConfig extends Omit<LlamaConfig, 'architecture'> {
  architecture: MoeArchitecture;
  numExperts: number; // E
  topK: number; // K
  moeIntermediateSize: number; // EI
  /** Renormalise the K kept probabilities to sum to 1 (Qwen3-MoE norm_topk_prob; always for Mixtral). */
  normTopkProb: boolean;
}

export type MoeDim = 'V' | 'H' | 'Q' | 'KV' | 'D' | 'E' | 'EI';

export function moeDims(c: MoeConfig): Record<MoeDim, number> {
  return { V: c.vocabSize, H: c.hiddenSize, Q: c.numHeads * c.headDim, KV: c.numKvHeads * c.headDim, D: c.headDim, E: c.numExperts, EI: c.moeIntermediateSize };
}

const posInt = z.number().int().positive();
const hfMoeSchema = z.looseObject({
  num_experts: posInt.max(MAX_EXPERTS).optional(),
  num_local_experts: posInt.max(MAX_EXPERTS).optional(),
  num_experts_per_tok: posInt,
  moe_intermediate_size: posInt.optional(),
  norm_topk_prob: z.boolean().optional(),
  decoder_sparse_step: posInt.optional(),
  mlp_only_layers: z.array(z.number().int().nonnegative()).optional(),
  shared_expert_intermediate_size: z.number().int().nonnegative().optional(),
});

/**
 * Parse a Qwen3-MoE or Mixtral config.json. `attention` is the same file parsed as the Llama-family architecture whose
 * attention block it shares (Qwen3 / Mistral), so those fields are validated in one place.
 */
export function parseMoeConfig(json: unknown, architecture: MoeArchitecture, attention: LlamaConfig): MoeConfig {
  const parsed = hfMoeSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join('.');
    throw new ModelConfigError(`config.json field "${field}": ${issue.message}`, field);
  }
  const j = parsed.data;
  const qwen = architecture === 'Qwen3MoeForCausalLM';
  const numExperts = qwen ? j.num_experts : j.num_local_experts;
  const field = qwen ? 'num_experts' : 'num_local_experts';
  if (numExperts === undefined) throw new ModelConfigError(`config.json field "${field}" is required for ${architecture}`, field);
  if (j.num_experts_per_tok > numExperts) {
    throw new ModelConfigError(`num_experts_per_tok (${j.num_experts_per_tok}) exceeds the ${numExperts} experts`, 'num_experts_per_tok');
  }
  // Every layer must be sparse: one layer graph serves them all.
  if (qwen && (j.decoder_sparse_step ?? 1) !== 1) throw new ModelConfigError('decoder_sparse_step other than 1 (dense layers between MoE ones) is not supported', 'decoder_sparse_step');
  if (qwen && (j.mlp_only_layers ?? []).length > 0) throw new ModelConfigError('mlp_only_layers (dense layers in an MoE model) is not supported', 'mlp_only_layers');
  if ((j.shared_expert_intermediate_size ?? 0) > 0) throw new ModelConfigError('shared experts are not supported', 'shared_expert_intermediate_size');
  const moeIntermediateSize = qwen ? j.moe_intermediate_size : attention.intermediateSize;
  if (moeIntermediateSize === undefined) throw new ModelConfigError('config.json field "moe_intermediate_size" is required for Qwen3-MoE', 'moe_intermediate_size');
  return {
    ...attention,
    architecture,
    mlpBias: false,
    numExperts,
    topK: j.num_experts_per_tok,
    moeIntermediateSize,
    normTopkProb: qwen ? (j.norm_topk_prob ?? false) : true,
  };
}

const isQwen = (c: MoeConfig): boolean => c.architecture === 'Qwen3MoeForCausalLM';
const isMixtral = (c: MoeConfig): boolean => c.architecture === 'MixtralForCausalLM';

// The parameter table. The router and experts live under mlp.* in Qwen3-MoE and block_sparse_moe.* in Mixtral, whose
// experts call gate/up/down w1/w3/w2; our names are the same for both ('router', 'experts.{e}.gate_proj', …).
export const MOE_PARAMS: readonly ParamRow<MoeConfig, MoeDim>[] = [
  { name: 'embed_tokens', scope: 'model', hfKey: 'model.embed_tokens.weight', shape: ['V', 'H'], kind: 'embedding', init: 'normal' },
  { name: 'input_layernorm', scope: 'layer', hfKey: 'model.layers.{i}.input_layernorm.weight', shape: ['H'], kind: 'norm', init: 'ones' },
  { name: 'q_proj', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.q_proj.weight', shape: ['Q', 'H'], kind: 'linear', init: 'normal' },
  { name: 'k_proj', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.k_proj.weight', shape: ['KV', 'H'], kind: 'linear', init: 'normal' },
  { name: 'v_proj', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.v_proj.weight', shape: ['KV', 'H'], kind: 'linear', init: 'normal' },
  { name: 'o_proj', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.o_proj.weight', shape: ['H', 'Q'], kind: 'linear', init: 'normal' },
  { name: 'q_norm', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.q_norm.weight', shape: ['D'], kind: 'norm', init: 'ones', when: (c) => c.qkNorm },
  { name: 'k_norm', scope: 'layer', hfKey: 'model.layers.{i}.self_attn.k_norm.weight', shape: ['D'], kind: 'norm', init: 'ones', when: (c) => c.qkNorm },
  { name: 'post_attention_layernorm', scope: 'layer', hfKey: 'model.layers.{i}.post_attention_layernorm.weight', shape: ['H'], kind: 'norm', init: 'ones' },
  { name: 'router', scope: 'layer', hfKey: 'model.layers.{i}.mlp.gate.weight', shape: ['E', 'H'], kind: 'linear', init: 'normal', when: isQwen },
  { name: 'router', scope: 'layer', hfKey: 'model.layers.{i}.block_sparse_moe.gate.weight', shape: ['E', 'H'], kind: 'linear', init: 'normal', when: isMixtral },
  { name: 'experts.{e}.gate_proj', scope: 'expert', hfKey: 'model.layers.{i}.mlp.experts.{e}.gate_proj.weight', shape: ['EI', 'H'], kind: 'linear', init: 'normal', when: isQwen },
  { name: 'experts.{e}.up_proj', scope: 'expert', hfKey: 'model.layers.{i}.mlp.experts.{e}.up_proj.weight', shape: ['EI', 'H'], kind: 'linear', init: 'normal', when: isQwen },
  { name: 'experts.{e}.down_proj', scope: 'expert', hfKey: 'model.layers.{i}.mlp.experts.{e}.down_proj.weight', shape: ['H', 'EI'], kind: 'linear', init: 'normal', when: isQwen },
  { name: 'experts.{e}.gate_proj', scope: 'expert', hfKey: 'model.layers.{i}.block_sparse_moe.experts.{e}.w1.weight', shape: ['EI', 'H'], kind: 'linear', init: 'normal', when: isMixtral },
  { name: 'experts.{e}.down_proj', scope: 'expert', hfKey: 'model.layers.{i}.block_sparse_moe.experts.{e}.w2.weight', shape: ['H', 'EI'], kind: 'linear', init: 'normal', when: isMixtral },
  { name: 'experts.{e}.up_proj', scope: 'expert', hfKey: 'model.layers.{i}.block_sparse_moe.experts.{e}.w3.weight', shape: ['EI', 'H'], kind: 'linear', init: 'normal', when: isMixtral },
  { name: 'norm', scope: 'model', hfKey: 'model.norm.weight', shape: ['H'], kind: 'norm', init: 'ones' },
  { name: 'lm_head', scope: 'model', hfKey: 'lm_head.weight', shape: ['V', 'H'], kind: 'linear', init: 'normal', when: (c) => !c.tieWordEmbeddings },
];

export function moeParams(c: MoeConfig): ResolvedParam[] {
  return resolveParams(MOE_PARAMS, c, moeDims(c), c.numLayers, c.numExperts);
}

/** LoRA targets: the attention projections (the router and the experts are frozen, see the header). */
export function moeLinearParams(c: MoeConfig): ResolvedParam[] {
  return moeParams(c).filter((p) => p.kind === 'linear' && p.layer !== null && p.expert === undefined && p.name !== 'router');
}

/**
 * The routing weights [T, E]: softmax of the router logits, zero outside each token's top K, renormalised over the
 * K when normTopkProb. probs [T, E] in, weights [T, E] out.
 */
export function topKRouting(probs: Tensor, K: number, normTopkProb: boolean): Tensor {
  const E = probs.shape[1] as number;
  // Selection on a stop-gradient copy; each round takes the row maximum and pushes it below every probability
  // (probabilities are in [0, 1], so −2 is below all of them).
  let rest = op.stopGradient(probs); // [T, E]
  let selected: Tensor | null = null; // [T, E], 1 on the chosen experts
  for (let k = 0; k < Math.min(K, E); k++) {
    const hit = op.cast(op.equal(rest, op.reduceMax(rest, [1], true)), probs.dtype); // [T, E]
    selected = selected === null ? hit : op.add(selected, hit);
    rest = op.sub(rest, op.mul(hit, 2));
  }
  const kept = op.mul(probs, selected!); // [T, E]
  return normTopkProb ? op.div(kept, op.reduceSum(kept, [1], true)) : kept;
}

/** The sparse MoE block on h2 [T, H] → [T, H]: Σ_e weight[:, e] · down_e(silu(gate_e(h2)) · up_e(h2)). */
function moeMlp(c: MoeConfig): LayerVariant['mlp'] {
  return (h2, linear, w) => {
    const E = c.numExperts;
    const probs = op.softmax(op.gemm(h2, w['router']!, { transB: true }), 1); // [T, E]
    const weights = op.split(topKRouting(probs, c.topK, c.normTopkProb), 1, Array.from({ length: E }, () => 1)); // E × [T, 1]
    let out: Tensor | null = null;
    for (let e = 0; e < E; e++) {
      const act = op.mul(silu(linear(h2, `experts.${e}.gate_proj`)), linear(h2, `experts.${e}.up_proj`)); // [T, EI]
      const y = op.mul(linear(act, `experts.${e}.down_proj`), weights[e]!); // [T, H]
      out = out === null ? y : op.add(out, y);
    }
    return out!;
  };
}

/** The decoder-layer graph: Llama's attention block (with Qwen3's q/k norm or Mistral's window) and the MoE block. */
export function moeLayerGraph(c: MoeConfig, dtype: FloatDType, lora: LayerLora | null): Graph {
  return llamaLayerGraph(c, dtype, lora, { name: 'moe', params: moeParams(c).filter((p) => p.layer === 0), mlp: moeMlp(c) });
}
