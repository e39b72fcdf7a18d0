// The episode loop of LlamaGym's README (act → env.step → assignReward → terminateEpisode), with the env's failures
// contained: an env that throws in reset or step ends that episode, which is abandoned (nothing of it trains: its
// return is unknown) and reported in the agent's stats; the run goes on. Evaluation plays held-out seeds with
// training off and reports the win rate and mean return with their 95% intervals.
import type { Env } from '../../common/gym/env.ts';
import { summarize, type EpisodeOutcome, type Evaluation } from '../../common/gym/evaluate.ts';
import type { Agent } from './agent.ts';
import type { RoundStats } from './backend.ts';
import { pairedReturns, type EnvGateMetrics } from '../../common/training/gate.ts';

export interface AgentEpisode extends EpisodeOutcome {
  /** Why the episode was abandoned (the env threw), or null. */
  error: string | null;
  /** The return as training credits it (Agent.shapedReturn: the env's rewards plus the unreadable replies' penalties). */
  shapedReturn: number;
  round: RoundStats | null;
}

/** The longest episode the loop plays before it truncates it itself (an env without a time limit). */
export const MAX_EPISODE_STEPS = 1000;

export async function runEpisode<Obs, Action>(agent: Agent<Obs, Action>, env: Env<Obs, Action>, seed: number, maxSteps = MAX_EPISODE_STEPS): Promise<AgentEpisode> {
  const failed = (where: string, e: unknown, steps: number, ret: number): AgentEpisode => {
    const error = `${env.name} ${where} (seed ${seed}): ${(e as Error)?.message ?? String(e)}`;
    const shapedReturn = agent.shapedReturn;
    agent.abortEpisode(error);
    return { seed, return: ret, steps, truncated: false, error, shapedReturn, round: null };
  };
  let obs: Obs;
  try {
    obs = env.reset(seed);
  } catch (e) {
    return failed('reset', e, 0, 0);
  }
  let ret = 0;
  let steps = 0;
  let truncated: boolean;
  for (;;) {
    const action = await agent.act(obs);
    let r;
    try {
      r = env.step(action);
    } catch (e) {
      return failed('step', e, steps, ret);
    }
    steps++;
    agent.assignReward(r.reward);
    ret += r.reward;
    if (r.terminated || r.truncated) {
      truncated = r.truncated;
      break;
    }
    if (steps >= maxSteps) {
      truncated = true;
      break;
    }
    obs = r.obs;
  }
  const shapedReturn = agent.shapedReturn;
  const round = await agent.terminateEpisode({ group: seed });
  return { seed, return: ret, steps, truncated, error: null, shapedReturn, round };
}

export interface TrainOptions {
  episodes: number;
  /**
   * The seed of training episode i (default ⌊i / groupSize⌋: each seed played the agent's groupSize times in a row;
   * training seeds stay below evaluate.ts HELD_OUT_BASE).
   */
  seedOf?: (i: number) => number;
  onEpisode?: (e: AgentEpisode, i: number) => void;
}

/** Plays `episodes` training episodes; rounds run inside terminateEpisode as batches fill. Returns every round's stats. */
export async function trainAgent<Obs, Action>(agent: Agent<Obs, Action>, env: Env<Obs, Action>, o: TrainOptions): Promise<RoundStats[]> {
  agent.training = true;
  const rounds: RoundStats[] = [];
  for (let i = 0; i < o.episodes; i++) {
    const e = await runEpisode(agent, env, o.seedOf?.(i) ?? Math.floor(i / agent.options.groupSize));
    if (e.round !== null) rounds.push(e.round);
    o.onEpisode?.(e, i);
  }
  return rounds;
}

export interface AgentEvaluation extends Evaluation {
  /** Each seed's return in the order given (NaN where the env threw): for paired comparisons on the same seeds. */
  returns: number[];
  /** The same with the unreadable replies' penalties added (AgentEpisode.shapedReturn): what training optimises. */
  shapedReturns: number[];
  /** Replies extractAction could not read during the evaluation, of `steps`. */
  invalid: number;
  steps: number;
  envErrors: number;
}

/** Plays `seeds` with training off (nothing is stored, no round runs); abandoned episodes are left out of the rates. */
export async function evaluateAgent<Obs, Action>(agent: Agent<Obs, Action>, env: Env<Obs, Action>, seeds: readonly number[], onEpisode?: (i: number) => void): Promise<AgentEvaluation> {
  const was = agent.training;
  const before = { ...agent.stats };
  agent.training = false;
  try {
    const outcomes: EpisodeOutcome[] = [];
    const returns: number[] = [];
    const shapedReturns: number[] = [];
    const draws = agent.seedDraws(0);
    for (const [i, seed] of seeds.entries()) {
      // Each held-out episode samples from its own fixed seeds (10,000 apart): the same draws before and after.
      agent.seedDraws(2_000_000_000 + 10_000 * i);
      const e = await runEpisode(agent, env, seed);
      if (e.error === null) outcomes.push(e);
      returns.push(e.error === null ? e.return : Number.NaN);
      shapedReturns.push(e.error === null ? e.shapedReturn : Number.NaN);
      onEpisode?.(i);
    }
    agent.seedDraws(draws);
    return { ...summarize(outcomes), returns, shapedReturns, invalid: agent.stats.invalid - before.invalid, steps: agent.stats.steps - before.steps, envErrors: agent.stats.envErrors - before.envErrors };
  } finally {
    agent.training = was;
  }
}

/**
 * The env gate's comparison of a round's candidate with its parent from their evaluations on the same seeds
 * (GymSession.gateOn): paired on the shaped returns, the ones training optimises (common/training/gate.ts), with the
 * env's win rates and each side's unreadable replies reported.
 */
export function envGateReturns(candidate: AgentEvaluation, parent: AgentEvaluation): Omit<EnvGateMetrics, 'env' | 'firstSeed' | 'kl' | 'klTokens'> {
  return {
    ...pairedReturns(candidate.returns, parent.returns, { candidate: candidate.shapedReturns, parent: parent.shapedReturns }),
    candidateInvalid: candidate.invalid,
    candidateSteps: candidate.steps,
    parentInvalid: parent.invalid,
    parentSteps: parent.steps,
  };
}
