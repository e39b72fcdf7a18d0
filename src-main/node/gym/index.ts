// The gym library surface (package.json exports `rein/gym`): LlamaGym's Agent on Rein's engine, the Env contract with
// Gymnasium's semantics, two envs, baselines and the episode loop. See docs/gym.md.
export type { Env, Policy, StepResult } from '../../common/gym/env.ts';
export { EnvStateError } from '../../common/gym/env.ts';
export { BlackjackEnv, basicStrategy, randomBlackjack, handSum, usableAce, isNatural, type BlackjackAction, type BlackjackObs, type BlackjackOptions } from '../../common/gym/blackjack.ts';
export { FrozenLakeEnv, FROZEN_LAKE_4X4, randomFrozenLake, type FrozenLakeAction, type FrozenLakeOptions } from '../../common/gym/frozen-lake.ts';
export { evaluatePolicy, playPolicy, heldOutSeeds, summarize, HELD_OUT_BASE, type EpisodeOutcome, type Evaluation } from '../../common/gym/evaluate.ts';
export { meanEstimate, rateEstimate, type MeanEstimate, type RateEstimate } from '../../common/training/intervals.ts';
export { Agent, type AgentOptions, type AgentStats } from './agent.ts';
export type { AgentBackend, ChatMessage, RecordedStep, RoundStats, Sample, SampleOptions } from './backend.ts';
export { BlackjackAgent, FrozenLakeAgent, SmallLmBlackjackAgent, SmallLmFrozenLakeAgent, SMALL_LM_OPENINGS, smallLmOpening } from './agents.ts';
export { GymSession, openGymHome, GYM_SOURCE, type GymSessionOptions } from './session.ts';
export { runEpisode, trainAgent, evaluateAgent, MAX_EPISODE_STEPS, type AgentEpisode, type AgentEvaluation, type TrainOptions } from './runner.ts';
export { runGym, GYM_ENVS, type GymEnvName, type GymOptions, type GymResult, type CurvePoint } from './experiment.ts';
