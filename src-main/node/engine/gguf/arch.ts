// How each HF architecture maps onto llama.cpp's: the GGUF architecture name, the tensor names (llama.cpp
// src/llama-arch.cpp LLM_TENSOR_NAMES / gguf-py constants.py TENSOR_NAMES), the hyperparameter keys
// (gguf-py constants.py Keys.LLM / Keys.Attention / Keys.Rope) and the q/k row permutation.
//
// The permutation: HF Llama applies RoPE to the two halves of each head (rotate_half); llama.cpp's "llama"
// architecture uses the interleaved (GPT-J) form, rotating adjacent pairs. convert_hf_to_gguf.py LlamaModel.permute
// reorders the rows of q_proj and k_proj (weights and biases) per head so that row h·D + 2j + s comes from
// h·D + s·D/2 + j; then llama.cpp's pairs are HF's (j, j + D/2). Qwen2/Qwen3 use llama.cpp's NEOX rope (halves,
// like HF) and need no permutation.
import { isGemma, isMoe } from '../../../common/engine/families/registry.ts';
import type { ModelConfig } from '../../../common/engine/families/registry.ts';
import type { ResolvedParam } from '../../../common/engine/families/params.ts';
import { GgufError, f32, str, u32 } from './format.ts';
import type { GgufValue } from './format.ts';

/** Our parameter-table name → llama.cpp's tensor base name ({i} is the block index); '.weight'/'.bias' appended. */
export const GGUF_TENSOR_NAMES: Record<string, string> = {
  embed_tokens: 'token_embd',
  input_layernorm: 'blk.{i}.attn_norm',
  q_proj: 'blk.{i}.attn_q',
  k_proj: 'blk.{i}.attn_k',
  v_proj: 'blk.{i}.attn_v',
  o_proj: 'blk.{i}.attn_output',
  q_norm: 'blk.{i}.attn_q_norm',
  k_norm: 'blk.{i}.attn_k_norm',
  post_attention_layernorm: 'blk.{i}.ffn_norm',
  gate_proj: 'blk.{i}.ffn_gate',
  up_proj: 'blk.{i}.ffn_up',
  down_proj: 'blk.{i}.ffn_down',
  norm: 'output_norm',
  lm_head: 'output',
  // Gemma 2/3 (gguf-py tensor_mapping: post_attention_layernorm → ATTN_POST_NORM, pre_feedforward_layernorm →
  // FFN_NORM, post_feedforward_layernorm → FFN_POST_NORM); families/gemma.ts names them by position.
  post_attention_norm: 'blk.{i}.post_attention_norm',
  pre_feedforward_layernorm: 'blk.{i}.ffn_norm',
  post_feedforward_layernorm: 'blk.{i}.post_ffw_norm',
  // MoE (Qwen3-MoE, Mixtral): the router, and the experts stacked into one 3-D tensor per kind (convert.ts).
  router: 'blk.{i}.ffn_gate_inp',
  'experts.gate_proj': 'blk.{i}.ffn_gate_exps',
  'experts.up_proj': 'blk.{i}.ffn_up_exps',
  'experts.down_proj': 'blk.{i}.ffn_down_exps',
};

/** The llama.cpp architecture for an HF one (convert_hf_to_gguf.py's ModelBase.register tables). */
export const GGUF_ARCH: Record<string, string> = {
  LlamaForCausalLM: 'llama',
  MistralForCausalLM: 'llama',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
  Gemma2ForCausalLM: 'gemma2',
  Gemma3ForCausalLM: 'gemma3',
  Qwen3MoeForCausalLM: 'qwen3moe',
  // convert_hf_to_gguf.py registers Mixtral under LlamaModel: llama.cpp's "llama" with experts.
  MixtralForCausalLM: 'llama',
};

export function ggufArch(architecture: string): string {
  const a = GGUF_ARCH[architecture];
  if (a === undefined) throw new GgufError(`no GGUF mapping for architecture ${architecture} (known: ${Object.keys(GGUF_ARCH).join(', ')})`);
  return a;
}

/**
 * The GGUF name of one weight: 'model.layers.3.self_attn.q_proj.weight' (q_proj, layer 3) → 'blk.3.attn_q.weight'.
 * Every expert of a kind maps to the same stacked tensor ('experts.5.up_proj' → 'blk.3.ffn_up_exps.weight').
 */
export function ggufTensorName(p: Pick<ResolvedParam, 'name' | 'layer'>): string {
  const isBias = p.name.endsWith('.bias');
  const base = (isBias ? p.name.slice(0, -'.bias'.length) : p.name).replace(/^experts\.\d+\./, 'experts.');
  const t = GGUF_TENSOR_NAMES[base];
  if (t === undefined) throw new GgufError(`no GGUF tensor name for parameter ${p.name}`);
  return `${p.layer === null ? t : t.replace('{i}', String(p.layer))}.${isBias ? 'bias' : 'weight'}`;
}

/** Whether llama.cpp expects this weight's rows permuted (see the header), and with how many heads. */
export function permuteHeads(c: ModelConfig, paramName: string): number | null {
  if (ggufArch(c.architecture) !== 'llama') return null;
  const base = paramName.replace(/\.bias$/, '');
  if (base === 'q_proj') return c.numHeads;
  if (base === 'k_proj') return c.numKvHeads;
  return null;
}

/**
 * LlamaModel.permute on the rows of a row-major [rows, cols] array (rows = heads · D): new row h·D + 2j + s takes old
 * row h·D + s·D/2 + j. cols is 1 for a bias.
 */
export function permuteRows(data: Float32Array, rows: number, cols: number, heads: number): Float32Array {
  return interleaveRows(data, rows, cols, heads, 'permute');
}

/** The inverse of permuteRows: llama.cpp's interleaved q/k rows back to HF's halves (old row h·D + s·D/2 + j). */
export function unpermuteRows(data: Float32Array, rows: number, cols: number, heads: number): Float32Array {
  return interleaveRows(data, rows, cols, heads, 'un-permute');
}

/** Row h·D + s·D/2 + j (HF's halves) ↔ row h·D + 2j + s (llama.cpp's interleave), in the direction asked. */
function interleaveRows(data: Float32Array, rows: number, cols: number, heads: number, dir: 'permute' | 'un-permute'): Float32Array {
  if (rows % (2 * heads) !== 0) throw new GgufError(`cannot ${dir} ${rows} rows over ${heads} heads (need an even head dim)`);
  const D = rows / heads;
  const half = D / 2;
  const out = new Float32Array(data.length);
  for (let h = 0; h < heads; h++) {
    for (let j = 0; j < half; j++) {
      for (let s = 0; s < 2; s++) {
        const interleaved = h * D + 2 * j + s;
        const halves = h * D + s * half + j;
        const [from, to] = dir === 'permute' ? [halves, interleaved] : [interleaved, halves];
        out.set(data.subarray(from * cols, (from + 1) * cols), to * cols);
      }
    }
  }
  return out;
}

/**
 * Llama 3 rope scaling as llama.cpp takes it: a 'rope_freqs.weight' tensor [D/2] of divisors of each frequency
 * (convert_hf_to_gguf.py LlamaModel.generate_extra_tensors; ggml_rope_ext divides θ_i by freq_factors[i]).
 * It equals HF _compute_llama3_parameters: inv_freq' = inv_freq · ((1 − smooth)/factor + smooth).
 */
export function llama3RopeFreqs(c: ModelConfig): Float32Array | null {
  const rs = c.ropeScaling;
  if (rs?.type !== 'llama3') return null;
  const half = c.headDim / 2;
  const out = new Float32Array(half);
  const lowWavelen = rs.originalMaxPositionEmbeddings / rs.lowFreqFactor;
  const highWavelen = rs.originalMaxPositionEmbeddings / rs.highFreqFactor;
  for (let i = 0; i < half; i++) {
    const freq = 1 / Math.pow(c.ropeTheta, (2 * i) / c.headDim);
    const wavelen = (2 * Math.PI) / freq;
    if (wavelen < highWavelen) out[i] = 1;
    else if (wavelen > lowWavelen) out[i] = rs.factor;
    else {
      const smooth = (rs.originalMaxPositionEmbeddings / wavelen - rs.lowFreqFactor) / (rs.highFreqFactor - rs.lowFreqFactor);
      out[i] = 1 / ((1 - smooth) / rs.factor + smooth);
    }
  }
  return out;
}

/**
 * The local/global layout as llama.cpp's period n (llama_hparams::set_swa_pattern: layer il is local when
 * il % n < n − 1), read from "<arch>.attention.sliding_window_pattern" by load_swa_pattern. A layout no period
 * describes is refused.
 */
export function swaPattern(types: readonly ('sliding_attention' | 'full_attention')[]): number {
  for (let n = 1; n <= types.length + 1; n++) {
    if (types.every((t, il) => (t === 'sliding_attention') === (il % n < n - 1))) return n;
  }
  throw new GgufError(`layer_types ${JSON.stringify(types)} is not periodic; llama.cpp's sliding_window_pattern cannot express it`);
}

/** The architecture's hyperparameters as GGUF metadata (convert_hf_to_gguf.py TextModel.set_gguf_parameters). */
export function hparamsMetadata(c: ModelConfig): Map<string, GgufValue> {
  const a = ggufArch(c.architecture);
  const md = new Map<string, GgufValue>();
  md.set(`${a}.vocab_size`, u32(c.vocabSize));
  md.set(`${a}.context_length`, u32(c.maxPositionEmbeddings));
  md.set(`${a}.embedding_length`, u32(c.hiddenSize));
  md.set(`${a}.block_count`, u32(c.numLayers));
  md.set(`${a}.feed_forward_length`, u32(c.intermediateSize));
  md.set(`${a}.attention.head_count`, u32(c.numHeads));
  md.set(`${a}.attention.head_count_kv`, u32(c.numKvHeads));
  md.set(`${a}.attention.key_length`, u32(c.headDim));
  md.set(`${a}.attention.value_length`, u32(c.headDim));
  md.set(`${a}.attention.layer_norm_rms_epsilon`, f32(c.rmsNormEps));
  md.set(`${a}.rope.freq_base`, f32(c.ropeTheta));
  md.set(`${a}.rope.dimension_count`, u32(c.headDim));
  if (c.ropeScaling?.type === 'linear') {
    md.set(`${a}.rope.scaling.type`, str('linear'));
    md.set(`${a}.rope.scaling.factor`, f32(c.ropeScaling.factor));
  }
  if (isGemma(c)) {
    // convert_hf_to_gguf.py Gemma2Model / Gemma3Model.set_gguf_parameters. llama.cpp derives the score scale from
    // the head dim (gemma2.cpp/gemma3.cpp f_attention_scale = 1/√D, except for the 27B models' layer counts), so a
    // query_pre_attn_scalar it would not honour is refused rather than written and silently ignored.
    if (c.queryPreAttnScalar !== c.headDim) {
      throw new GgufError(`query_pre_attn_scalar ${c.queryPreAttnScalar} differs from head_dim ${c.headDim}; llama.cpp scales scores by 1/√head_dim`);
    }
    md.set(`${a}.attention.sliding_window`, u32(c.slidingWindow ?? 0));
    md.set(`${a}.attention.sliding_window_pattern`, u32(swaPattern(c.layerTypes)));
    if (c.attnLogitSoftcapping !== null) md.set(`${a}.attn_logit_softcapping`, f32(c.attnLogitSoftcapping));
    if (c.finalLogitSoftcapping !== null) md.set(`${a}.final_logit_softcapping`, f32(c.finalLogitSoftcapping));
    if (a === 'gemma2' && c.finalLogitSoftcapping === null) throw new GgufError('llama.cpp always applies Gemma 2\'s final soft-cap; final_logit_softcapping must be set');
    if (a === 'gemma3') md.set(`${a}.rope.freq_base_swa`, f32(c.ropeLocalTheta));
    else if (c.ropeLocalTheta !== c.ropeTheta) throw new GgufError('Gemma 2 uses one RoPE base for local and global layers');
  } else if (isMoe(c)) {
    // convert_hf_to_gguf.py TextModel.set_gguf_parameters (num_experts / num_local_experts, num_experts_per_tok) and
    // Qwen3MoeModel (moe_intermediate_size). llama.cpp renormalises the top-k weights for both architectures
    // (build_moe_ffn with norm_w = true), so a Qwen3-MoE without norm_topk_prob would not be reproduced.
    if (!c.normTopkProb) throw new GgufError('llama.cpp always renormalises the top-k routing weights; norm_topk_prob false is not representable');
    md.set(`${a}.expert_count`, u32(c.numExperts));
    md.set(`${a}.expert_used_count`, u32(c.topK));
    if (a === 'qwen3moe') md.set(`${a}.expert_feed_forward_length`, u32(c.moeIntermediateSize));
    else md.set(`${a}.feed_forward_length`, u32(c.moeIntermediateSize));
  }
  return md;
}
