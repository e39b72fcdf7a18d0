// nice -n 10 node bench/gym.ts [env=blackjack] [episodes=480] [batch=16] [held=2000] [seed=1] [curve=5] [curveHands=400] [gate=400] [group=1] [model=DIR] [custom=JSON]
// Issue #16's learning bar through the product (src-main/node/gym/experiment.ts, what `rein gym` runs): a fresh Rein
// home on the small LM (or the model in DIR) with the balanced preset unchanged; the untrained agent plays `held` held-out hands; then
// `episodes` training episodes, a round through the scheduler, the worker and the gate each time `batch` episodes
// wait; a curve point on the first `curveHands` held-out hands every `curve` rounds; then the trained agent plays the
// same held-out hands, and so do basic strategy and a random policy. Printed: win rates with 95% Wilson intervals,
// mean returns, every round's version status, unreadable replies, episodes and wall time.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GYM_ENVS, HIT_BUCKETS, runGym, type GymEnvName, type HitTable } from '../src-main/node/gym/experiment.ts';
import type { Evaluation } from '../src-main/common/gym/evaluate.ts';
import { benchArgs } from './args.ts';

const args = benchArgs();
const num = args.num;
const env = args.str('env', 'blackjack') as GymEnvName;
if (!GYM_ENVS.includes(env)) throw new Error(`env: ${env} is not one of ${GYM_ENVS.join(', ')}`);
const modelDir = args.has('model') ? path.resolve(args.str('model', '')) : undefined;
const custom = args.has('custom') ? args.str('custom', '') : undefined;

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const line = (name: string, e: Evaluation): string =>
  `${name.padEnd(10)} win ${pct(e.wins.rate)} [${pct(e.wins.ci[0])}, ${pct(e.wins.ci[1])}] (${e.wins.k}/${e.wins.n}), mean return ${e.meanReturn.mean.toFixed(3)} [${e.meanReturn.ci[0].toFixed(3)}, ${e.meanReturn.ci[1].toFixed(3)}]`;

const root = mkdtempSync(path.join(os.tmpdir(), 'rein-gym-bench-'));
try {
  const o = { episodes: num('episodes', 480), batch: num('batch', 16), held: num('held', 2000), seed: num('seed', 1), curve: num('curve', 5), curveHands: num('curveHands', 400), gate: num('gate', 400), group: num('group', 1) };
  console.log(`gym bench: ${env}, ${modelDir !== undefined ? `the model in ${modelDir}` : 'small LM'}, ${custom !== undefined ? `custom preset ${custom}` : 'balanced preset'}; ${o.episodes} training episodes in batches of ${o.batch}; ${o.held} held-out episodes; seed ${o.seed}; ${o.group > 1 ? `each seed played ${o.group} times (group baseline); ` : ''}${o.gate === 0 ? 'the rating gate' : `an env gate of ${o.gate} held-out episodes per round`}`);
  const r = await runGym({
    env,
    home: path.join(root, 'home'),
    ...(modelDir !== undefined ? { modelDir } : {}),
    // A custom training preset (balanced with these fields replaced), e.g. custom='{"beta":0.05}'.
    ...(custom !== undefined ? { settings: { 'training.preset': 'custom', 'training.custom': JSON.parse(custom) as unknown } } : {}),
    episodes: o.episodes,
    batchEpisodes: o.batch,
    heldOut: o.held,
    seed: o.seed,
    curveEvery: o.curve,
    curveHands: o.curveHands,
    gateEpisodes: o.gate,
    group: o.group,
    onRound: (x, c) =>
      console.log(
        `  round ${x.runId}: v${x.version ?? '-'} ${x.status}, ${x.trained} trained, ` +
          (x.envGate == null
            ? `acc ${x.accuracy?.toFixed(3) ?? '-'}, KL ${x.kl?.toFixed(4) ?? '-'} / ${x.klBudget ?? '-'}`
            : `env gate: return ${x.envGate.candidate.toFixed(3)} vs parent ${x.envGate.parent.toFixed(3)} on ${x.envGate.episodes}, change ${x.envGate.change.mean.toFixed(3)} [${x.envGate.change.ci[0].toFixed(3)}, ${x.envGate.change.ci[1].toFixed(3)}], KL ${x.kl?.toFixed(4) ?? '-'} over ${x.envGate.klTokens} tokens`) +
          `, ${x.seconds.toFixed(0)} s` +
          (c === null ? '' : `; curve after ${c.episodes} episodes: win ${pct(c.eval.wins.rate)} [${pct(c.eval.wins.ci[0])}, ${pct(c.eval.wins.ci[1])}] on ${c.eval.episodes}, unreadable ${c.eval.invalid}/${c.eval.steps}`) +
          (x.status === 'active' || x.reason === null ? '' : ` (${x.reason})`),
      ),
  });
  console.log(line('untrained', r.before) + `, unreadable ${r.before.invalid}/${r.before.steps}`);
  console.log(line('trained', r.after) + `, unreadable ${r.after.invalid}/${r.after.steps}`);
  for (const [k, e] of Object.entries(r.baselines)) console.log(line(k, e));
  if (r.hits !== undefined) {
    const t = (h: HitTable): string => HIT_BUCKETS.map((k) => `${k} ${h[k].steps === 0 ? '-' : pct(h[k].hits / h[k].steps)} of ${h[k].steps}`).join(', ');
    console.log(`hit rate per state, untrained: ${t(r.hits.before)}`);
    console.log(`hit rate per state, trained:   ${t(r.hits.after)}`);
  }
  const accepted = r.rounds.filter((x) => x.status === 'active').length;
  console.log(`${r.episodes} training episodes (${r.stats.steps} agent steps in all, ${r.stats.invalid} unreadable), ${r.rounds.length} rounds (${accepted} accepted); training ${r.trainSeconds.toFixed(0)} s, total ${r.seconds.toFixed(0)} s wall`);
  if (r.baselines.basic !== undefined) {
    const gap = r.baselines.basic.wins.rate - r.after.wins.rate;
    console.log(`bar: trained within 3 points of basic strategy: ${gap <= 0.03 ? 'met' : 'NOT met'} (gap ${(100 * gap).toFixed(1)} points; from ${pct(r.before.wins.rate)} to ${pct(r.after.wins.rate)})`);
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
