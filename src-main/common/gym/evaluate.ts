// Plays a policy that needs no model (basic strategy, random) on a list of seeds: the baselines an agent is compared
// with on the same held-out episodes.
import { Rng } from '../engine/rng.ts';
import type { Env, Policy } from './env.ts';
import { meanEstimate, rateEstimate, type MeanEstimate, type RateEstimate } from '../training/intervals.ts';

export interface EpisodeOutcome {
  seed: number;
  /** The undiscounted sum of rewards. */
  return: number;
  steps: number;
  truncated: boolean;
}

export interface Evaluation {
  episodes: number;
  /** Episodes with a positive return (a blackjack win, reaching FrozenLake's goal). */
  wins: RateEstimate;
  meanReturn: MeanEstimate;
}

export function summarize(outcomes: readonly EpisodeOutcome[]): Evaluation {
  return { episodes: outcomes.length, wins: rateEstimate(outcomes.filter((o) => o.return > 0).length, outcomes.length), meanReturn: meanEstimate(outcomes.map((o) => o.return)) };
}

export function playPolicy<Obs, Action>(env: Env<Obs, Action>, policy: Policy<Obs, Action>, seed: number, maxSteps = 1000): EpisodeOutcome {
  const rng = new Rng(seed).fork('policy');
  let obs = env.reset(seed);
  let ret = 0;
  for (let steps = 1; steps <= maxSteps; steps++) {
    const r = env.step(policy(obs, () => rng.uniform()));
    ret += r.reward;
    if (r.terminated || r.truncated) return { seed, return: ret, steps, truncated: r.truncated };
    obs = r.obs;
  }
  return { seed, return: ret, steps: maxSteps, truncated: true };
}

export function evaluatePolicy<Obs, Action>(env: Env<Obs, Action>, policy: Policy<Obs, Action>, seeds: readonly number[]): Evaluation {
  return summarize(seeds.map((s) => playPolicy(env, policy, s)));
}

/** Held-out seeds: a range disjoint from training's (training draws from [0, HELD_OUT_BASE)). */
export const HELD_OUT_BASE = 1_000_000_000;
export const heldOutSeeds = (n: number, offset = 0): number[] => Array.from({ length: n }, (_, i) => HELD_OUT_BASE + offset + i);

/**
 * The env gate's seeds for round `runId` (common/training/gate.ts): n fresh seeds per round, from a range disjoint
 * from training's and from the held-out evaluation's (which may use up to 500,000,000 seeds).
 */
export const GATE_SEED_BASE = HELD_OUT_BASE + 500_000_000;
export const gateSeeds = (runId: number, n: number): number[] => Array.from({ length: n }, (_, i) => GATE_SEED_BASE + (runId - 1) * n + i);
