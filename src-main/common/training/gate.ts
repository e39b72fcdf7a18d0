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
