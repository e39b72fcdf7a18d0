// The eval gate's arithmetic (ARCHITECTURE §4); node/training/gate.ts measures, this file decides.
//
// What is scored: the round's held-out ratings, a seeded random share (preset heldoutFraction, about 20%) of this
// round's pending ratings that the round does not train (they stay pending and train in the next round), plus older
// ratings that no version of the active lineage trained on (data.ts selectRound). So the gate measures
// generalisation to ratings the candidate has never seen, and so does the parent it is compared with.
//
// Preference accuracy: on a held-out turn the candidate's log-ratio to the base, mean_t(π_adapter − π_base) over the
// response's trained tokens, should have the sign of the training target: the MIS-PO advantage A = r − baseline
// (A = 0 carries no direction and is not scored), or KTO's label (desirable up, undesirable down). The sign of the
// reward would mark a good turn below the baseline as wrong when training pushes it down.
//
// KL: the mean per-token k3 (Schulman 2020, "Approximating KL divergence": k3 = (ρ − 1) − log ρ, ρ = π_cand/π_parent
// per token) over the held-out responses' trained tokens, of the candidate against its parent (the version the round
// started from, or the base). The held-out tokens were sampled by μ, the parent's side (the base or a version of the
// lineage), so it estimates KL(parent ‖ candidate) without bias when μ is the parent. It is a per-round budget: each
// round may move this far from where it started. `klBase` is the same against the base: the lineage's cumulative
// drift, shown, not gated.
//
// The decision, in order:
//   1. reject when kl > klBudget;
//   2. reject when the paired 95% CI of (candidate − parent) accuracy on the same turns lies wholly below 0: the
//      candidate is measurably worse than the version it would replace;
//   3. accept when the 95% Wilson lower bound of the accuracy is above 0.5 (measurably better than chance), or when
//      the accuracy is above 0.5 and not below the parent's (no worse than what is live; with no parent adapter the
//      base has no preference, and above chance suffices);
//   4. otherwise reject. One wrong turn of 16 (0.94, Wilson [0.72, 0.99]) passes; the point estimate alone never
//      rejects a candidate that its interval cannot tell from the parent.

export interface GateMetrics {
  /** The gate kind: held-out rated turns (absent on rounds recorded before kinds), or held-out env episodes (`env`). */
  kind?: 'ratings' | 'env';
  /** The env gate's measurements (kind `env`; the accuracy fields are then empty, and kl/klTokens are its). */
  env?: EnvGateMetrics;
  /** Held-out turns with a direction (MIS-PO A ≠ 0, or a KTO label). */
  heldout: number;
  /** Held-out turns whose log-ratio moved the way training would push them, out of `heldout`. */
  correct: number;
  accuracy: number | null;
  /** 95% Wilson interval of the accuracy. */
  accuracyCi: [number, number] | null;
  /** The parent adapter's accuracy on the same turns; null when the round starts from the base. */
  previousAccuracy: number | null;
  /** 95% CI of the paired difference candidate − parent (per turn in {−1, 0, 1}); null with no parent adapter. */
  pairedCi: [number, number] | null;
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
 * The 95% CI of the mean of paired differences d_i = a_i − b_i (a_i, b_i ∈ {0, 1}): mean ± z·sd/√n, the normal
 * approximation of the paired mean. With all d_i equal the interval is that value. n = 0 gives [−1, 1].
 */
export function pairedCi(a: readonly boolean[], b: readonly boolean[], z = 1.96): [number, number] {
  const n = Math.min(a.length, b.length);
  if (n === 0) return [-1, 1];
  const d = Array.from({ length: n }, (_, i) => Number(a[i]) - Number(b[i]));
  const mean = d.reduce((s, x) => s + x, 0) / n;
  const sd = n < 2 ? 0 : Math.sqrt(d.reduce((s, x) => s + (x - mean) ** 2, 0) / (n - 1));
  const h = (z * sd) / Math.sqrt(n);
  return [Math.max(-1, mean - h), Math.min(1, mean + h)];
}

export function gateDecision(m: GateMetrics): { accept: boolean; reason: string } {
  const kl = `KL to the parent ${m.kl.toFixed(4)} nats/token over ${m.klTokens} tokens`;
  if (!(m.kl <= m.klBudget)) return { accept: false, reason: `${kl} exceeds the preset's budget ${Number(m.klBudget.toPrecision(3))}` };
  if (m.accuracy === null || m.heldout === 0) {
    return { accept: false, reason: 'no held-out rated turn with a direction (a training target above or below zero) to score the candidate on' };
  }
  const ci = m.accuracyCi ?? wilson(m.correct, m.heldout);
  const acc = `preference accuracy ${m.accuracy.toFixed(3)} [${ci[0].toFixed(2)}, ${ci[1].toFixed(2)}] on ${m.heldout} held-out turns`;
  if (m.previousAccuracy !== null && m.pairedCi !== null && m.pairedCi[1] < 0) {
    return { accept: false, reason: `${acc} is below the parent's ${m.previousAccuracy.toFixed(3)}: the paired difference's 95% CI [${m.pairedCi[0].toFixed(2)}, ${m.pairedCi[1].toFixed(2)}] is below 0` };
  }
  const within = `${kl} ≤ ${Number(m.klBudget.toPrecision(3))}`;
  if (ci[0] > 0.5) return { accept: true, reason: `${acc}: its 95% lower bound beats chance (0.5); ${within}` };
  if (m.accuracy > 0.5 && (m.previousAccuracy === null || m.accuracy >= m.previousAccuracy)) {
    const vs = m.previousAccuracy === null ? 'chance (0.5), with no parent adapter' : `chance (0.5) and is not below the parent's ${m.previousAccuracy.toFixed(3)}`;
    return { accept: true, reason: `${acc} beats ${vs}; ${within}` };
  }
  const why = m.accuracy > 0.5 ? `is below the parent's ${m.previousAccuracy!.toFixed(3)} and its 95% lower bound does not beat chance` : 'does not beat chance (0.5)';
  return { accept: false, reason: `${acc} ${why}` };
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
