// node bench/blackjack-values.ts [hands=20000] [held=2000]
// How much the blackjack bench's reward says about each kind of state (issue #16): for policies that hit with a fixed
// probability per kind of state (HIT_BUCKETS), the mean return of hitting and of sticking at the first decision in
// each kind (Q(hit), Q(stick): every later decision follows the policy), from `hands` deals that start there; and the
// win rate of simple policies on the bench's held-out hands. No model: the env and the policies only.
// It also prints how many training episodes the policy gradient needs before it sees hitting's value in each kind:
// with N decisions in a kind, hit with probability p and a return of standard deviation σ, the summed score-function
// term Σ G·(1[hit] − p) has mean N·p(1−p)·Δ (Δ = Q(hit) − Q(stick)) and standard deviation about σ·√(N·p(1−p)), so
// its sign is right at 2 standard deviations from N·p(1−p) ≥ 4σ²/Δ² on; divided by the kind's decisions per episode
// under the policy, that is episodes. A baseline lowers σ (the group baseline takes out the deal's luck), not Δ.
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

/** Mean and variance of the return of `first` at the first decision of deals that start in `bucket`, then hitting with `pHit` per kind. */
function q(pHit: Record<Bucket, number>, bucket: Bucket, first: BlackjackAction): { mean: number; variance: number } {
  const rng = new Rng(7);
  let sum = 0;
  let sq = 0;
  let n = 0;
  for (let seed = 0; n < HANDS; seed++) {
    let o = env.reset(seed);
    if (hitBucket(o) !== bucket) continue;
    let a = first;
    let g = 0;
    for (;;) {
      const s = env.step(a);
      g += s.reward;
      if (s.terminated) break;
      o = s.obs;
      a = rng.uniform() < pHit[hitBucket(o)] ? 'hit' : 'stick';
    }
    sum += g;
    sq += g * g;
    n++;
  }
  const mean = sum / n;
  return { mean, variance: sq / n - mean * mean };
}

/** Decisions per episode in each kind of state when every decision hits with `pHit` per kind. */
function visits(pHit: Record<Bucket, number>): Record<Bucket, number> {
  const rng = new Rng(11);
  const count = Object.fromEntries(HIT_BUCKETS.map((b) => [b, 0])) as Record<Bucket, number>;
  for (let seed = 0; seed < HANDS; seed++) {
    let o = env.reset(seed);
    for (;;) {
      const b = hitBucket(o);
      count[b]++;
      const s = env.step(rng.uniform() < pHit[b] ? 'hit' : 'stick');
      if (s.terminated) break;
      o = s.obs;
    }
  }
  for (const b of HIT_BUCKETS) count[b] /= HANDS;
  return count;
}

const POLICIES: Record<string, Record<Bucket, number>> = {
  'the untrained small LM (the bench)': { 'hard 4-11': 0.27, 'hard 12-16': 0.56, 'hard 17-21': 0.42, soft: 0.33 },
  'hit half the time': { 'hard 4-11': 0.5, 'hard 12-16': 0.5, 'hard 17-21': 0.5, soft: 0.5 },
  'hit 10% everywhere (trained runs)': { 'hard 4-11': 0.1, 'hard 12-16': 0.1, 'hard 17-21': 0.1, soft: 0.1 },
};
console.log(`Q(hit) and Q(stick) at the first decision, from ${HANDS} deals per kind of state:`);
const needed: string[] = [];
for (const [name, p] of Object.entries(POLICIES)) {
  const perEpisode = visits(p);
  const cells = HIT_BUCKETS.map((b) => {
    const h = q(p, b, 'hit');
    const s = q(p, b, 'stick');
    const delta = h.mean - s.mean;
    const pb = p[b];
    const variance = pb * h.variance + (1 - pb) * s.variance;
    const decisions = (4 * variance) / (delta * delta * pb * (1 - pb));
    needed.push(`  ${name}, ${b}: ${perEpisode[b].toFixed(2)} decisions per episode, σ ${Math.sqrt(variance).toFixed(2)}, ${Math.round(decisions)} decisions = ${Math.round(decisions / perEpisode[b])} episodes`);
    return `${b} ${h.mean.toFixed(3)} / ${s.mean.toFixed(3)} (hit − stick ${(delta >= 0 ? '+' : '') + delta.toFixed(3)})`;
  });
  console.log(`  ${name}: ${cells.join('; ')}`);
}
console.log("training episodes before the policy gradient's hit/stick term in a kind has the sign of Δ at 2 standard deviations:");
for (const l of needed) console.log(l);

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
