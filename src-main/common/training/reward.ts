// The reward model's arithmetic: a logistic head on pooled hidden states (the features come from the frozen base,
// run on ONNX Runtime: node/reward/features.ts), its held-out AUROC with the Hanley–McNeil interval, pair accuracy
// with the Wilson interval, and the active-learning decision. Pure TS, no I/O.
//   N = examples, H = feature width (the model's hidden size)
import { wilson } from './gate.ts';

/** One labelled example: y = 1 preferred, 0 not; weight scales its loss term. */
export interface RewardExample {
  x: Float32Array; // [H]
  y: 0 | 1;
  weight: number;
}

/** A fitted head: p(good | x) = σ(w · (x − mean) / std + b). */
export interface RewardHead {
  mean: number[]; // [H]
  std: number[]; // [H]
  w: number[]; // [H]
  b: number;
}

export interface FitOptions {
  /**
   * L2 strength on the standardised weights, per unit of total example weight: a Gaussian prior N(0, 1/(λ·N)) on
   * w. 1 keeps 64 examples in 128 dimensions from separating on noise.
   */
  l2?: number;
  iterations?: number;
}

export const REWARD_FIT_DEFAULTS = { l2: 1, iterations: 400 } as const;

const sigmoid = (z: number): number => (z >= 0 ? 1 / (1 + Math.exp(-z)) : Math.exp(z) / (1 + Math.exp(z)));

/**
 * Weighted logistic regression by full-batch Adam on the convex loss
 *   L = Σ_i w_i · BCE(σ(w·z_i + b), y_i) / Σ w_i + (l2 / (2·Σ w_i)) · |w|²,   z = standardised x.
 * Deterministic: fixed iterations from zero, no sampling.
 */
export function fitRewardHead(examples: readonly RewardExample[], o: FitOptions = {}): RewardHead {
  const N = examples.length;
  if (N === 0) throw new Error('fitRewardHead: no examples');
  const H = examples[0]!.x.length;
  const l2 = o.l2 ?? REWARD_FIT_DEFAULTS.l2;
  const iters = o.iterations ?? REWARD_FIT_DEFAULTS.iterations;
  const mean = new Array<number>(H).fill(0);
  const std = new Array<number>(H).fill(0);
  for (const e of examples) for (let j = 0; j < H; j++) mean[j]! += e.x[j]! / N;
  for (const e of examples) for (let j = 0; j < H; j++) std[j]! += (e.x[j]! - mean[j]!) ** 2 / N;
  for (let j = 0; j < H; j++) std[j] = Math.sqrt(std[j]!) + 1e-6;
  const z = examples.map((e) => Float64Array.from(e.x, (v, j) => (v - mean[j]!) / std[j]!)); // [N, H]
  const W = examples.reduce((s, e) => s + e.weight, 0);
  const w = new Float64Array(H);
  let b = 0;
  // Adam (Kingma & Ba 2015) with a step that decays as 1/√t: the loss is convex and smooth, so this converges.
  const m = new Float64Array(H + 1);
  const v = new Float64Array(H + 1);
  const g = new Float64Array(H + 1);
  const lr0 = 0.1;
  for (let t = 1; t <= iters; t++) {
    g.fill(0);
    for (let i = 0; i < N; i++) {
      const zi = z[i]!;
      let s = b;
      for (let j = 0; j < H; j++) s += w[j]! * zi[j]!;
      const r = (examples[i]!.weight * (sigmoid(s) - examples[i]!.y)) / W;
      for (let j = 0; j < H; j++) g[j]! += r * zi[j]!;
      g[H]! += r;
    }
    for (let j = 0; j < H; j++) g[j]! += (l2 / W) * w[j]!;
    const lr = lr0 / Math.sqrt(t);
    for (let j = 0; j <= H; j++) {
      m[j] = 0.9 * m[j]! + 0.1 * g[j]!;
      v[j] = 0.999 * v[j]! + 0.001 * g[j]! * g[j]!;
      const step = (lr * (m[j]! / (1 - 0.9 ** t))) / (Math.sqrt(v[j]! / (1 - 0.999 ** t)) + 1e-8);
      if (j < H) w[j]! -= step;
      else b -= step;
    }
  }
  return { mean, std, w: Array.from(w), b };
}

/** p(good | x) under the head. */
export function predictReward(head: RewardHead, x: ArrayLike<number>): number {
  if (x.length !== head.w.length) throw new Error(`predictReward: ${x.length} features for a head of width ${head.w.length}`);
  let s = head.b;
  for (let j = 0; j < head.w.length; j++) s += (head.w[j]! * (x[j]! - head.mean[j]!)) / head.std[j]!;
  return sigmoid(s);
}

export interface AurocEstimate {
  auroc: number;
  /** 95% interval: AUROC ± 1.96·SE, SE by Hanley & McNeil (1982, Radiology 143:29, eq. 2), clipped to [0, 1]. */
  ci: [number, number];
  positives: number;
  negatives: number;
}

/**
 * AUROC: the share of (positive, negative) pairs the scores order correctly, ties counted half (the Mann–Whitney
 * U / (n₁·n₀)). Null without at least one example of each class.
 */
export function auroc(scores: readonly number[], labels: readonly (0 | 1)[]): AurocEstimate | null {
  const pos = scores.filter((_, i) => labels[i] === 1);
  const neg = scores.filter((_, i) => labels[i] === 0);
  const n1 = pos.length;
  const n0 = neg.length;
  if (n1 === 0 || n0 === 0) return null;
  let u = 0;
  for (const p of pos) for (const q of neg) u += p > q ? 1 : p === q ? 0.5 : 0;
  const a = u / (n1 * n0);
  // Hanley–McNeil: Q1 = A/(2−A), Q2 = 2A²/(1+A).
  const q1 = a / (2 - a);
  const q2 = (2 * a * a) / (1 + a);
  const se = Math.sqrt(Math.max(0, (a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n0 - 1) * (q2 - a * a)) / (n1 * n0)));
  return { auroc: a, ci: [Math.max(0, a - 1.96 * se), Math.min(1, a + 1.96 * se)], positives: n1, negatives: n0 };
}

export interface PairAccuracy {
  accuracy: number;
  /** 95% Wilson interval. */
  ci: [number, number];
  correct: number;
  pairs: number;
}

/** The share of pairs whose preferred side scores higher (ties count as wrong), or null with no pairs. */
export function pairAccuracy(pairs: readonly { chosen: number; rejected: number }[]): PairAccuracy | null {
  if (pairs.length === 0) return null;
  const correct = pairs.filter((p) => p.chosen > p.rejected).length;
  return { accuracy: correct / pairs.length, ci: wilson(correct, pairs.length), correct, pairs: pairs.length };
}

/** A rating's reward in [−1, 1] as the reward model's label: above 0 preferred, below not, 0 (a 3 of 5) no label. */
export function rewardLabel(reward: number): { y: 0 | 1; weight: number } | null {
  if (reward === 0) return null;
  return { y: reward > 0 ? 1 : 0, weight: Math.abs(reward) };
}

export type AskMode = 'always' | 'unsure';

export interface AskDecision {
  ask: boolean;
  /** What the popup says about why it asks (or why it did not). */
  reason: string;
  p: number | null;
}

/**
 * Active learning: with `always`, ask every time; with `unsure`, ask only when |p − 0.5| < margin (uncertainty
 * sampling, Lewis & Gale 1994), and always when there is no reward model yet or it could not score the turn.
 */
export function askDecision(mode: AskMode, p: number | null, margin: number): AskDecision {
  if (mode === 'always') return { ask: true, reason: 'asking about every answer (reward.ask is always)', p };
  if (p === null) return { ask: true, reason: 'there is no reward model yet to judge this answer', p };
  const ask = Math.abs(p - 0.5) < margin;
  return ask
    ? { ask, reason: `the reward model is unsure: ${chanceOfGood(p)}`, p }
    : { ask, reason: `the reward model is confident: ${chanceOfGood(p)}; not asked, and not labelled`, p };
}

/** p(good) in words: "it gives this answer a 25% chance of being Good". */
export const chanceOfGood = (p: number): string => `it gives this answer a ${Math.round(p * 100)}% chance of being Good`;

/**
 * Fewer held-out examples of either kind than this and the AUROC says nothing worth printing (with 1 Good and 1 Bad
 * it can only be 0 or 1); the same for pairs and pair accuracy.
 */
export const REWARD_MIN_HELDOUT = 5;
export const REWARD_MIN_PAIRS = 5;

/** An interval as "[0.70, 1.00]", or null when it has no width at two decimals (Hanley–McNeil's is [1, 1] at AUROC 1). */
const interval = (ci: readonly [number, number]): string | null => (ci[0].toFixed(2) === ci[1].toFixed(2) ? null : `[${ci[0].toFixed(2)}, ${ci[1].toFixed(2)}]`);

/** The held-out AUROC in words, or why there is none to judge by yet. */
export function aurocWords(m: { heldout: { positives: number; negatives: number }; auroc: { value: number; ci: [number, number] } | null }): string {
  const h = m.heldout;
  if (m.auroc === null || h.positives < REWARD_MIN_HELDOUT || h.negatives < REWARD_MIN_HELDOUT) {
    return `held-out AUROC: too few ratings to judge yet (${h.positives} Good and ${h.negatives} Bad held out; it needs ${REWARD_MIN_HELDOUT} of each)`;
  }
  const ci = interval(m.auroc.ci);
  const on = `on ${h.positives} Good + ${h.negatives} Bad`;
  if (ci !== null) return `held-out AUROC ${m.auroc.value.toFixed(2)} ${ci} ${on}`;
  const why = m.auroc.value >= 0.995 ? 'every Good scored above every Bad; ' : m.auroc.value <= 0.005 ? 'every Bad scored above every Good; ' : '';
  return `held-out AUROC ${m.auroc.value.toFixed(2)} ${on} (${why}too few to give a range)`;
}

/**
 * One line about a reward-model version, as the CLI and the Training screen show it: "reward model v3 (96 ratings):
 * held-out AUROC 0.91 [0.84, 0.98] on 12 Good + 13 Bad; pair accuracy 0.80 [0.49, 0.94] on 10 pairs".
 */
export function rewardModelLine(m: {
  version: number;
  ratings: number;
  metrics: { heldout: { positives: number; negatives: number }; auroc: { value: number; ci: [number, number] } | null; pairs: { accuracy: number; ci: [number, number]; pairs: number } | null };
}): string {
  const pa = m.metrics.pairs;
  const p =
    pa === null
      ? 'no held-out pairs yet'
      : pa.pairs < REWARD_MIN_PAIRS
        ? `pair accuracy: too few held-out pairs to judge yet (${pa.pairs}; it needs ${REWARD_MIN_PAIRS})`
        : `pair accuracy ${pa.accuracy.toFixed(2)}${interval(pa.ci) === null ? '' : ` ${interval(pa.ci)}`} on ${pa.pairs} pairs`;
  return `reward model v${m.version} (${m.ratings} examples): ${aurocWords(m.metrics)}; ${p}`;
}
