// The round's objectives as IR graphs (ARCHITECTURE §4), so the engine's autodiff differentiates them and the same
// graph gives the loss and dLoss/dπ_t. The loss depends on the model only through the per-token log-probabilities
// π_t, so an objective graph takes π (and the stored μ, the base's ref, a mask) and the driver backpropagates the
// dlogp output through the lm_head and the layers. Sequences are padded to a bucket N; mask is 1 on
// the tokens that train, 0 on padding and on context inside a response (an agent turn's tool results): every mean and
// sum below, the KL anchor's included, runs over the 1s, and dlogp is 0 elsewhere.
//
// MIS-PO, for on-policy turns (behaviour logprobs μ stored at sampling time):
//   ρ_t = exp(π_t − μ_t)                                  token importance ratio
//   actor = −mean_t min(ρ_t·A, clip(ρ_t, lo, hi)·A)         PPO-style clipped surrogate (Schulman et al. 2017)
//   ρ̄ = exp(mean_t(π_t − μ_t))                             trajectory drift (geometric-mean ratio)
//   scale = sg(min(1, ρ̄/low, high/ρ̄))   or  sg(1[low ≤ ρ̄ ≤ high]) with drift = 'reject'
//   k3_t = exp(ref_t − π_t) − (ref_t − π_t) − 1          (Schulman, "Approximating KL divergence", 2020)
//   loss = scale·actor + β·mean_t k3_t
// A = r − EMA (the reward baseline as it stood before that rating), clipped to ±advantageClip by the caller; never batch-normalised.
//
// KTO, for off-policy turns (text from another model) against the frozen base (Ethayarajh et al. 2024,
// "KTO: Model Alignment as Prospect Theoretic Optimization", arXiv:2402.01306, eq. 8):
//   r = Σ_t (π_t − ref_t)                                  the sequence's log-ratio to the base
//   desirable:   loss = w·(1 − σ(β_KTO·(r − z0)))   + β·mean_t k3_t
//   undesirable: loss = w·(1 − σ(β_KTO·(z0 − r)))   + β·mean_t k3_t
// w is the class weight λ_D or λ_U (ktoClassWeights) times the rating's magnitude |r| (a 4 of 5 weighs half a 5).
// z0 is the reference point, an input: the trainer's detached estimate on mismatched pairs (node/training/step.ts).
// The k3 term is Rein's anchor, not the paper's: KTO's value saturates once r − z0 is large, but nothing in it stops
// off-policy text from dragging the tokens the sigmoid no longer sees far from the base (one probe reached a
// training-token k3 of 135.7); the preset's β weighs it as it does MIS-PO's.
import { Graph, type DType, type Tensor } from '../engine/ir.ts';
import * as op from '../engine/ops.ts';
import { grad } from '../engine/autodiff.ts';

export interface MisPoOptions {
  beta: number;
  bandLow: number;
  bandHigh: number;
  drift: 'scale' | 'reject';
  ratioClipLow: number;
  ratioClipHigh: number;
}

export interface KtoOptions {
  ktoBeta: number;
  /** The weight of the k3 anchor to the base (the preset's β). */
  beta: number;
}

/**
 * KTO's class weights from the round's counts: λ_U is the preset's, and λ_D is moved, only as far as needed, so that
 * λ_D·n_D / (λ_U·n_U) lies in [1, 4/3], the range the paper recommends (arXiv:2402.01306, §4.2, eq. 9). With one
 * class absent the ratio is undefined and the preset's weights stand.
 */
export function ktoClassWeights(nDesirable: number, nUndesirable: number, o: { ktoDesirable: number; ktoUndesirable: number }): { desirable: number; undesirable: number } {
  if (nDesirable === 0 || nUndesirable === 0) return { desirable: o.ktoDesirable, undesirable: o.ktoUndesirable };
  const ratio = (o.ktoDesirable * nDesirable) / (o.ktoUndesirable * nUndesirable);
  const target = Math.min(4 / 3, Math.max(1, ratio));
  return { desirable: (target * o.ktoUndesirable * nUndesirable) / nDesirable, undesirable: o.ktoUndesirable };
}

function maskedMean(x: Tensor, mask: Tensor, count: Tensor): Tensor {
  return op.div(op.reduceSum(op.mul(x, mask), [0], false), count);
}

/**
 * MIS-PO over one sequence. Inputs: logp, mu, ref, mask [N]; adv []. Outputs: loss [], dlogp [N], kl [] (mean k3),
 * clip_frac [] (share of tokens whose ratio left [lo, hi]), rho_bar [], scale [].
 */
export function misPoGraph(o: MisPoOptions, dtype: DType = 'float64'): Graph {
  const g = new Graph(`mispo_${o.drift}`);
  const logp = g.input('logp', dtype, ['N']);
  const mu = g.input('mu', dtype, ['N']);
  const ref = g.input('ref', dtype, ['N']);
  const mask = g.input('mask', dtype, ['N']);
  const adv = g.input('adv', dtype, []);
  const count = op.reduceSum(mask, [0], false); // [] real tokens

  const logRatio = op.sub(logp, mu); // [N]
  const rho = op.exp(logRatio); // [N]
  const unclipped = op.mul(rho, adv);
  const clipped = op.mul(op.clip(rho, o.ratioClipLow, o.ratioClipHigh), adv);
  const actor = op.neg(maskedMean(op.min(unclipped, clipped), mask, count)); // []

  const rhoBar = op.exp(maskedMean(logRatio, mask, count)); // []
  const scale =
    o.drift === 'scale'
      ? op.stopGradient(op.min(op.min(op.div(rhoBar, o.bandLow), op.div(o.bandHigh, rhoBar)), 1))
      : op.stopGradient(op.where(op.logicalAnd(op.greaterOrEqual(rhoBar, o.bandLow), op.lessOrEqual(rhoBar, o.bandHigh)), g.scalar(1, dtype), 0));

  const d = op.sub(ref, logp);
  const k3 = op.sub(op.sub(op.exp(d), d), 1); // [N]
  const kl = maskedMean(k3, mask, count);
  const loss = op.add(op.mul(scale, actor), op.mul(kl, o.beta));

  const outside = op.where(op.logicalOr(op.less(rho, o.ratioClipLow), op.greater(rho, o.ratioClipHigh)), g.scalar(1, dtype), 0);
  const clipFrac = maskedMean(outside, mask, count);
  const [dlogp] = grad([loss], [logp]);
  g.output('loss', loss);
  g.output('dlogp', op.mul(dlogp!, mask));
  g.output('kl', kl);
  g.output('clip_frac', clipFrac);
  g.output('rho_bar', rhoBar);
  g.output('scale', scale);
  return g;
}

/**
 * KTO over one sequence. Inputs: logp, ref, mask [N]; desirable [] (1 or 0); z0 []; weight [] (w). Outputs: loss [],
 * dlogp [N], log_ratio [] (r), kl [] (mean k3).
 */
export function ktoGraph(o: KtoOptions, dtype: DType = 'float64'): Graph {
  const g = new Graph('kto');
  const logp = g.input('logp', dtype, ['N']);
  const ref = g.input('ref', dtype, ['N']);
  const mask = g.input('mask', dtype, ['N']);
  const desirable = g.input('desirable', dtype, []);
  const z0 = g.input('z0', dtype, []);
  const weight = g.input('weight', dtype, []);
  const count = op.reduceSum(mask, [0], false);

  const r = op.reduceSum(op.mul(op.sub(logp, ref), mask), [0], false); // []
  const zr = op.stopGradient(z0);
  const good = op.sub(1, op.sigmoid(op.mul(op.sub(r, zr), o.ktoBeta)));
  const bad = op.sub(1, op.sigmoid(op.mul(op.sub(zr, r), o.ktoBeta)));
  const value = op.mul(op.add(op.mul(desirable, good), op.mul(op.sub(1, desirable), bad)), weight);

  const d = op.sub(ref, logp);
  const kl = maskedMean(op.sub(op.sub(op.exp(d), d), 1), mask, count);
  const loss = op.add(value, op.mul(kl, o.beta));
  const [dlogp] = grad([loss], [logp]);
  g.output('loss', loss);
  g.output('dlogp', op.mul(dlogp!, mask));
  g.output('log_ratio', r);
  g.output('kl', kl);
  return g;
}

/** The padded length of an objective graph's N for n tokens: powers of two from 16, so sessions are reused. */
export function objectiveBucket(n: number): number {
  let b = 16;
  while (b < n) b *= 2;
  return b;
}
