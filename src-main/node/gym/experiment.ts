// What `rein gym <env>` and bench/gym.ts run: a fresh Rein home on the small LM (session.ts openGymHome), the
// untrained agent evaluated on held-out seeds, N training episodes (a round each time a batch of episodes fills,
// through the scheduler and the gate), a curve point on the first `curveHands` held-out seeds after every
// `curveEvery` rounds, and the trained agent evaluated on the same held-out seeds. For blackjack, basic strategy and a
// random policy play the same seeds.
import { BlackjackEnv, basicStrategy, randomBlackjack, type BlackjackAction, type BlackjackObs, type BlackjackOptions } from '../../common/gym/blackjack.ts';
import type { Env, Policy, StepResult } from '../../common/gym/env.ts';
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
  /** Episodes played in a row from each training seed, with a leave-one-out group baseline (Agent groupSize; default 1). */
  group?: number;
  /** Held-out episodes evaluated before and after. */
  heldOut: number;
  seed: number;
  /** Blackjack's rules. */
  blackjack?: BlackjackOptions;
  invalidPenalty?: number;
  modelDir?: string;
  /** Settings of the fresh home beside the gym's (e.g. a custom training preset), for experiments. */
  settings?: Record<string, unknown>;
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
  /**
   * Blackjack: how often the agent hit (an unreadable reply plays stick) in each kind of state during the held-out
   * evaluations before and after training: hard totals 4-11, 12-16 and 17-21, and soft totals.
   */
  hits?: { before: HitTable; after: HitTable };
  trainSeconds: number;
  seconds: number;
}

export const HIT_BUCKETS = ['hard 4-11', 'hard 12-16', 'hard 17-21', 'soft'] as const;
export type HitTable = Record<(typeof HIT_BUCKETS)[number], { hits: number; steps: number }>;

export const hitBucket = (o: BlackjackObs): (typeof HIT_BUCKETS)[number] => (o.usableAce ? 'soft' : o.playerSum <= 11 ? 'hard 4-11' : o.playerSum <= 16 ? 'hard 12-16' : 'hard 17-21');

/** Blackjack with a tally of the actions played per kind of state, while `table` is set. */
class TalliedBlackjack extends BlackjackEnv {
  table: HitTable | null = null;
  private last: BlackjackObs | null = null;
  override reset(seed: number): BlackjackObs {
    return (this.last = super.reset(seed));
  }
  override step(action: BlackjackAction): StepResult<BlackjackObs> {
    if (this.table !== null && this.last !== null) {
      const b = this.table[hitBucket(this.last)];
      b.steps++;
      if (action === 'hit') b.hits++;
    }
    const r = super.step(action);
    this.last = r.obs;
    return r;
  }
}

export const emptyTable = (): HitTable => Object.fromEntries(HIT_BUCKETS.map((k) => [k, { hits: 0, steps: 0 }])) as HitTable;

function setup(name: GymEnvName, backend: AgentBackend, o: GymOptions): { env: Env<unknown, unknown>; agent: Agent<unknown, unknown>; baselines: Record<string, Policy<unknown, unknown>> } {
  const common = { batchEpisodes: o.batchEpisodes, groupSize: o.group ?? 1, seed: o.seed, ...(o.invalidPenalty === undefined ? {} : { invalidPenalty: o.invalidPenalty }) };
  if (name === 'blackjack') {
    const env = new TalliedBlackjack(o.blackjack ?? {});
    return { env: env as Env<unknown, unknown>, agent: new SmallLmBlackjackAgent(backend, common) as Agent<unknown, unknown>, baselines: { basic: basicStrategy, random: randomBlackjack } as Record<string, Policy<unknown, unknown>> };
  }
  const env = new FrozenLakeEnv();
  return { env: env as Env<unknown, unknown>, agent: new SmallLmFrozenLakeAgent(backend, common) as Agent<unknown, unknown>, baselines: { random: randomFrozenLake } as Record<string, Policy<unknown, unknown>> };
}

export async function runGym(o: GymOptions): Promise<GymResult> {
  const t0 = performance.now();
  const h = await openGymHome(o.home, { modelDir: o.modelDir, log: o.log, ...(o.settings === undefined ? {} : { settings: o.settings }) });
  try {
    const { env, agent, baselines } = setup(o.env, h.session, o);
    h.session.gateOn(agent, env, { episodes: o.gateEpisodes ?? GATE_EPISODES });
    const seeds = heldOutSeeds(o.heldOut);
    const curveSeeds = seeds.slice(0, o.curveHands ?? Math.min(o.heldOut, 400));
    const tallied = env instanceof TalliedBlackjack ? env : null;
    const hits = { before: emptyTable(), after: emptyTable() };
    if (tallied !== null) tallied.table = hits.before;
    const before = await evaluateAgent(agent, env, seeds, (i) => o.onEvaluate?.('before', i + 1, seeds.length));
    if (tallied !== null) tallied.table = null;
    const curve: CurvePoint[] = [];
    const rounds: RoundStats[] = [];
    const t1 = performance.now();
    let curveSeconds = 0;
    agent.training = true;
    for (let i = 0; i < o.episodes; i++) {
      // Training seeds follow the run's seed and stay below the held-out range (evaluate.ts HELD_OUT_BASE).
      // Each seed is played `group` times in a row (the agent's group baseline).
      const e = await runEpisode(agent, env, o.seed * 10_000_000 + Math.floor(i / (o.group ?? 1)));
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
    if (tallied !== null) tallied.table = hits.after;
    const after = await evaluateAgent(agent, env, seeds, (i) => o.onEvaluate?.('after', i + 1, seeds.length));
    if (tallied !== null) tallied.table = null;
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
      ...(tallied === null ? {} : { hits }),
      trainSeconds,
      seconds: (performance.now() - t0) / 1000,
    };
  } finally {
    await h.close();
  }
}
