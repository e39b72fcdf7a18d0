// A GGUF file as a training base, with no HF download: the hyperparameters become the config.json we would have
// read (the inverse of arch.ts hparamsMetadata), the tensors are found under llama.cpp's names through the
// parameter table and dequantized to float32 as ggml does (quant.ts), the q/k rows of "llama" models are put back
// in HF's order (arch.ts), and the tokenizer and chat template come from tokenizer.* metadata (vocab.ts).
// The result is an HfModel, so everything that loads an HF directory loads a GGUF the same way.
// Read: llama (Llama 2/3, Mistral), qwen2, qwen3. Anything else is refused by name before any weight is read.
import type { ActQuantKind, ActQuantTable } from '../../../common/engine/composites.ts';
import { ModelConfigError, numel } from '../../../common/engine/families/params.ts';
import type { ResolvedParam } from '../../../common/engine/families/params.ts';
import type { ModelConfig } from '../../../common/engine/families/registry.ts';
import { modelParams, parseModelConfig } from '../../../common/engine/families/registry.ts';
import type { HfModel } from '../model.ts';
import { ReinTokenizer } from '../tokenizer.ts';
import { GgufError } from './format.ts';
import { ggufTensorName, llama3RopeFreqs, permuteHeads, unpermuteRows } from './arch.ts';
import type { GgmlTypeName } from './quant.ts';
import { GgufFile } from './read.ts';
import { toBlockQuant } from './quant.ts';
import { type QuantWeight, permuteQuantRows } from '../../../common/engine/quant.ts';
import { ggufTokenizer } from './vocab.ts';

/** llama.cpp architecture → the HF architecture whose parameter table and forward we train. */
const HF_ARCH: Record<string, string> = { llama: 'LlamaForCausalLM', qwen2: 'Qwen2ForCausalLM', qwen3: 'Qwen3ForCausalLM' };
export const TRAINABLE_GGUF_ARCHS = Object.keys(HF_ARCH);

export interface GgufLoadOptions {
  /** Build the tokenizer from the metadata (default true). */
  tokenizer?: boolean;
  /**
   * Round each frozen linear's input as llama.cpp's CPU kernels do for that weight's type (config.actQuant), so the
   * forward is the one llama.cpp computes on this file (default true). False: exact f32 products with the
   * dequantized weights.
   */
  matchLlamaCpp?: boolean;
}

/** The input rounding of llama.cpp's CPU matmul for a weight of this type: its vec_dot_type (ggml-cpu.c type_traits_cpu). */
const VEC_DOT: Record<GgmlTypeName, ActQuantKind | null> = {
  F32: null,
  F16: 'f16',
  BF16: 'bf16',
  Q8_0: 'q8_0',
  Q4_0: 'q8_0',
  Q4_1: 'q8_1',
  Q4_K: 'q8_K',
  Q5_K: 'q8_K',
  Q6_K: 'q8_K',
};

/**
 * Per module, the kind its layers' weight types call for. One layer graph serves every layer, so a module needs one
 * kind for all of them; Q4_K_M's mix of Q4_K and Q6_K shares Q8_K, and the 32-block fallbacks of llama-quantize (Q5_0,
 * Q8_0) share Q8_0. A module whose layers still differ keeps exact inputs and is listed in `mixed`. Null when nothing
 * is rounded (an F32 file).
 */
export function ggufActQuant(f: GgufFile, config: ModelConfig, params: readonly ResolvedParam[]): ActQuantTable | null {
  const kindOf = (p: ResolvedParam): ActQuantKind | null => VEC_DOT[f.info(ggufTensorName(p)).type];
  const byModule = new Map<string, Set<ActQuantKind | null>>();
  for (const p of params) {
    if (p.kind !== 'linear' || p.layer === null) continue;
    const kinds = byModule.get(p.name) ?? new Set();
    kinds.add(kindOf(p));
    byModule.set(p.name, kinds);
  }
  const modules: Record<string, ActQuantKind> = {};
  const mixed: string[] = [];
  for (const [m, kinds] of byModule) {
    const [only] = kinds;
    if (kinds.size > 1) mixed.push(m);
    else if (only !== null && only !== undefined) modules[m] = only;
  }
  // Tied: llama.cpp's output matmul reads token_embd in its own type.
  const head = params.find((p) => p.name === (config.tieWordEmbeddings ? 'embed_tokens' : 'lm_head'));
  const lmHead = head === undefined ? null : kindOf(head);
  if (Object.keys(modules).length === 0 && lmHead === null && mixed.length === 0) return null;
  return { modules, lmHead, mixed };
}

/** The config.json a GGUF's metadata stands for. */
export function ggufConfigJson(f: GgufFile): Record<string, unknown> {
  const a = f.get('general.architecture', 'string');
  if (a === undefined) throw new GgufError('general.architecture is missing', f.path);
  const hf = HF_ARCH[a];
  if (hf === undefined) throw new GgufError(`architecture "${a}" cannot be trained (trainable: ${TRAINABLE_GGUF_ARCHS.join(', ')})`, f.path, { architecture: a });
  const type = f.get('general.type', 'string');
  if (type !== undefined && type !== 'model') throw new GgufError(`general.type is "${type}": this is not a base model (a LoRA adapter?)`, f.path);
  const num = (key: string, fallback?: number): number => {
    const v = f.get(`${a}.${key}`, 'number') ?? fallback;
    if (v === undefined) throw new GgufError(`${a}.${key} is missing`, f.path, { key: `${a}.${key}` });
    return v;
  };
  const hidden = num('embedding_length');
  const heads = num('attention.head_count');
  const headDim = num('attention.key_length', hidden / heads);
  if (num('attention.value_length', headDim) !== headDim) throw new GgufError(`${a}.attention.value_length differs from key_length; not supported`, f.path);
  if (num('rope.dimension_count', headDim) !== headDim) throw new GgufError(`${a}.rope.dimension_count ${num('rope.dimension_count')} is not the head dim ${headDim} (partial rotary is not supported)`, f.path);
  const embd = f.tensors.get('token_embd.weight');
  if (embd === undefined) throw new GgufError('tensor token_embd.weight is missing', f.path);
  const cfg: Record<string, unknown> = {
    architectures: [hf],
    vocab_size: num('vocab_size', embd.shape[0]),
    hidden_size: hidden,
    num_hidden_layers: num('block_count'),
    intermediate_size: num('feed_forward_length'),
    num_attention_heads: heads,
    num_key_value_heads: num('attention.head_count_kv', heads),
    head_dim: headDim,
    rms_norm_eps: num('attention.layer_norm_rms_epsilon'),
    rope_theta: num('rope.freq_base', 10000),
    max_position_embeddings: num('context_length', 4096),
    // convert_hf_to_gguf.py writes no output.weight for a tied model; llama.cpp then reuses token_embd.
    tie_word_embeddings: !f.tensors.has('output.weight'),
    hidden_act: 'silu',
  };
  const bos = f.get('tokenizer.ggml.bos_token_id', 'number');
  const eos = f.get('tokenizer.ggml.eos_token_id', 'number');
  if (bos !== undefined) cfg.bos_token_id = bos;
  if (eos !== undefined) cfg.eos_token_id = eos;
  const scaling = f.get(`${a}.rope.scaling.type`, 'string');
  if (scaling === 'linear') cfg.rope_scaling = { rope_type: 'linear', factor: num('rope.scaling.factor') };
  else if (scaling !== undefined && scaling !== 'none') throw new GgufError(`rope scaling "${scaling}" is not supported (linear and Llama 3's rope_freqs are)`, f.path);
  if (f.tensors.has('rope_freqs.weight')) cfg.rope_scaling = llama3Scaling(f, cfg);
  return cfg;
}

/**
 * A rope_freqs tensor is Llama 3's rope scaling, baked into per-frequency divisors (arch.ts llama3RopeFreqs); the
 * parameters themselves are not in the file. Every released Llama 3.1/3.2 uses low 1, high 4 and an original
 * context of 8192, with factor the largest divisor; those are taken only when they reproduce the tensor.
 */
function llama3Scaling(f: GgufFile, cfg: Record<string, unknown>): Record<string, unknown> {
  const freqs = f.read('rope_freqs.weight');
  const factor = freqs.reduce((m, v) => Math.max(m, v), 0);
  const rs = { rope_type: 'llama3', factor, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 };
  const c = parseModelConfig({ ...cfg, rope_scaling: rs });
  const want = llama3RopeFreqs(c);
  const worst = want === null || want.length !== freqs.length ? Infinity : Math.max(...Array.from(freqs, (v, i) => Math.abs(v - want[i]!) / v));
  if (!(worst < 1e-5)) throw new GgufError('rope_freqs.weight is not Llama 3 scaling with low 1, high 4 and 8192 original positions; not supported', f.path);
  return rs;
}

/**
 * The model a GGUF's header describes, checked: the config its metadata stands for, and every parameter's tensor
 * present with the shape that config implies. No weight is read (but Llama 3's small rope_freqs), so a listing can
 * judge a file with it.
 */
export function checkGgufModel(f: GgufFile): { rawConfig: Record<string, unknown>; config: ModelConfig; params: ResolvedParam[] } {
  const file = f.path;
  const rawConfig = ggufConfigJson(f);
  let config;
  try {
    config = parseModelConfig(rawConfig);
  } catch (e) {
    if (e instanceof ModelConfigError) throw new GgufError(`the metadata does not make a valid model: ${e.message}`, file);
    throw e;
  }
  const params = modelParams(config);
  for (const p of params) {
    const name = ggufTensorName(p);
    const t = f.tensors.get(name);
    if (t === undefined) throw new GgufError(`tensor ${name} (${p.hfKey}) is missing`, file, { tensor: name });
    if (t.shape.length !== p.shape.length || t.shape.some((d, i) => d !== p.shape[i])) {
      throw new GgufError(`tensor ${name} has shape [${t.shape.join(', ')}], the metadata implies [${p.shape.join(', ')}]`, file, { tensor: name });
    }
  }
  return { rawConfig, config, params };
}

export function loadGgufModel(file: string, opts: GgufLoadOptions = {}): HfModel {
  const f = GgufFile.open(file);
  try {
    const { rawConfig, config, params } = checkGgufModel(f);
    if (opts.matchLlamaCpp ?? true) {
      const aq = ggufActQuant(f, config, params);
      if (aq !== null) config.actQuant = aq;
    }
    const byKey = new Map(params.map((p) => [p.hfKey, p]));
    let tokenizer: ReinTokenizer | null = null;
    if (opts.tokenizer ?? true) {
      const parts = ggufTokenizer((k) => f.metadata.get(k), file);
      tokenizer = new ReinTokenizer(file, parts.tokenizerJson, parts.config, parts.chatTemplate, [...config.eosTokenIds, ...parts.extraEos]);
      config.eosTokenIds = [...new Set([...config.eosTokenIds, ...parts.extraEos])];
      if (tokenizer.size > config.vocabSize) throw new GgufError(`the tokenizer has ${tokenizer.size} tokens but the embedding only ${config.vocabSize} rows`, file);
    }
    const read = (hfKey: string, ro: { as?: 'f32' | 'f64' } = {}): Float32Array | Float64Array => {
      const p = byKey.get(hfKey);
      if (p === undefined) throw new GgufError(`${hfKey} is not a weight of this ${config.architecture}`, file, { tensor: hfKey });
      const name = ggufTensorName(p);
      let data = f.read(name);
      for (let i = 0; i < data.length; i++) {
        if (!Number.isFinite(data[i]!)) throw new GgufError(`tensor ${name} holds a non-finite value (${data[i]}) at flat index ${i}`, file, { tensor: name, index: i });
      }
      const heads = permuteHeads(config, p.name);
      if (heads !== null) data = unpermuteRows(data, p.shape[0]!, p.shape[1] ?? 1, heads);
      if (data.length !== numel(p.shape)) throw new GgufError(`tensor ${name} read ${data.length} values for shape [${p.shape.join(', ')}]`, file);
      return ro.as === 'f64' ? Float64Array.from(data) : data;
    };
    // A linear weight or the embedding stored as Q4_0/Q4_1/Q4_K/Q8_0 stays block-quantized (toBlockQuant); with the
    // llama q/k rows un-permuted as whole rows of blocks.
    const readQuant = (hfKey: string): QuantWeight | null => {
      const p = byKey.get(hfKey);
      if (p === undefined) throw new GgufError(`${hfKey} is not a weight of this ${config.architecture}`, file, { tensor: hfKey });
      if ((p.kind !== 'linear' && p.kind !== 'embedding') || p.shape.length !== 2) return null;
      const name = ggufTensorName(p);
      const [rows, cols] = p.shape as [number, number];
      let q = toBlockQuant(f.info(name).type, f.readBytes(name), rows, cols);
      if (q === null) return null;
      for (const a of [q.scales, q.zeroPoints ?? new Float32Array(0)]) {
        const i = a.findIndex((v) => !Number.isFinite(v));
        if (i >= 0) throw new GgufError(`tensor ${name} holds a non-finite scale or min (${a[i]}) in block ${i}`, file, { tensor: name, index: i });
      }
      const heads = permuteHeads(config, p.name);
      if (heads !== null) {
        // unpermuteRows: row h·D + s·D/2 + j (HF's halves) comes from row h·D + 2j + s (llama.cpp's interleave).
        const D = rows / heads;
        const half = D / 2;
        q = permuteQuantRows(q, (r) => {
          const h = Math.floor(r / D);
          const s = Math.floor((r % D) / half);
          const j = r % half;
          return h * D + 2 * j + s;
        });
      }
      return q;
    };
    return {
      dir: file,
      config,
      rawConfig,
      params,
      tokenizer,
      generation: null,
      read,
      readQuant,
      storedDtype: (hfKey) => {
        const p = byKey.get(hfKey);
        if (p === undefined) throw new GgufError(`${hfKey} is not a weight of this model`, file);
        return f.info(ggufTensorName(p)).type;
      },
      close: () => f.close(),
    };
  } catch (e) {
    f.close();
    throw e;
  }
}
