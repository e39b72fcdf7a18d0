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

/** Advantage against the baseline, clipped to +-2 (no per-batch normalisation: it would erase the baseline). */
export function advantage(reward: number, baseline: number, clip = 2): number {
  return Math.max(-clip, Math.min(clip, reward - baseline));
}
