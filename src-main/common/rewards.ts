// Reward mapping and the reward baseline (ARCHITECTURE §4): good = +1, bad = -1, a 1-5 score s = (s-3)/2.
// The reward baseline is ReinforceClaw's: an EMA of the rewards that starts at 0 with no bias correction, and each
// rating's advantage is its reward minus the EMA as it stood before that rating (the first rating ever meets 0).
import type { RatingKind } from './domain.ts';

export const EMA_DECAY = 0.99;

export type RatingValue = 'good' | 'bad' | number;

export function rewardOf(value: RatingValue): { kind: RatingKind; reward: number; scale: number | null } {
  if (value === 'good') return { kind: 'good', reward: 1, scale: null };
  if (value === 'bad') return { kind: 'bad', reward: -1, scale: null };
  if (!Number.isInteger(value) || value < 1 || value > 5) {
    throw new RangeError(`a rating scale must be an integer from 1 to 5, got ${value}`);
  }
  return { kind: 'scale', reward: (value - 3) / 2, scale: value };
}

/** One EMA update. `prev` is null before the first rating: the EMA starts at 0 (no seeding, no bias correction). */
export function emaNext(prev: number | null, reward: number, decay = EMA_DECAY): number {
  return decay * (prev ?? 0) + (1 - decay) * reward;
}

/** Fold a sequence of rewards into the EMA, starting from `start` (null = no rating yet, i.e. 0). */
export function emaFold(start: number | null, rewards: Iterable<number>, decay = EMA_DECAY): number | null {
  let v = start;
  for (const r of rewards) v = emaNext(v, r, decay);
  return v;
}

/**
 * The reward baseline each of a round's on-policy ratings meets: the mean reward of the round's other on-policy
 * ratings (leave-one-out, as RLOO: Kool, van Hoof & Welling 2019, "Buy 4 REINFORCE samples, get a baseline for free!";
 * Ahmadian et al. 2024, arXiv:2402.14740). Why this one:
 * - It is right from the first rating: no decay to warm up and no prior to correct.
 * - It estimates the value of the policy that sampled the answers (the round's pending ratings were sampled by the
 *   live version), where an EMA over ~100 ratings lags it by rounds.
 * - It leaves the rating out, so b does not depend on that answer and the policy gradient stays unbiased.
 * - The advantages r_i − b_i = n/(n−1)·(r_i − r̄) sum to zero: the round only moves probability from the answers
 *   rated below its mean to those rated above it, and never raises or lowers everything it sampled.
 * A round without contrast (every reward equal, or a single rating) therefore meets b = r: every advantage is 0.
 * `heldout` rewards are not in the pool (the gate scores them; their labels must not shape training): each meets
 * the mean of all `trained` rewards. null where there is nothing to compare with.
 */
export function roundBaselines(trained: readonly number[], heldout: readonly number[] = []): { trained: (number | null)[]; heldout: (number | null)[]; mean: number | null } {
  const n = trained.length;
  const sum = trained.reduce((s, r) => s + r, 0);
  const mean = n === 0 ? null : sum / n;
  return { trained: trained.map((r) => (n < 2 ? null : (sum - r) / (n - 1))), heldout: heldout.map(() => mean), mean };
}

/**
 * Advantage against the baseline, clipped to +-2. Never divided by the round's spread: a round of 31 Good and 1 Bad
 * would then push as hard as an even one (Liu et al. 2025, "Understanding R1-Zero-Like Training", on GRPO's std term).
 */
export function advantage(reward: number, baseline: number, clip = 2): number {
  return Math.max(-clip, Math.min(clip, reward - baseline));
}
