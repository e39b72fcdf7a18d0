// The eval gate's arithmetic (ARCHITECTURE §4). Preference accuracy: on held-out rated turns, the candidate's
// log-ratio to the base, mean_t(π_adapter − π_base) over the response, should be above zero on good turns and below
// zero on bad ones. KL: the mean of KL(π_adapter ‖ π_base) over the next-token distributions at probe positions.
// A candidate goes live only when its accuracy beats the active adapter's on the same turns (or chance, 0.5, for
// the first one) and its KL is within the preset's budget; otherwise it is rejected with the reason stored.

export interface GateMetrics {
  heldout: number;
  /** Held-out turns whose log-ratio moved the rated way, out of `heldout`. */
  correct: number;
  accuracy: number | null;
  /** The previous active adapter's accuracy on the same turns; null when there is none (chance is the bar). */
  previousAccuracy: number | null;
  /** 95% Wilson interval of the accuracy. */
  accuracyCi: [number, number] | null;
  /** Mean next-token KL(adapter ‖ base) in nats over the probe positions. */
  kl: number;
  probes: number;
  klBudget: number;
}

/** True when the log-ratio moved in the rated direction (a tie counts as wrong: the adapter learned nothing there). */
export function preferenceCorrect(logRatio: number, desirable: boolean): boolean {
  return desirable ? logRatio > 0 : logRatio < 0;
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

export function gateDecision(m: GateMetrics): { accept: boolean; reason: string } {
  if (m.accuracy === null || m.heldout === 0) {
    return { accept: false, reason: 'no held-out rated turns to score the candidate on (a round holds out the newest pending ratings once there are at least 4)' };
  }
  const bar = m.previousAccuracy ?? 0.5;
  const barName = m.previousAccuracy === null ? 'chance (0.5)' : `the active adapter's ${m.previousAccuracy.toFixed(3)}`;
  if (!(m.accuracy > bar)) {
    return { accept: false, reason: `preference accuracy ${m.accuracy.toFixed(3)} on ${m.heldout} held-out turns does not beat ${barName}` };
  }
  if (!(m.kl <= m.klBudget)) {
    return { accept: false, reason: `KL to the base ${m.kl.toFixed(4)} nats exceeds the preset's budget ${m.klBudget}` };
  }
  return { accept: true, reason: `accuracy ${m.accuracy.toFixed(3)} beats ${barName}; KL ${m.kl.toFixed(4)} ≤ ${m.klBudget}` };
}
