// What `rein gym <env>` and bench/gym.ts run: a fresh Rein home on the small LM (session.ts openGymHome), the
// untrained agent evaluated on held-out seeds, N training episodes (a round each time a batch of episodes fills,
// through the scheduler and the gate), a curve point on the first `curveHands` held-out seeds after every
// `curveEvery` rounds, and the trained agent evaluated on the same held-out seeds. For blackjack, basic strategy and a
// random policy play the same seeds.
import { BlackjackEnv, basicStrategy, randomBlackjack, type BlackjackOptions } from '../../common/gym/blackjack.ts';
import type { Env, Policy } from '../../common/gym/env.ts';
import { evaluatePolicy, heldOutSeeds, type Evaluation } from '../../common/gym/evaluate.ts';
import { meanEstimate, type MeanEstimate } from '../../common/training/intervals.ts';
import { FrozenLakeEnv, randomFrozenLake } from '../../common/gym/frozen-lake.ts';
import type { Agent } from './agent.ts';
import { SmallLmBlackjackAgent, SmallLmFrozenLakeAgent } from './agents.ts';
import type { AgentBackend, RoundStats } from './backend.ts';
import { evaluateAgent, runEpisode, type AgentEpisode, type AgentEvaluation } from './runner.ts';
import { GATE_EPISODES, openGymHome } from './session.ts';

export const GYM_ENVS = ['blackjack', 'frozen-lake'] as const;
export type GymEnvName = (typeof GYM_ENVS)[number];

export interface GymOptions {
  env: GymEnvName;
  /** The Rein home to create (a fresh folder). */
  home: string;
  episodes: number;
  batchEpisodes: number;
  /** Held-out episodes evaluated before and after. */
  heldOut: number;
  seed: number;
  /** Blackjack's rules. */
  blackjack?: BlackjackOptions;
  invalidPenalty?: number;
  modelDir?: string;
  /** A curve point every this many rounds (0: none), on the first curveHands held-out seeds. */
  curveEvery?: number;
  curveHands?: number;
  /** Held-out episodes each round's env gate plays per side (session.ts gateOn; default GATE_EPISODES, 0: the rating gate). */
  gateEpisodes?: number;
  onEpisode?: (e: AgentEpisode, i: number) => void;
  onRound?: (r: RoundStats, curve: CurvePoint | null) => void;
  onEvaluate?: (what: string, done: number, total: number) => void;
  log?: (line: string) => void;
}

export interface CurvePoint {
  round: number;
  episodes: number;
  eval: AgentEvaluation;
}

export interface GymResult {
  env: GymEnvName;
  seed: number;
  episodes: number;
  heldOut: number;
  before: AgentEvaluation;
  after: AgentEvaluation;
  /**
   * after − before on the same held-out seeds (episodes where either env run threw are left out), with its 95%
   * interval: the mean paired change of the return and of the win indicator.
   */
  change: { meanReturn: MeanEstimate; winRate: MeanEstimate };
  baselines: Record<string, Evaluation>;
  rounds: RoundStats[];
  curve: CurvePoint[];
  stats: Agent<unknown, unknown>['stats'];
  trainSeconds: number;
  seconds: number;
}

function setup(name: GymEnvName, backend: AgentBackend, o: GymOptions): { env: Env<unknown, unknown>; agent: Agent<unknown, unknown>; baselines: Record<string, Policy<unknown, unknown>> } {
  const common = { batchEpisodes: o.batchEpisodes, seed: o.seed, ...(o.invalidPenalty === undefined ? {} : { invalidPenalty: o.invalidPenalty }) };
  if (name === 'blackjack') {
    const env = new BlackjackEnv(o.blackjack ?? {});
    return { env: env as Env<unknown, unknown>, agent: new SmallLmBlackjackAgent(backend, common) as Agent<unknown, unknown>, baselines: { basic: basicStrategy, random: randomBlackjack } as Record<string, Policy<unknown, unknown>> };
  }
  const env = new FrozenLakeEnv();
  return { env: env as Env<unknown, unknown>, agent: new SmallLmFrozenLakeAgent(backend, common) as Agent<unknown, unknown>, baselines: { random: randomFrozenLake } as Record<string, Policy<unknown, unknown>> };
}

export async function runGym(o: GymOptions): Promise<GymResult> {
  const t0 = performance.now();
  const h = await openGymHome(o.home, { modelDir: o.modelDir, log: o.log });
  try {
    const { env, agent, baselines } = setup(o.env, h.session, o);
    h.session.gateOn(agent, env, { episodes: o.gateEpisodes ?? GATE_EPISODES });
    const seeds = heldOutSeeds(o.heldOut);
    const curveSeeds = seeds.slice(0, o.curveHands ?? Math.min(o.heldOut, 400));
    const before = await evaluateAgent(agent, env, seeds, (i) => o.onEvaluate?.('before', i + 1, seeds.length));
    const curve: CurvePoint[] = [];
    const rounds: RoundStats[] = [];
    const t1 = performance.now();
    let curveSeconds = 0;
    agent.training = true;
    for (let i = 0; i < o.episodes; i++) {
      // Training seeds follow the run's seed and stay below the held-out range (evaluate.ts HELD_OUT_BASE).
      const e = await runEpisode(agent, env, o.seed * 10_000_000 + i);
      o.onEpisode?.(e, i);
      if (e.round === null) continue;
      rounds.push(e.round);
      let point: CurvePoint | null = null;
      if ((o.curveEvery ?? 0) > 0 && rounds.length % o.curveEvery! === 0) {
        const c0 = performance.now();
        point = { round: rounds.length, episodes: i + 1, eval: await evaluateAgent(agent, env, curveSeeds) };
        agent.training = true;
        curve.push(point);
        curveSeconds += (performance.now() - c0) / 1000;
      }
      o.onRound?.(e.round, point);
    }
    const trainSeconds = (performance.now() - t1) / 1000 - curveSeconds;
    const after = await evaluateAgent(agent, env, seeds, (i) => o.onEvaluate?.('after', i + 1, seeds.length));
    const pairs = before.returns.map((b, i) => [b, after.returns[i]!] as const).filter(([b, a]) => !Number.isNaN(b) && !Number.isNaN(a));
    return {
      env: o.env,
      seed: o.seed,
      episodes: o.episodes,
      heldOut: o.heldOut,
      before,
      after,
      change: { meanReturn: meanEstimate(pairs.map(([b, a]) => a - b)), winRate: meanEstimate(pairs.map(([b, a]) => Number(a > 0) - Number(b > 0))) },
      baselines: Object.fromEntries(Object.entries(baselines).map(([k, p]) => [k, evaluatePolicy(env, p, seeds)])),
      rounds,
      curve,
      stats: { ...agent.stats },
      trainSeconds,
      seconds: (performance.now() - t0) / 1000,
    };
  } finally {
    await h.close();
  }
}
