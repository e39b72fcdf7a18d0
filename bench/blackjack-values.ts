// node bench/blackjack-values.ts [hands=20000] [held=2000]
// How much the blackjack bench's reward says about each kind of state (issue #16): for policies that hit with a fixed
// probability per kind of state (HIT_BUCKETS), the mean return of hitting and of sticking at the first decision in
// each kind (Q(hit), Q(stick): every later decision follows the policy), from `hands` deals that start there; and the
// win rate of simple policies on the bench's held-out hands. No model: the env and the policies only.
import { BlackjackEnv, basicStrategy, type BlackjackAction, type BlackjackObs } from '../src-main/common/gym/blackjack.ts';
import { Rng } from '../src-main/common/engine/rng.ts';
import { evaluatePolicy, heldOutSeeds } from '../src-main/common/gym/evaluate.ts';
import { HIT_BUCKETS, hitBucket } from '../src-main/node/gym/experiment.ts';
import { benchArgs } from './args.ts';

type Bucket = (typeof HIT_BUCKETS)[number];
const args = benchArgs();
const HANDS = args.num('hands', 20_000);
const HELD = args.num('held', 2000);
const env = new BlackjackEnv();

/** Mean return of `first` at the first decision of deals that start in `bucket`, then hitting with `pHit` per kind. */
function q(pHit: Record<Bucket, number>, bucket: Bucket, first: BlackjackAction): number {
  const rng = new Rng(7);
  let sum = 0;
  let n = 0;
  for (let seed = 0; n < HANDS; seed++) {
    let o = env.reset(seed);
    if (hitBucket(o) !== bucket) continue;
    let a = first;
    for (;;) {
      const s = env.step(a);
      sum += s.reward;
      if (s.terminated) break;
      o = s.obs;
      a = rng.uniform() < pHit[hitBucket(o)] ? 'hit' : 'stick';
    }
    n++;
  }
  return sum / n;
}

const POLICIES: Record<string, Record<Bucket, number>> = {
  'the untrained small LM (the bench)': { 'hard 4-11': 0.27, 'hard 12-16': 0.56, 'hard 17-21': 0.42, soft: 0.33 },
  'hit half the time': { 'hard 4-11': 0.5, 'hard 12-16': 0.5, 'hard 17-21': 0.5, soft: 0.5 },
  'hit 10% everywhere (trained runs)': { 'hard 4-11': 0.1, 'hard 12-16': 0.1, 'hard 17-21': 0.1, soft: 0.1 },
};
console.log(`Q(hit) and Q(stick) at the first decision, from ${HANDS} deals per kind of state:`);
for (const [name, p] of Object.entries(POLICIES)) {
  const cells = HIT_BUCKETS.map((b) => {
    const h = q(p, b, 'hit');
    const s = q(p, b, 'stick');
    return `${b} ${h.toFixed(3)} / ${s.toFixed(3)} (hit − stick ${(h - s >= 0 ? '+' : '') + (h - s).toFixed(3)})`;
  });
  console.log(`  ${name}: ${cells.join('; ')}`);
}

const seeds = heldOutSeeds(HELD);
const rule = (hitWhen: (o: BlackjackObs) => boolean) => (o: BlackjackObs): BlackjackAction => (hitWhen(o) ? 'hit' : 'stick');
const FIXED: Record<string, (o: BlackjackObs, rng: () => number) => BlackjackAction> = {
  'basic strategy': basicStrategy,
  'always stick': () => 'stick',
  'hit at hard 11 or less': rule((o) => !o.usableAce && o.playerSum <= 11),
  'hit when no card can bust you (hard 11 or less, soft 17 or less)': rule((o) => (o.usableAce ? o.playerSum <= 17 : o.playerSum <= 11)),
  'hit half the time at hard 11 or less, else stick': (o, r) => (!o.usableAce && o.playerSum <= 11 && r() < 0.5 ? 'hit' : 'stick'),
};
console.log(`win rate on the bench's ${HELD} held-out hands:`);
for (const [name, p] of Object.entries(FIXED)) console.log(`  ${name}: ${(100 * evaluatePolicy(env, p, seeds).wins.rate).toFixed(1)}%`);
