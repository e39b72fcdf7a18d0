// The environment contract, with Gymnasium's semantics (gymnasium.Env, v1.0): reset(seed) starts an episode and
// returns its first observation; step(action) returns the next observation, the reward for this step, whether the
// episode reached a terminal state of the task (terminated: a win, a loss, a hole) and whether it was cut short from
// outside the task (truncated: a time limit). A caller must reset after either. Unlike Gymnasium, reset returns the
// observation alone (its info is always empty here) and seeds are required: every episode is reproducible.

export interface StepResult<Obs> {
  obs: Obs;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  info: Record<string, unknown>;
}

export interface Env<Obs, Action> {
  /** A short name, e.g. "blackjack". */
  readonly name: string;
  /** Every action the env accepts, in a fixed order (Gymnasium's Discrete(n) listed). */
  readonly actions: readonly Action[];
  /** Starts an episode from `seed` (same seed, same episode under the same actions). */
  reset(seed: number): Obs;
  step(action: Action): StepResult<Obs>;
}

/** Thrown by an env used out of order (step before reset, or after the episode ended). */
export class EnvStateError extends Error {
  constructor(env: string, message: string) {
    super(`${env}: ${message}`);
    this.name = 'EnvStateError';
  }
}

/** A policy that needs no model: a baseline to compare an agent with. */
export type Policy<Obs, Action> = (obs: Obs, rng: () => number) => Action;
