// Interval estimates for evaluation (the learning curve, the gym): a win rate with its Wilson interval (common/training/gate.ts), and a mean
// return with the normal approximation (mean ± 1.96·sd/√n).
import { wilson } from './gate.ts';

export interface RateEstimate {
  rate: number;
  /** 95% Wilson interval. */
  ci: [number, number];
  k: number;
  n: number;
}

export interface MeanEstimate {
  mean: number;
  /** 95% normal-approximation interval. */
  ci: [number, number];
  n: number;
}

export function rateEstimate(k: number, n: number): RateEstimate {
  return { rate: n === 0 ? 0 : k / n, ci: wilson(k, n), k, n };
}

export function meanEstimate(xs: readonly number[]): MeanEstimate {
  const n = xs.length;
  if (n === 0) return { mean: 0, ci: [0, 0], n };
  const mean = xs.reduce((s, x) => s + x, 0) / n;
  const sd = Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / Math.max(1, n - 1));
  const h = (1.96 * sd) / Math.sqrt(n);
  return { mean, ci: [mean - h, mean + h], n };
}
