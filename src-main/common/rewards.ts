// Reward mapping and the EMA baseline (ARCHITECTURE §4): good = +1, bad = -1, a 1-5 score s = (s-3)/2.
// The baseline starts at the first reward (it seeds the EMA) and then moves by (1 - decay) toward each new one.
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

/** One EMA update. `prev` is null before the first rating, which then seeds the baseline. */
export function emaNext(prev: number | null, reward: number, decay = EMA_DECAY): number {
  return prev === null ? reward : decay * prev + (1 - decay) * reward;
}

/** Fold a sequence of rewards into the EMA, starting from `start` (null = unseeded). */
export function emaFold(start: number | null, rewards: Iterable<number>, decay = EMA_DECAY): number | null {
  let v = start;
  for (const r of rewards) v = emaNext(v, r, decay);
  return v;
}

/** Advantage against the baseline, clipped to +-2 (no per-batch normalisation: it would erase the baseline). */
export function advantage(reward: number, baseline: number, clip = 2): number {
  return Math.max(-clip, Math.min(clip, reward - baseline));
}
