// The eval gate's arithmetic (ARCHITECTURE §4); node/training/gate.ts measures, this file decides.
//
// What is scored: the round's held-out bank. A seeded random share (preset heldoutFraction, about 20%) of the pending
// ratings that were never held out joins it; a rating stays in it for heldoutRounds rounds (the bank grows while
// rounds come out undecided) and then trains like any pending rating (data.ts selectRound), so no rating is held out
// for more than heldoutRounds rounds. Older ratings that no version of the active lineage trained on join it too.
// Neither the candidate nor its parent trained on any of them.
//
// What is compared is this round's change: the candidate against its PARENT (the version the round started from, or
// the base) on the same items, never against the base.
//
// What users get (the decision): on each held-out prompt both sides sample `samples` answers, pair j of both sides
// with the same sampling seed (common random numbers: where the two policies agree the answers are identical and the
// pair is a tie). Each answer is scored by the judge: the reward model's p(good) when one exists for this base, else
// the held-out rating's direction d ∈ {+1, −1} times the answer's similarity to the rated answer (node/training/
// gate.ts answerSimilarity). A pair is a win when the candidate's answer scores above the parent's, a loss when below,
// a tie when equal. Under H0 "the candidate's answers are no better than its parent's on these prompts" a discordant
// pair is a win with probability ≤ ½ (pairs with different seeds are independent given the prompt; with unequal
// per-prompt rates the win count is Poisson-binomial with mean ≤ n/2, less spread than Binomial(n, ½)), so the exact
// one-sided sign test (Dixon & Mood 1946), P(Binomial(wins + losses, ½) ≥ wins), is a valid p-value. The inference
// is conditional on the held-out prompts: a random share of the user's own prompts, growing with the bank.
//
// The rule, in order (alpha = GATE_ALPHA, one-sided):
//   1. reject when the KL to the parent exceeds the budget (it stands in for harm the judge cannot see);
//   2. accept when the sign test shows the candidate better (superiority: p ≤ alpha);
//   3. reject when the mirrored test shows it worse (P(Binomial(n, ½) ≥ losses) ≤ alpha);
//   4. otherwise undecided: the candidate is not activated, its round's ratings stay pending and the held-out bank
//      keeps its items for the next round, which judges a candidate trained on more ratings on more items.
// Non-inferiority is not a route to acceptance: a candidate no better than its parent must pass with probability
// ≤ alpha. The operating characteristic of this rule at the default round size is simulated through this function
// (common/training/gate-oc.ts, bench/gate-oc.ts) and asserted in gate.test.ts.
//
// Also measured and shown, not deciding: the preference accuracy of the log-ratio to the parent, mean_t(π_cand −
// π_parent) over the held-out response's trained tokens, against the sign of the training target (the MIS-PO
// advantage A = r − baseline, A = 0 unscored, or KTO's label); it says whether this round moved the rated answers the
// way training pushed them, which is not what a user sees.
//
// KL: the mean per-token k3 (Schulman 2020, "Approximating KL divergence": k3 = (ρ − 1) − log ρ, ρ = π_cand/π_parent
// per token) over the held-out responses' trained tokens, of the candidate against its parent. The held-out tokens
// were sampled by μ, the parent's side (the base or a version of the lineage), so it estimates KL(parent ‖ candidate)
// without bias when μ is the parent. It is a per-round budget: each round may move this far from where it started.
// `klBase` is the same against the base: the lineage's cumulative drift, shown, not gated.

/** The one-sided level of the gate's sign tests: P(accept | candidate no better than its parent) ≤ GATE_ALPHA. */
export const GATE_ALPHA = 0.05;

/** The gate's outcomes: `undecided` activates nothing and carries the held-out bank forward. */
export type GateVerdict = 'accept' | 'reject' | 'undecided';

export interface GateDecision {
  accept: boolean;
  verdict: GateVerdict;
  reason: string;
}

/** The paired comparison of answers sampled from the candidate and its parent on the held-out prompts. */
export interface AnswerComparison {
  /** What scored the answers: the reward model's p(good), or the held-out rating's direction × similarity. */
  judge: 'reward-model' | 'direction';
  /** Held-out prompts sampled, and answers per prompt per side. */
  prompts: number;
  samples: number;
  /** Pairs (same prompt, same seed) where the candidate's answer scored above, below, or equal to the parent's. */
  wins: number;
  losses: number;
  ties: number;
  /** Mean score of the candidate's and of the parent's answers. */
  candidate: number;
  parent: number;
}

export interface GateMetrics {
  /** The gate kind: held-out rated turns (absent on rounds recorded before kinds), or held-out env episodes (`env`). */
  kind?: 'ratings' | 'env';
  /** The env gate's measurements (kind `env`; the accuracy fields are then empty, and kl/klTokens are its). */
  env?: EnvGateMetrics;
  /** Held-out turns with a direction (MIS-PO A ≠ 0, or a KTO label). */
  heldout: number;
  /** Held-out turns whose log-ratio to the parent moved the way training would push them, out of `heldout`. */
  correct: number;
  accuracy: number | null;
  /** 95% Wilson interval of the accuracy. */
  accuracyCi: [number, number] | null;
  /**
   * Rounds recorded before the answers comparison: the parent adapter's accuracy against the base on the same turns.
   * Null since the accuracy is of this round's change (the log-ratio to the parent).
   */
  previousAccuracy: number | null;
  /** Rounds recorded before the answers comparison: the paired difference's normal 95% CI. Null since. */
  pairedCi: [number, number] | null;
  /** The answers both sides sampled on the held-out prompts, compared pair by pair: what decides (absent on older rounds). */
  answers?: AnswerComparison | null;
  /** Mean per-token k3 of the candidate against its parent, in nats, over `klTokens` held-out response tokens. */
  kl: number;
  /** The same against the base: the lineage's cumulative drift. */
  klBase: number;
  klTokens: number;
  klBudget: number;
}

/** True when the log-ratio moved in the target's direction (a tie counts as wrong: the adapter learned nothing there). */
export function preferenceCorrect(logRatio: number, direction: 1 | -1): boolean {
  return direction > 0 ? logRatio > 0 : logRatio < 0;
}

/** k3 = (ρ − 1) − log ρ for log ρ = `logRatio` (Schulman 2020): ≥ 0, unbiased for KL(q ‖ p) when tokens come from q, ρ = p/q. */
export function k3(logRatio: number): number {
  return Math.expm1(logRatio) - logRatio;
}

/** KL(p ‖ q) of two log-probability vectors over the same vocabulary. */
export function klDivergence(logp: ArrayLike<number>, logq: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < logp.length; i++) {
    const lp = logp[i]!;
    if (lp === Number.NEGATIVE_INFINITY) continue;
    s += Math.exp(lp) * (lp - logq[i]!);
  }
  return Math.max(0, s);
}

/** The Wilson score interval (Wilson 1927) for k successes in n trials at 95% (z = 1.96). */
export function wilson(k: number, n: number, z = 1.96): [number, number] {
  if (n === 0) return [0, 1];
  const p = k / n;
  const d = 1 + (z * z) / n;
  const c = (p + (z * z) / (2 * n)) / d;
  const h = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / d;
  return [Math.max(0, c - h), Math.min(1, c + h)];
}

/**
 * P(X ≥ k) for X ~ Binomial(n, ½): the exact one-sided sign test's p-value (Dixon & Mood 1946). Summed in log space
 * so that n in the thousands neither underflows nor loses the tail.
 */
export function signTestP(k: number, n: number): number {
  if (!Number.isInteger(k) || !Number.isInteger(n) || n < 0) throw new RangeError(`signTestP: k = ${k}, n = ${n} must be integers with n ≥ 0`);
  if (k <= 0) return 1;
  if (k > n) return 0;
  let logC = 0; // log C(n, i), from i = 0
  const terms: number[] = [];
  for (let i = 0; i <= n; i++) {
    if (i >= k) terms.push(logC - n * Math.LN2);
    logC += Math.log(n - i) - Math.log(i + 1);
  }
  const m = Math.max(...terms);
  return Math.min(1, Math.exp(m) * terms.reduce((s, t) => s + Math.exp(t - m), 0));
}

export function gateDecision(m: GateMetrics, alpha = GATE_ALPHA): GateDecision {
  const kl = `KL to the parent ${m.kl.toFixed(4)} nats/token over ${m.klTokens} tokens`;
  const budget = Number(m.klBudget.toPrecision(3));
  if (!(m.kl <= m.klBudget)) return { accept: false, verdict: 'reject', reason: `${kl} exceeds the preset's budget ${budget}` };
  const a = m.answers ?? null;
  if (a === null || a.prompts === 0) {
    return { accept: false, verdict: 'undecided', reason: 'undecided: no held-out prompt to sample the candidate and its parent on; the held-out ratings wait for the next round' };
  }
  const n = a.wins + a.losses;
  const judge = a.judge === 'reward-model' ? "the reward model's score" : "the held-out ratings' direction";
  const pairs = `${a.prompts} held-out prompts × ${a.samples} answers, judged by ${judge}: the candidate's answer better in ${a.wins} pairs, worse in ${a.losses}, the same in ${a.ties}`;
  if (n === 0) return { accept: false, verdict: 'undecided', reason: `undecided: ${pairs}; no answer differs from its parent's, so nothing shows this round's change` };
  const better = signTestP(a.wins, n);
  const worse = signTestP(a.losses, n);
  const within = `${kl} ≤ ${budget}`;
  if (better <= alpha) return { accept: true, verdict: 'accept', reason: `${pairs}: better than the parent (one-sided sign test p = ${better.toPrecision(2)} ≤ ${alpha}); ${within}` };
  if (worse <= alpha) return { accept: false, verdict: 'reject', reason: `${pairs}: worse than the parent (one-sided sign test p = ${worse.toPrecision(2)} ≤ ${alpha})` };
  return {
    accept: false,
    verdict: 'undecided',
    reason: `undecided: ${pairs}; neither better nor worse than the parent shown at ${alpha} (p = ${better.toPrecision(2)} for better, ${worse.toPrecision(2)} for worse); the held-out ratings stay in the bank for the next round`,
  };
}

// The env gate: the gate kind of a round whose ratings come from an environment (the gym, node/gym). There the honest
// test of generalisation is the return on episodes the candidate has never seen, not the preference accuracy on a
// few held-out steps (a blackjack round holds out 4-23 steps of 4-token replies: no accuracy above chance can show
// and the KL is measured over 20-40 tokens). The process that owns the agent and the env plays the candidate and its
// parent on the same held-out env seeds (fresh seeds each round, disjoint from training's and from the final
// evaluation's), each episode with the same sampling seeds on both sides (common random numbers: where the two
// policies agree the episodes are identical, so the paired difference has only the hands they play differently in
// its variance). An env-gated round holds out no rated turn: its held-out set is the env seeds.
//
// The return compared is the one training optimises: the env's rewards plus the agent's penalty for each reply it
// could not read (node/gym/agent.ts invalidPenalty, the shaped return). Judged on the env's rewards alone, a
// candidate whose replies degenerate into text the agent cannot read loses nothing where the default action is as
// good as what it replaced (blackjack's default is stick): such candidates passed at a change of exactly 0.000, the
// next round started from them, and a 320-episode bench ended with 83% of the replies unreadable. The win rates
// reported stay the env's.
//
// The decision: with d_i = return_candidate(i) − return_parent(i) on n paired episodes, mean d̄ and its 95% interval
// d̄ ± 1.96·sd(d)/√n (reported),
//   1. reject when no paired episode was played;
//   2. reject when d̄ < 0: the candidate did worse than its parent on these episodes. A collapse (a policy that stops
//      reading the state, or answers what the agent cannot read) has d̄ far below 0 and its interval below 0 too;
//   3. otherwise (d̄ ≥ 0: no worse on these episodes, ties included) accept.
// Why the point estimate and not the interval: a policy-gradient step is small by design, and over a few hundred
// episodes its gain lies inside the interval. A rule that asked for a gain shown at 95% would reject the steps that
// are small but right and stall training (as the rating gate did); a rule that rejected only a loss shown at 95%
// lets every small wrong step through, and a 16-episode batch's gradient is noisy enough that they add up (the first
// bench accepted a round at d̄ = −0.043 [−0.095, +0.010], and the CI-sized run ended 5 points below the rating gate's).
// d̄ ≥ 0 passes a step that is right with a probability above one half that grows with its size (common random
// numbers keep the noise to the hands where the two differ) and a wrong one with a probability below one half. A
// rejected round's ratings stay pending and train again in the next round with the new ones, so a right step it
// turned away is tried again on more data. The seeds are fresh each round, so the choice never fits one set of
// hands, and the final evaluation's seeds are never seen by it.
// The KL of the candidate to its parent is measured on the tokens the parent sampled in these episodes (the parent
// is μ there, so k3 is unbiased for KL(parent ‖ candidate)) and reported; the return decides, the KL budget does not:
// it stands in for harm the gate cannot see, and here the gate sees the outcome itself.

export interface EnvGateMetrics {
  /** The env's name and the held-out seeds played (the first and the count; they are consecutive). */
  env: string;
  firstSeed: number;
  /** Paired episodes (both sides finished). */
  episodes: number;
  /** Mean return of the candidate and of the parent on them. */
  candidate: number;
  parent: number;
  /** Win rates (return > 0) of both. */
  candidateWins: number;
  parentWins: number;
  /**
   * Mean returns as training credits them (the env's rewards plus the agent's penalty per unreadable reply), when the
   * player reports them; the change is then of these.
   */
  shaped?: { candidate: number; parent: number };
  /** candidate − parent, paired per episode (of the shaped returns when given), with its 95% normal interval. */
  change: { mean: number; ci: [number, number] };
  /** Episodes whose return (shaped, when given) differed between the two. */
  differing: number;
  /** Replies the agent could not read, of the steps, on each side. */
  candidateInvalid: number;
  candidateSteps: number;
  parentInvalid: number;
  parentSteps: number;
  /** Mean per-token k3 of the candidate to its parent over `klTokens` tokens the parent sampled in these episodes. */
  kl: number;
  klTokens: number;
}

/**
 * The paired comparison of two return lists on the same seeds (NaN where an episode was abandoned: left out). With
 * `shaped` (the same episodes' returns as training credits them: the env's rewards plus the agent's penalty for each
 * unreadable reply), the change and the episodes played differently are of the shaped returns, the ones the rounds
 * optimise; the mean returns and win rates stay the env's.
 */
export function pairedReturns(
  candidate: readonly number[],
  parent: readonly number[],
  shaped?: { candidate: readonly number[]; parent: readonly number[] },
): Pick<EnvGateMetrics, 'episodes' | 'candidate' | 'parent' | 'candidateWins' | 'parentWins' | 'shaped' | 'change' | 'differing'> {
  const rows = candidate
    .map((c, i) => ({ c, p: parent[i]!, sc: shaped?.candidate[i] ?? c, sp: shaped?.parent[i] ?? parent[i]! }))
    .filter((x) => Number.isFinite(x.c) && Number.isFinite(x.p) && Number.isFinite(x.sc) && Number.isFinite(x.sp));
  const n = rows.length;
  const mean = (f: (x: (typeof rows)[number]) => number): number => (n === 0 ? 0 : rows.reduce((s, x) => s + f(x), 0) / n);
  const d = mean((x) => x.sc - x.sp);
  const sd = n < 2 ? 0 : Math.sqrt(rows.reduce((s, x) => s + (x.sc - x.sp - d) ** 2, 0) / (n - 1));
  const h = n === 0 ? 0 : (1.96 * sd) / Math.sqrt(n);
  return {
    episodes: n,
    candidate: mean((x) => x.c),
    parent: mean((x) => x.p),
    candidateWins: mean((x) => Number(x.c > 0)),
    parentWins: mean((x) => Number(x.p > 0)),
    ...(shaped === undefined ? {} : { shaped: { candidate: mean((x) => x.sc), parent: mean((x) => x.sp) } }),
    change: { mean: d, ci: [d - h, d + h] },
    differing: rows.filter((x) => x.sc !== x.sp).length,
  };
}

export function envGateDecision(m: EnvGateMetrics): { accept: boolean; reason: string } {
  if (m.episodes === 0) return { accept: false, reason: `no held-out ${m.env} episode finished on both sides to compare the candidate with its parent` };
  const f = (x: number): string => (x >= 0 ? '+' : '') + x.toFixed(3);
  const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
  const shaped = m.shaped === undefined ? '' : `; with the penalty of each unreadable reply (the return training optimises) ${m.shaped.candidate.toFixed(3)} against ${m.shaped.parent.toFixed(3)}`;
  const what =
    `mean return ${m.candidate.toFixed(3)} against the parent's ${m.parent.toFixed(3)} on ${m.episodes} held-out ${m.env} episodes (wins ${pct(m.candidateWins)} against ${pct(m.parentWins)}${shaped}; ${m.differing} played differently): ` +
    `paired change ${f(m.change.mean)} [${f(m.change.ci[0])}, ${f(m.change.ci[1])}]`;
  const kl = `KL to the parent ${m.kl.toFixed(4)} nats/token over ${m.klTokens} tokens`;
  if (m.change.mean < 0) return { accept: false, reason: `${what}: worse than the parent on these episodes${m.change.ci[1] < 0 ? ' (measurably: its 95% CI is below 0)' : ''}; ${kl}` };
  return { accept: true, reason: `${what}: no worse than the parent on these episodes; ${kl}` };
}
