// nice -n 10 node bench/gym-read-state.ts [episodes=320] [batch=16] [gate=200] [held=400] [model=DIR]
// A diagnostic for issue #16's learning bar: can the small LM, trained by Rein's rounds, make its choice depend on
// the state it is shown at all? Blackjack cut down to a contextual bandit with a clean signal: each episode is one
// decision from a dealt hand (the agent's usual observation text), rewarded +1 when it is basic strategy's action
// and −1 otherwise, so no luck of the deal and no later card blurs the credit. Everything else is the product's path
// (session.ts openGymHome on a fresh home, the SmallLmBlackjackAgent, rounds through the scheduler, the env gate).
// Printed: the share of `held` held-out hands that agree with basic strategy and the hit rate per kind of state,
// before training, every 5 rounds and after. A policy that reads the state hits on hard 4-11 and sticks on hard
// 17-21 (basic strategy's own rates are printed beside); one that does not moves every kind of state together.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BlackjackEnv, basicStrategy, type BlackjackAction, type BlackjackObs } from '../src-main/common/gym/blackjack.ts';
import type { Env, StepResult } from '../src-main/common/gym/env.ts';
import { heldOutSeeds } from '../src-main/common/gym/evaluate.ts';
import { emptyTable, HIT_BUCKETS, hitBucket as bucket, type HitTable } from '../src-main/node/gym/experiment.ts';
import { SmallLmBlackjackAgent } from '../src-main/node/gym/agents.ts';
import { evaluateAgent, runEpisode } from '../src-main/node/gym/runner.ts';
import { openGymHome } from '../src-main/node/gym/session.ts';
import { benchArgs } from './args.ts';

const args = benchArgs();
const num = args.num;
const o = { episodes: num('episodes', 320), batch: num('batch', 16), gate: num('gate', 200), held: num('held', 400) };


/** One decision per episode from a dealt blackjack hand: +1 when it is basic strategy's action, −1 otherwise (basic strategy draws nothing from its rng). */
class BasicStrategyBandit implements Env<BlackjackObs, BlackjackAction> {
  readonly name = 'blackjack-bandit';
  readonly actions: readonly BlackjackAction[] = ['stick', 'hit'];
  table = emptyTable();
  private readonly deal = new BlackjackEnv();
  private obs: BlackjackObs | null = null;
  reset(seed: number): BlackjackObs {
    return (this.obs = this.deal.reset(seed));
  }
  step(action: BlackjackAction): StepResult<BlackjackObs> {
    const s = this.obs!;
    const b = this.table[bucket(s)];
    b.steps++;
    if (action === 'hit') b.hits++;
    return { obs: s, reward: action === basicStrategy(s, Math.random) ? 1 : -1, terminated: true, truncated: false, info: {} };
  }
}

const pct = (x: number): string => `${(100 * x).toFixed(0)}%`;
const rates = (t: HitTable): string => HIT_BUCKETS.map((k) => `${k} ${t[k].steps === 0 ? '-' : pct(t[k].hits / t[k].steps)}`).join(', ');

const root = mkdtempSync(path.join(os.tmpdir(), 'rein-gym-read-'));
const h = await openGymHome(path.join(root, 'home'), args.has('model') ? { modelDir: path.resolve(args.str('model', '')) } : {});
try {
  const env = new BasicStrategyBandit();
  const agent = new SmallLmBlackjackAgent(h.session, { batchEpisodes: o.batch, seed: 1 });
  h.session.gateOn(agent, env, { episodes: o.gate });
  const seeds = heldOutSeeds(o.held);
  const basic = emptyTable();
  for (const seed of seeds) {
    const s = new BlackjackEnv().reset(seed);
    basic[bucket(s)].steps++;
    if (basicStrategy(s, Math.random) === 'hit') basic[bucket(s)].hits++;
  }
  console.log(`gym read-state bench: ${o.episodes} one-decision episodes in batches of ${o.batch}, env gate of ${o.gate}, ${o.held} held-out hands; observation "${agent.formatObservation({ playerSum: 15, dealerCard: 10, usableAce: false })}"`);
  console.log(`basic strategy's hit rate per state: ${rates(basic)}`);
  const evaluate = async (label: string): Promise<void> => {
    env.table = emptyTable();
    const e = await evaluateAgent(agent, env, seeds);
    console.log(`${label}: agrees with basic strategy on ${pct(e.wins.rate)} [${pct(e.wins.ci[0])}, ${pct(e.wins.ci[1])}], unreadable ${e.invalid}/${e.steps}; hit rate per state: ${rates(env.table)}`);
    agent.training = true;
  };
  await evaluate('untrained');
  const t0 = performance.now();
  for (let i = 0; i < o.episodes; i++) {
    const r = (await runEpisode(agent, env, 10_000_000 + i)).round;
    if (r === null) continue;
    console.log(`  round ${r.runId}: v${r.version ?? '-'} ${r.status}, ${r.trained} trained, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    if (r.runId % 5 === 0) await evaluate(`  after ${i + 1} episodes`);
  }
  await evaluate('trained');
} finally {
  await h.close();
  rmSync(root, { recursive: true, force: true });
}
