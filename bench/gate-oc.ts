// nice -n 10 node bench/gate-oc.ts [trials=20000] [seed=1]
// The eval gate's operating characteristic (common/training/gate.ts), simulated through the real gateDecision at the
// default round size (training.threshold ratings, the balanced preset's held-out share and gateAnswers;
// common/training/gate-oc.ts states the model): P(accept), P(reject) and P(undecided) against the change in the rate
// of good answers users get, with a perfect judge and with judges right 90% and 80% of the time. The bars:
// P(accept | no better) ≤ 5%, P(accept | +20 points) ≥ 80%.
import { defaultRoundScenario, simulateGateOc } from '../src-main/common/training/gate-oc.ts';
import { benchArgs } from './args.ts';

const args = benchArgs();
const trials = args.num('trials', 20_000);
const seed = args.num('seed', 1);
const d = defaultRoundScenario(0);
console.log(`gate OC: ${d.prompts} held-out prompts × ${d.samples} answers a side (the default round), one-sided sign test at 0.05; ${trials} simulated rounds a row`);
console.log('lift   judge  parent rates  P(accept)  P(reject)  P(undecided)');
const pct = (x: number): string => `${(100 * x).toFixed(1)}%`.padStart(9);
for (const judgeAccuracy of [1, 0.9, 0.8]) {
  for (const lift of [-0.2, -0.1, 0, 0.05, 0.1, 0.2, 0.3]) {
    const rates = lift < 0 ? { rateLow: -lift, rateHigh: 1 } : { rateLow: 0, rateHigh: 1 - lift };
    const r = simulateGateOc({ ...d, ...rates, lift, judgeAccuracy, trials, seed });
    const l = `${lift >= 0 ? '+' : ''}${lift.toFixed(2)}`;
    console.log(`${l.padEnd(6)} ${judgeAccuracy.toFixed(2).padEnd(6)} [${rates.rateLow.toFixed(2)}, ${rates.rateHigh.toFixed(2)}]  ${pct(r.accept)}  ${pct(r.reject)}  ${pct(r.undecided)}`);
  }
}
