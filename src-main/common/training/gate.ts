// The eval gate's arithmetic (ARCHITECTURE §4). Preference accuracy: on held-out rated turns, the candidate's
// log-ratio to the base, mean_t(π_adapter − π_base) over the response, should be above zero on good turns and below
// zero on bad ones. KL: the mean of KL(π_adapter ‖ π_base) over the next-token distributions at probe positions.
// The scored turns are older rated turns that this round did not replay (data.ts: a time split across rounds, so
// every pending rating trains). The active adapter was trained on them too, so there the candidate must beat chance
// and keep within RETENTION_TOLERANCE of the active adapter's accuracy (it must not forget what the user taught).
// A first round has no older turns: it scores the turns it trained on (scope 'trained'), which only shows that the
// update moved the way the ratings asked, and the reason says so. KL must be within the preset's budget.

/** How far below the active adapter's accuracy on older turns a candidate may land (one turn in twenty). */
export const RETENTION_TOLERANCE = 0.05;

export interface GateMetrics {
  /** 'heldout': older rated turns not trained this round; 'trained': a first round's own turns. */
  scope: 'heldout' | 'trained';
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
  /** RETENTION_TOLERANCE as this decision used it: stored, so a screen can say it without its own copy. */
  tolerance: number;
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
    return { accept: false, reason: 'no rated turn with a direction (good or bad) to score the candidate on' };
  }
  const where = m.scope === 'heldout' ? `${m.heldout} older rated turns` : `the ${m.heldout} turns it trained on (a first round has no older ones)`;
  if (!(m.accuracy > 0.5)) {
    return { accept: false, reason: `preference accuracy ${m.accuracy.toFixed(3)} on ${where} does not beat chance (0.5)` };
  }
  if (m.previousAccuracy !== null && m.accuracy < m.previousAccuracy - m.tolerance) {
    return { accept: false, reason: `preference accuracy ${m.accuracy.toFixed(3)} on ${where} fell below the active adapter's ${m.previousAccuracy.toFixed(3)} by more than ${m.tolerance}` };
  }
  if (!(m.kl <= m.klBudget)) {
    return { accept: false, reason: `KL to the base ${m.kl.toFixed(4)} nats exceeds the preset's budget ${m.klBudget}` };
  }
  const vs = m.previousAccuracy === null ? 'chance (0.5)' : `chance and keeps within ${m.tolerance} of the active adapter's ${m.previousAccuracy.toFixed(3)}`;
  return { accept: true, reason: `accuracy ${m.accuracy.toFixed(3)} on ${where} beats ${vs}; KL ${m.kl.toFixed(4)} ≤ ${m.klBudget}` };
}
