// How each HF architecture maps onto llama.cpp's: the GGUF architecture name, the tensor names (llama.cpp
// src/llama-arch.cpp LLM_TENSOR_NAMES / gguf-py constants.py TENSOR_NAMES), the hyperparameter keys
// (gguf-py constants.py Keys.LLM / Keys.Attention / Keys.Rope) and the q/k row permutation.
//
// The permutation: HF Llama applies RoPE to the two halves of each head (rotate_half); llama.cpp's "llama"
// architecture uses the interleaved (GPT-J) form, rotating adjacent pairs. convert_hf_to_gguf.py LlamaModel.permute
// reorders the rows of q_proj and k_proj (weights and biases) per head so that row h·D + 2j + s comes from
// h·D + s·D/2 + j; then llama.cpp's pairs are HF's (j, j + D/2). Qwen2/Qwen3 use llama.cpp's NEOX rope (halves,
// like HF) and need no permutation.
import type { LlamaConfig } from '../../../common/engine/models/llama.ts';
import type { ResolvedParam } from '../../../common/engine/models/params.ts';
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
};

/** The llama.cpp architecture for an HF one (convert_hf_to_gguf.py's ModelBase.register tables). */
export const GGUF_ARCH: Record<string, string> = {
  LlamaForCausalLM: 'llama',
  MistralForCausalLM: 'llama',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
};

export function ggufArch(architecture: string): string {
  const a = GGUF_ARCH[architecture];
  if (a === undefined) throw new GgufError(`no GGUF mapping for architecture ${architecture} (known: ${Object.keys(GGUF_ARCH).join(', ')})`);
  return a;
}

/** The GGUF name of one weight: 'model.layers.3.self_attn.q_proj.weight' (q_proj, layer 3) → 'blk.3.attn_q.weight'. */
export function ggufTensorName(p: Pick<ResolvedParam, 'name' | 'layer'>): string {
  const isBias = p.name.endsWith('.bias');
  const base = isBias ? p.name.slice(0, -'.bias'.length) : p.name;
  const t = GGUF_TENSOR_NAMES[base];
  if (t === undefined) throw new GgufError(`no GGUF tensor name for parameter ${p.name}`);
  return `${p.layer === null ? t : t.replace('{i}', String(p.layer))}.${isBias ? 'bias' : 'weight'}`;
}

/** Whether llama.cpp expects this weight's rows permuted (see the header), and with how many heads. */
export function permuteHeads(c: LlamaConfig, paramName: string): number | null {
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
  if (rows % (2 * heads) !== 0) throw new GgufError(`cannot permute ${rows} rows over ${heads} heads (need an even head dim)`);
  const D = rows / heads;
  const half = D / 2;
  const out = new Float32Array(data.length);
  for (let h = 0; h < heads; h++) {
    for (let j = 0; j < half; j++) {
      for (let s = 0; s < 2; s++) {
        const to = h * D + 2 * j + s;
        const from = h * D + s * half + j;
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
export function llama3RopeFreqs(c: LlamaConfig): Float32Array | null {
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

/** The architecture's hyperparameters as GGUF metadata (convert_hf_to_gguf.py TextModel.set_gguf_parameters). */
export function hparamsMetadata(c: LlamaConfig): Map<string, GgufValue> {
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
  return md;
}
