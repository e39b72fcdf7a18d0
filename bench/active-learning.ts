// nice -n 10 node bench/active-learning.ts [rules=apology] [seeds=1,2] [rounds=5] [n=32] [held=128]
// Active learning against asking every time, on the small LM through the product (the learning loop of
// src-main/node/training/small-lm/learning.ts, what bench/learning.ts runs): per rule and seed, two fresh Rein homes
// with the same seeds, one with reward.ask=always and one with reward.ask=unsure at its default margin. Each round
// samples n answers; with unsure, the core's rewardAsk verb (the reward model retrained by the worker after every
// round) decides which the style rule is asked to rate, as the popup would; the rest stay unrated. The loop stops at
// the learning issue's bar: a live version with a held-out preferred-style rate >= 80%.
// Printed side by side per seed: the ratings asked until the bar was reached (or "not reached" with the total asked),
// and per round the asked count, the held-out rate and the version's status.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SETTINGS } from '../src-main/common/config.ts';
import { STYLES, type StyleName } from '../src-main/node/demo/corpus.ts';
import { runLearning, type LearningResult } from '../src-main/node/demo/learning.ts';
import { benchArgs } from './args.ts';

const args = benchArgs();
const num = args.num;
const rules = args.str('rules', 'apology').split(',') as StyleName[];
for (const r of rules) if (!STYLES.some((s) => s.name === r)) throw new Error(`rules: ${r} is not one of ${STYLES.map((s) => s.name).join(', ')}`);
const seeds = args.str('seeds', '1,2').split(',').map(Number);
const ROUNDS = num('rounds', 5);
const N = num('n', 32);
const HELD = num('held', 128);
const BAR = 0.8;

interface Outcome {
  asked: number;
  reached: boolean;
  rounds: string[];
}

function outcome(r: LearningResult): Outcome {
  let asked = 0;
  const rounds: string[] = [];
  for (const p of r.rounds) {
    asked += p.rated;
    rounds.push(`r${p.round}: asked ${p.rated}/${p.sampled}, ${p.rate.toFixed(2)} ${p.status}`);
    if (p.status === 'active' && p.rate >= BAR) return { asked, reached: true, rounds };
  }
  return { asked, reached: false, rounds };
}

const root = mkdtempSync(path.join(os.tmpdir(), 'rein-active-'));
const t0 = performance.now();
try {
  console.log(`active learning on the small LM, balanced preset: rules ${rules.join(', ')}; seeds ${seeds.join(', ')}; up to ${ROUNDS} rounds of ${N} sampled answers; ${HELD} held-out prompts; unsure = |p - 0.5| < ${SETTINGS['reward.unsureMargin'].default}`);
  for (const rule of rules) {
    const rows: { seed: number; always: Outcome; unsure: Outcome; before: number }[] = [];
    for (const seed of seeds) {
      const run = async (ask: 'always' | 'unsure'): Promise<LearningResult> =>
        runLearning({
          root: path.join(root, ask),
          rule,
          seed,
          rounds: ROUNDS,
          n: N,
          held: HELD,
          teacher: 0,
          ask,
          stopAt: BAR,
          onRound: (p) => console.log(`${rule} seed ${seed} ${ask} round ${p.round}: asked ${p.rated} of ${p.sampled} (${p.good} good); held-out ${p.rate.toFixed(2)} [${p.ci[0].toFixed(2)}, ${p.ci[1].toFixed(2)}]; v${p.version ?? '-'} ${p.status}${p.status === 'active' ? '' : ` (${p.reason})`}; ${p.seconds.toFixed(0)} s`),
        });
      const a = await run('always');
      const u = await run('unsure');
      rows.push({ seed, always: outcome(a), unsure: outcome(u), before: a.before.rate });
    }
    const cell = (o: Outcome): string => (o.reached ? `${o.asked}` : `not reached (${o.asked} asked)`);
    console.log(`\n${rule}: ratings asked until a live version's held-out rate >= ${BAR} (same seeds)`);
    console.log('| seed | before | ask always | ask when unsure |');
    console.log('|---|---|---|---|');
    for (const r of rows) console.log(`| ${r.seed} | ${r.before.toFixed(2)} | ${cell(r.always)} | ${cell(r.unsure)} |`);
    for (const r of rows) console.log(`seed ${r.seed} always: ${r.always.rounds.join('; ')}\nseed ${r.seed} unsure: ${r.unsure.rounds.join('; ')}`);
    const fewer = rows.filter((r) => r.unsure.reached && (!r.always.reached || r.unsure.asked < r.always.asked)).length;
    console.log(`${rule}: active learning reached the bar with fewer asked ratings on ${fewer} of ${rows.length} seeds`);
  }
  console.log(`total ${((performance.now() - t0) / 60_000).toFixed(1)} min`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
