// Composite ops built from the primitives in ops.ts: they need no backward of their own (house style 6).
// Shapes follow the per-layer design: activations are 2-D [T, H] (batch 1 per sequence), weights are HF [out, in].
//   T = tokens, H = hidden, nh = query heads, nkv = key/value heads, hd = head dim, V = vocab, C = tokens per chunk

import { type DType, type Dim, Graph, type Tensor, GraphError, dimDiv, dimMul, fmtShape } from './ir.ts';
import * as op from './ops.ts';

/** The float types a model graph is emitted in: float32 to train and serve, float64 for the gradient checks. */
export type FloatDType = 'float32' | 'float64';

/** How a head graph computes ∂logp/∂h: none, the autodiff's graph, or the hand-fused lm_head backward. */
export type HeadGrad = 'none' | 'symbolic' | 'fused';

/**
 * RMSNorm (Zhang & Sennrich 2019; HF LlamaRMSNorm): x / sqrt(mean(x², -1) + eps) · w. With `onePlus`, the scale
 * is (1 + w), Gemma's convention (HF GemmaRMSNorm).
 */
export function rmsNorm(x: Tensor, w: Tensor, eps: number, opts: { onePlus?: boolean } = {}): Tensor {
  const ms = op.reduceMean(op.mul(x, x), [-1], true); // [T, 1]
  const normed = op.mul(x, op.reciprocal(op.sqrt(op.add(ms, eps)))); // [T, H]
  return op.mul(normed, opts.onePlus === true ? op.add(w, 1) : w);
}

/** SiLU / swish: x·σ(x). */
export function silu(x: Tensor): Tensor {
  return op.mul(x, op.sigmoid(x));
}

/** The SwiGLU MLP activation (Shazeer 2020): silu(gate) ⊙ up. */
export function swiglu(gate: Tensor, up: Tensor): Tensor {
  return op.mul(silu(gate), up);
}

/** GELU, tanh approximation (HF "gelu_pytorch_tanh", Gemma): ½x(1 + tanh(√(2/π)(x + 0.044715x³))). */
export function geluTanh(x: Tensor): Tensor {
  const inner = op.mul(op.add(x, op.mul(op.mul(op.mul(x, x), x), 0.044715)), Math.sqrt(2 / Math.PI));
  return op.mul(op.mul(x, 0.5), op.add(op.tanh(inner), 1));
}

/** GeGLU (Gemma's MLP): gelu_tanh(gate) ⊙ up. */
export function geglu(gate: Tensor, up: Tensor): Tensor {
  return op.mul(geluTanh(gate), up);
}

/** log σ(x), stable for large |x|: min(x, 0) − log(1 + exp(−|x|)) (KTO/DPO-style objectives). */
export function logSigmoid(x: Tensor): Tensor {
  return op.sub(op.min(x, 0), op.log(op.add(op.exp(op.neg(op.abs(x))), 1)));
}

/** softplus(x) = log(1 + eˣ) = −log σ(−x). */
export function softplus(x: Tensor): Tensor {
  return op.neg(logSigmoid(op.neg(x)));
}

/** Soft-capping (Gemma 2): cap·tanh(x / cap). */
export function softcap(x: Tensor, cap: number): Tensor {
  return op.mul(op.tanh(op.mul(x, 1 / cap)), cap);
}

// --- RoPE ------------------------------------------------------------------------------------------------------------

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

/**
 * Inverse frequencies θ^(−2i/d), i < d/2, with the config's scaling. Source: HF transformers modeling_rope_utils
 * `_compute_default_rope_parameters`, `_compute_linear_scaling_rope_parameters` (every frequency divided by `factor`,
 * the same as dividing positions) and `_compute_llama3_parameters`: wavelengths shorter than original_max /
 * high_freq_factor keep their frequency, longer than original_max / low_freq_factor are divided by `factor`, and those
 * between are blended with smooth = (original_max / wavelen − low) / (high − low).
 */
export function ropeInvFreq(rotaryDim: number, theta: number, scaling: RopeScaling | null = null): Float64Array {
  if (!Number.isInteger(rotaryDim) || rotaryDim <= 0 || rotaryDim % 2 !== 0) throw new GraphError('RoPE', `rotary dim must be a positive even integer, got ${rotaryDim}`);
  if (!(theta > 0)) throw new GraphError('RoPE', `rope_theta must be positive, got ${theta}`);
  const half = rotaryDim / 2;
  const inv = new Float64Array(half);
  for (let i = 0; i < half; i++) inv[i] = 1 / theta ** ((2 * i) / rotaryDim);
  if (scaling === null) return inv;
  if (scaling.type === 'linear') {
    for (let i = 0; i < half; i++) inv[i]! /= scaling.factor;
    return inv;
  }
  const { factor, lowFreqFactor: low, highFreqFactor: high, originalMaxPositionEmbeddings: oldLen } = scaling;
  if (!(factor > 0) || !(low > 0) || !(high > low) || !(oldLen > 0)) {
    throw new GraphError('RoPE', `bad llama3 rope_scaling ${JSON.stringify(scaling)} (need factor > 0, 0 < low_freq_factor < high_freq_factor)`);
  }
  const lowWavelen = oldLen / low;
  const highWavelen = oldLen / high;
  for (let i = 0; i < half; i++) {
    const f = inv[i]!;
    const wavelen = (2 * Math.PI) / f;
    if (wavelen < highWavelen) continue;
    if (wavelen > lowWavelen) inv[i] = f / factor;
    else {
      const smooth = (oldLen / wavelen - low) / (high - low);
      inv[i] = (1 - smooth) * (f / factor) + smooth * f;
    }
  }
  return inv;
}

export interface RopeTables {
  /** [T, rotaryDim/2], row-major: cos(position_t · invFreq_i). */
  cos: Float32Array | Float64Array;
  sin: Float32Array | Float64Array;
  rows: number;
  half: number;
}

/** The cos/sin tables fed to `rope` for these positions (per bucket; positions usually 0..T−1). */
export function ropeTables(positions: readonly number[], invFreq: Float64Array, dtype: 'float32' | 'float64' = 'float32'): RopeTables {
  const half = invFreq.length;
  const n = positions.length * half;
  const cos = dtype === 'float32' ? new Float32Array(n) : new Float64Array(n);
  const sin = dtype === 'float32' ? new Float32Array(n) : new Float64Array(n);
  positions.forEach((p, t) => {
    for (let i = 0; i < half; i++) {
      // In float64, then rounded: HF computes the angle in float32, which differs by ~1e-7·p; both are fine for training.
      const a = p * invFreq[i]!;
      cos[t * half + i] = Math.cos(a);
      sin[t * half + i] = Math.sin(a);
    }
  });
  return { cos, sin, rows: positions.length, half };
}

/**
 * Rotary embedding on x [T, n, hd] with tables cos/sin [T, hd/2].
 * 'half' (HF Llama/Qwen `rotate_half`): pairs are (x_i, x_{i+hd/2}). 'interleaved' (GPT-J, Meta's original Llama):
 * pairs are (x_{2i}, x_{2i+1}). Each pair (a, b) becomes (a·cos − b·sin, b·cos + a·sin).
 */
export function rope(x: Tensor, cos: Tensor, sin: Tensor, layout: 'half' | 'interleaved'): Tensor {
  if (x.rank !== 3) throw new GraphError('RoPE', `x must be [T, heads, head_dim], got ${fmtShape(x.shape)}`);
  const [t, n, hd] = x.shape as [Dim, Dim, Dim];
  const half = dimDiv(hd, 2);
  if (half === undefined || typeof half !== 'number') throw new GraphError('RoPE', `head_dim must be even and static, got ${hd}`);
  if (cos.rank !== 2 || sin.rank !== 2) throw new GraphError('RoPE', `cos/sin must be [T, ${half}], got ${fmtShape(cos.shape)} and ${fmtShape(sin.shape)}`);
  if (layout === 'half') {
    const c = op.reshape(cos, [t, 1, half]); // [T, 1, hd/2]
    const s = op.reshape(sin, [t, 1, half]);
    const [a, b] = op.split(x, 2, [half, half]) as [Tensor, Tensor]; // [T, n, hd/2] each
    return op.concat([op.sub(op.mul(a, c), op.mul(b, s)), op.add(op.mul(b, c), op.mul(a, s))], 2); // [T, n, hd]
  }
  const c = op.reshape(cos, [t, 1, half, 1]);
  const s = op.reshape(sin, [t, 1, half, 1]);
  const pairs = op.reshape(x, [t, n, half, 2]);
  const [a, b] = op.split(pairs, 3, [1, 1]) as [Tensor, Tensor]; // [T, n, hd/2, 1]
  const out = op.concat([op.sub(op.mul(a, c), op.mul(b, s)), op.add(op.mul(b, c), op.mul(a, s))], 3);
  return op.reshape(out, [t, n, hd]);
}

// --- attention -------------------------------------------------------------------------------------------------------

export interface AttentionOpts {
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  /** RoPE tables [T, hd/2] and layout; applied to q and k. */
  rope?: { cos: Tensor; sin: Tensor; layout: 'half' | 'interleaved' };
  /** [T] float, 1 for a real token and 0 for padding: padded keys are masked out. */
  keyValid?: Tensor;
  /** Score scale; 1/√hd by default. */
  scale?: number;
}

/** A finite "minus infinity": exp underflows to exactly 0 in float32 and float64, and a fully masked row stays finite. */
const MASKED = -1e9;

/**
 * The additive causal mask [T, T] as data, fed to a model's layer graph: 0 where key ≤ query, −∞ above the diagonal;
 * with a sliding window W (Mistral), also −∞ where query − key ≥ W (HF sliding_window_causal keeps
 * q_idx − kv_idx < sliding_window). `causalMask` below builds the same in a graph, for causalAttention.
 */
export function causalMaskTable(T: number, window: number | null = null): Float64Array {
  const m = new Float64Array(T * T);
  for (let i = 0; i < T; i++) {
    for (let j = i + 1; j < T; j++) m[i * T + j] = -Infinity;
    if (window !== null) for (let j = 0; j <= i - window; j++) m[i * T + j] = -Infinity;
  }
  return m;
}

/**
 * Where the rows of a packed sequence sit (node/engine/driver.ts packedGrad): several sequences that begin with the
 * same ids run as one, the shared prefix once, then each sequence's own suffix. Per row: its RoPE position (the
 * prefix 0..P−1, every suffix again from P, so each suffix row is at the position it has in its own sequence) and
 * its segment: 0 for the prefix, k ≥ 1 for the k-th suffix, −1 for the padding after the last suffix.
 */
export interface PackedRows {
  positions: Int32Array;
  segments: Int32Array;
}

/**
 * The additive mask [T, T] of a packed sequence (T = its rows), in `dtype`: row i sees row j ≤ i of the prefix or of
 * its own segment, and not one further back than the window (by position: query − key < W, as causalMaskTable).
 * So a suffix row sees exactly the keys it sees in its own sequence, at the same positions, and never another
 * suffix; a single segment at positions 0..T−1 gives causalMaskTable. Padding rows see the prefix and the padding
 * up to themselves (a finite softmax), and no real row sees them. Built directly in the graph's dtype: a pack is longer
 * than any one sequence, and a float64 [T, T] copy would double the largest table of the step.
 */
export function packedMaskTable(rows: PackedRows, window: number | null, dtype: FloatDType): Float32Array | Float64Array {
  const { positions: pos, segments: seg } = rows;
  const T = pos.length;
  const m = dtype === 'float32' ? new Float32Array(T * T) : new Float64Array(T * T);
  m.fill(-Infinity);
  for (let i = 0; i < T; i++) {
    const si = seg[i]!;
    const o = i * T;
    for (let j = 0; j <= i; j++) {
      const sj = seg[j]!;
      if (sj !== 0 && sj !== si) continue;
      if (window !== null && pos[i]! - pos[j]! >= window) continue;
      m[o + j] = 0;
    }
  }
  return m;
}

/** [T, T] additive causal mask inside a graph: 0 on and below the diagonal, MASKED above. */
export function causalMask(g: Graph, dtype: DType, t: Dim): Tensor {
  return op.mul(op.trilu(op.expand(g.scalar(1, dtype), [t, t]), true, 1), MASKED);
}


/**
 * The inputs every decoder-layer graph shares (the driver feeds them by these names): 'x' [T, H], 'rope_cos' and
 * 'rope_sin' [T, D/2], 'mask' [T, T] (additive, the layer kind's).
 */
export function layerInputs(g: Graph, dtype: DType, hidden: number, headDim: number): { x: Tensor; cos: Tensor; sin: Tensor; mask: Tensor } {
  const T = 'T';
  return {
    x: g.input('x', dtype, [T, hidden]),
    cos: g.input('rope_cos', dtype, [T, headDim / 2]),
    sin: g.input('rope_sin', dtype, [T, headDim / 2]),
    mask: g.input('mask', dtype, [T, T]),
  };
}
/**
 * The attention every family shares. q [T, nh, hd] with RoPE applied and the softmax scale folded in, k [T, nkv, hd]
 * with RoPE applied, v [T, nkv·hd], mask [T, T] additive (causal, sliding window or padding: the caller's) ->
 * [T, nh·hd]. Query head n reads key/value head ⌊n / rep⌋ (HF `repeat_kv`): instead of repeating k and v (a rep× copy
 * and a ReduceSum in the backward), the rep query heads of each kv head become rows of one batched MatMul. `softcap`
 * (Gemma 2) caps the scores before the mask.
 */
export function groupedAttention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, o: { nHeads: number; nKvHeads: number; headDim: number; softcap?: number | null }): Tensor {
  const { nHeads: nh, nKvHeads: nkv, headDim: hd } = o;
  if (!Number.isInteger(nh / nkv)) throw new GraphError('attention', `n_heads ${nh} is not a multiple of n_kv_heads ${nkv}`);
  const rep = nh / nkv;
  const t = q.shape[0]!;
  const rt = dimMul(rep, t);
  const qg = op.reshape(op.transpose(op.reshape(q, [t, nkv, rep, hd]), [1, 2, 0, 3]), [nkv, rt, hd]); // [nkv, rep·T, hd]
  const kT = op.transpose(k, [1, 2, 0]); // [nkv, hd, T]
  const vt = op.transpose(op.reshape(v, [t, nkv, hd]), [1, 0, 2]); // [nkv, T, hd]
  let scores = op.reshape(op.matmul(qg, kT), [nkv, rep, t, t]); // [nkv, rep, T, T]
  if (o.softcap !== undefined && o.softcap !== null) scores = softcap(scores, o.softcap);
  const probs = op.reshape(op.softmax(op.add(scores, mask), 3), [nkv, rt, t]); // [nkv, rep·T, T]
  const out = op.reshape(op.matmul(probs, vt), [nkv, rep, t, hd]); // [nkv, rep, T, hd]
  return op.reshape(op.transpose(out, [2, 0, 1, 3]), [t, dimMul(nh, hd)]); // [T, nh·hd], head n = kvh·rep + g
}

/**
 * Causal grouped-query attention from the projections' outputs: q [T, nh·hd], k and v [T, nkv·hd] -> [T, nh·hd].
 * RoPE (when given), the scale and the causal mask (with padded keys masked) around groupedAttention.
 */
export function causalAttention(q: Tensor, k: Tensor, v: Tensor, o: AttentionOpts): Tensor {
  const { nHeads: nh, nKvHeads: nkv, headDim: hd } = o;
  const t = q.shape[0]!;
  let qh = op.reshape(q, [t, nh, hd]); // [T, nh, hd]
  let kh = op.reshape(k, [t, nkv, hd]); // [T, nkv, hd]
  if (o.rope !== undefined) {
    qh = rope(qh, o.rope.cos, o.rope.sin, o.rope.layout);
    kh = rope(kh, o.rope.cos, o.rope.sin, o.rope.layout);
  }
  let mask = causalMask(q.graph, q.dtype, t); // [T, T]
  if (o.keyValid !== undefined) mask = op.add(mask, op.reshape(op.mul(op.sub(o.keyValid, 1), -MASKED), [1, t]));
  return groupedAttention(op.mul(qh, o.scale ?? 1 / Math.sqrt(hd)), kh, v, mask, o);
}

/** Token embedding: rows of table [V, H] at ids [T] -> [T, H]. */
export function embedding(table: Tensor, ids: Tensor): Tensor {
  return op.gather(table, ids, 0);
}

// --- chunked lm_head + log-softmax + target gather ---------------------------------------------------------------------

/**
 * Per-token log-probabilities of the targets: hidden [C, H], lmHead [V, H], targets [C] int64 -> [C].
 * log p(target_t) = logits_t[target_t] − logsumexp(logits_t), logits = hidden · lmHeadᵀ (optionally soft-capped).
 * Build it over a chunk symbol C and run it chunk by chunk (chunkRanges), so the [C, V] buffers never cover all T.
 */
export function tokenLogprobs(hidden: Tensor, lmHead: Tensor, targets: Tensor, opts: { softcap?: number } = {}): Tensor {
  const c = hidden.shape[0]!;
  let logits = op.gemm(hidden, lmHead, { transB: true }); // [C, V]
  if (opts.softcap !== undefined) logits = softcap(logits, opts.softcap);
  const lsm = op.logSoftmax(logits, -1); // [C, V]
  const picked = op.gatherElements(lsm, op.reshape(targets, [c, 1]), 1); // [C, 1]
  return op.reshape(picked, [c]); // [C]
}

/** The lm_head graph a driver runs per chunk: inputs hidden ['C', H], lm_head [V, H], targets ['C'] -> logprobs ['C']. */
export function logprobGraph(dtype: 'float32' | 'float64', hiddenSize: number, vocab: number, opts: { softcap?: number; name?: string } = {}): Graph {
  const g = new Graph(opts.name ?? 'lm_head_logprobs');
  const h = g.input('hidden', dtype, ['C', hiddenSize]);
  const w = g.input('lm_head', dtype, [vocab, hiddenSize]);
  const ids = g.input('targets', 'int64', ['C']);
  g.output('logprobs', tokenLogprobs(h, w, ids, opts.softcap === undefined ? {} : { softcap: opts.softcap }));
  return g;
}

/** [start, end) token ranges of at most `chunk` tokens covering 0..total. */
export function chunkRanges(total: number, chunk: number): [number, number][] {
  if (!Number.isInteger(chunk) || chunk <= 0) throw new GraphError('chunkRanges', `chunk must be a positive integer, got ${chunk}`);
  const out: [number, number][] = [];
  for (let s = 0; s < total; s += chunk) out.push([s, Math.min(total, s + chunk)]);
  return out;
}

/**
 * How llama.cpp's CPU matmul rounds a linear's input before the dot product with a weight of a given type: the
 * weight type's vec_dot_type (ggml-cpu.c type_traits_cpu). 'q8_0': blocks of 32 (for Q8_0, Q4_0, Q5_0 weights);
 * 'q8_1': the same values (Q4_1, Q5_1); 'q8_K': blocks of 256 (Q2_K … Q6_K); 'f16' and 'bf16': the input rounded to
 * that float (F16, BF16 weights). F32 weights take the input as it is.
 */
export type ActQuantKind = 'q8_0' | 'q8_1' | 'q8_K' | 'f16' | 'bf16';

/** The activation rounding of a model's frozen linears: per layer module (one kind for all layers) and the lm_head. */
export interface ActQuantTable {
  modules: Readonly<Record<string, ActQuantKind>>;
  lmHead: ActQuantKind | null;
  /** Modules whose layers need different kinds; one layer graph serves every layer, so these keep exact inputs. */
  mixed: readonly string[];
}

/**
 * x [..., K] as llama.cpp's CPU kernels quantize it for a weight of `kind` (x86 build, ggml-cpu/arch/x86/quants.c
 * quantize_row_q8_0 / _q8_1 and ggml-quants.c quantize_row_q8_K_ref, which the repacked Q4_K kernels' quantize_mat_q8_K_4x8
 * equals), dequantized back to floats, with a straight-through gradient (identity toward x), so the frozen matmul
 * that follows computes Σ w·(d·q) as ggml's integer dot products do. Per block of B values with amax = max |x|:
 *   q8_0 / q8_1 (B = 32): q = round(x · (127/amax)), d = fp16(amax/127), x̂ = q·d
 *   q8_K (B = 256):       s = 127/amax, q = round(x · s), d = 1/s (f32), x̂ = q·d
 * (ggml's q8_K takes s = −127/max with the signed max; round half to even is odd-symmetric, so x̂ is the same.) Rounding is
 * half to even everywhere, as _mm256_round_ps(_MM_ROUND_NEAREST), ARM's vcvtnq and nearest_int do (only the scalar
 * quantize_row_q8_0_ref's roundf differs, at exact halves, and no SIMD build runs it). ARM builds compute the q8_0
 * multiplier as 1/(amax/127), at most one ulp away. Q4_1's dot also reads the fp16 block sum of q8_1, which this does
 * not reproduce (a 2⁻¹¹-relative rounding of the min term).
 */
export function quantizeActivations(x: Tensor, kind: ActQuantKind | null | undefined): Tensor {
  if (kind === null || kind === undefined) return x;
  if (kind === 'f16' || kind === 'bf16') return op.straightThrough(x, op.roundNarrow(x, kind === 'f16' ? 'float16' : 'bfloat16'));
  const B = kind === 'q8_K' ? 256 : 32;
  const K = x.shape[x.rank - 1]!;
  if (typeof K !== 'number' || K % B !== 0) {
    throw new GraphError('quantizeActivations', `a ${kind} input needs a last dim that is a multiple of ${B}, got ${fmtShape(x.shape)}`);
  }
  const xb = op.reshape(x, [...x.shape.slice(0, -1), K / B, B]); // [..., K/B, B]
  const amax = op.reduceMax(op.abs(xb), [-1], true); // [..., K/B, 1]
  const zero = op.equal(amax, 0);
  const s = op.where(zero, 0, op.div(127, amax)); // an all-zero block stays zero
  const q = op.round(op.mul(xb, s)); // [..., K/B, B], integers in [−127, 127]
  const d = kind === 'q8_K' ? op.where(zero, 0, op.div(1, s)) : op.roundNarrow(op.div(amax, 127), 'float16');
  return op.straightThrough(x, op.reshape(op.mul(q, d), x.shape)); // [..., K]
}
