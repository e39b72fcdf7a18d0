import { describe, expect, it } from 'vitest';
import { envGateDecision, gateDecision, k3, pairedCi, pairedReturns, wilson, type EnvGateMetrics, type GateMetrics } from './gate.ts';

const m = (o: Partial<GateMetrics>): GateMetrics => {
  const base = { heldout: 20, correct: 16, accuracy: 0.8, previousAccuracy: null, pairedCi: null, kl: 0.01, klBase: 0.01, klTokens: 100, klBudget: 0.1, ...o };
  return { accuracyCi: base.accuracy === null ? null : wilson(base.correct, base.heldout), ...base };
};

describe('the eval gate', () => {
  it('accepts when the Wilson lower bound beats chance within the KL budget', () => {
    const d = gateDecision(m({}));
    expect(d.accept).toBe(true);
    expect(d.reason).toMatch(/0\.800 \[0\.58, 0\.92\] on 20 held-out turns: its 95% lower bound beats chance/);
  });

  it('one wrong turn of 16 does not reject (the retention tolerance of 0.05 rejected it)', () => {
    // The parent got all 16; the candidate 15: the paired CI [−0.19, 0.06] includes 0, the Wilson bound is 0.72.
    const parent = Array.from({ length: 16 }, () => true);
    const cand = parent.map((_, i) => i !== 3);
    const d = gateDecision(m({ heldout: 16, correct: 15, accuracy: 15 / 16, previousAccuracy: 1, pairedCi: pairedCi(cand, parent) }));
    expect(d.accept, d.reason).toBe(true);
  });

  it('rejects a candidate measurably worse than its parent, whatever its accuracy', () => {
    const parent = Array.from({ length: 40 }, () => true);
    const cand = parent.map((_, i) => i % 4 !== 0); // 30 of 40: 0.75, Wilson lower bound 0.60
    const ci = pairedCi(cand, parent);
    expect(ci[1]).toBeLessThan(0);
    const d = gateDecision(m({ heldout: 40, correct: 30, accuracy: 0.75, previousAccuracy: 1, pairedCi: ci }));
    expect(d.accept).toBe(false);
    expect(d.reason).toMatch(/paired difference's 95% CI \[-0\.39, -0\.11\] is below 0/);
  });

  it('accepts above chance when not below the parent, rejects at chance or below the parent without a clear interval', () => {
    // 5 of 8: Wilson [0.31, 0.86] includes 0.5.
    expect(gateDecision(m({ heldout: 8, correct: 5, accuracy: 5 / 8 })).accept).toBe(true);
    expect(gateDecision(m({ heldout: 8, correct: 5, accuracy: 5 / 8, previousAccuracy: 0.5, pairedCi: [-0.2, 0.45] })).accept).toBe(true);
    expect(gateDecision(m({ heldout: 8, correct: 5, accuracy: 5 / 8, previousAccuracy: 0.75, pairedCi: [-0.5, 0.25] })).reason).toMatch(/below the parent's 0\.750/);
    expect(gateDecision(m({ heldout: 8, correct: 4, accuracy: 0.5 })).reason).toMatch(/does not beat chance/);
  });

  it('rejects over the KL budget, or with no scored turn', () => {
    expect(gateDecision(m({ kl: 0.2 })).reason).toMatch(/exceeds the preset's budget 0.1/);
    expect(gateDecision(m({ heldout: 0, correct: 0, accuracy: null })).accept).toBe(false);
  });

  it('k3 is (ρ − 1) − log ρ: 0.193 at ρ = 0.5, 0.307 at ρ = 2, 0 at ρ = 1', () => {
    expect(k3(Math.log(0.5))).toBeCloseTo(0.1931, 4);
    expect(k3(Math.log(2))).toBeCloseTo(0.3069, 4);
    expect(k3(0)).toBe(0);
  });

  it('Wilson interval: 8 of 10 is [0.49, 0.94] (Wilson 1927, z = 1.96)', () => {
    const [lo, hi] = wilson(8, 10);
    expect(lo).toBeCloseTo(0.4902, 3);
    expect(hi).toBeCloseTo(0.9433, 3);
  });
});

describe('the env gate', () => {
  const env = (candidate: number[], parent: number[], kl = 0.5): EnvGateMetrics => ({
    env: 'blackjack',
    firstSeed: 1_500_000_000,
    ...pairedReturns(candidate, parent),
    candidateInvalid: 0,
    candidateSteps: candidate.length,
    parentInvalid: 0,
    parentSteps: parent.length,
    kl,
    klTokens: 4 * parent.length,
  });
  // 400 paired hands where the two play alike except on `k` of them, each moving −1 → +1 (or the reverse).
  const hands = (k: number, gain: boolean): [number[], number[]] => {
    const parent = Array.from({ length: 400 }, (_, i) => [1, -1, 0, -1][i % 4]!);
    const candidate = parent.map((r, i) => (i % 4 === 1 && i < 4 * k ? (gain ? 1 : -3) : r));
    return [candidate, parent];
  };

  it('pairs the returns on the same seeds, leaving out an abandoned episode (NaN) on either side', () => {
    const p = pairedReturns([1, 0, Number.NaN, -1], [1, -1, 1, Number.NaN]);
    expect(p).toMatchObject({ episodes: 2, candidate: 0.5, parent: 0, candidateWins: 0.5, parentWins: 0.5, differing: 1 });
    expect(p.change.mean).toBe(0.5);
    // d = (0, 1): sd 0.707, half-width 1.96 · 0.707 / √2 = 0.98.
    expect(p.change.ci[0]).toBeCloseTo(-0.48, 2);
    expect(p.change.ci[1]).toBeCloseTo(1.48, 2);
  });

  it('lets a small right step through, and one that changed nothing, whatever its KL', () => {
    const [c, p] = hands(3, true);
    const d = envGateDecision(env(c, p, 2));
    expect(d.accept).toBe(true);
    expect(d.reason).toMatch(/paired change \+0\.015 \[-0\.002, \+0\.032\]: no worse than the parent on these episodes; KL to the parent 2\.0000/);
    expect(envGateDecision(env(p, p)).accept).toBe(true);
  });

  it('rejects a small wrong step, though its interval reaches 0', () => {
    const [c, p] = hands(2, false);
    const d = envGateDecision(env(c, p));
    expect(d.accept).toBe(false);
    expect(d.reason).toMatch(/paired change -0\.010 \[-0\.024, \+0\.004\]: worse than the parent on these episodes; KL/);
  });

  it('judges the return training optimises: a candidate that only adds unreadable replies is rejected, its win rates reported as the env\'s', () => {
    // Both play the same hands to the same env returns (the unreadable replies played the default action, stick, where
    // the parent stuck too); the candidate's replies could not be read on 40 of 400 hands (−1 each).
    const [, p] = hands(0, true);
    const shaped = { candidate: p.map((r, i) => (i < 40 ? r - 1 : r)), parent: p };
    const m = { ...env(p, p), ...pairedReturns(p, p, shaped) };
    expect(m).toMatchObject({ episodes: 400, candidate: -0.25, parent: -0.25, candidateWins: 0.25, parentWins: 0.25, differing: 40 });
    expect(m.shaped).toEqual({ candidate: -0.35, parent: -0.25 });
    expect(m.change.mean).toBeCloseTo(-0.1, 12);
    const d = envGateDecision(m);
    expect(d.accept).toBe(false);
    expect(d.reason).toMatch(/wins 25\.0% against 25\.0%; with the penalty of each unreadable reply \(the return training optimises\) -0\.350 against -0\.250; 40 played differently\): paired change -0\.100 .*measurably/);
    // Judged on the env's rewards alone the two are the same policy.
    expect(envGateDecision(env(p, p)).accept).toBe(true);
  });

  it('rejects a candidate measurably worse than its parent (a collapse), or with no paired episode', () => {
    const [c, p] = hands(30, false);
    const d = envGateDecision(env(c, p));
    expect(d.accept).toBe(false);
    expect(d.reason).toMatch(/on 400 held-out blackjack episodes .*30 played differently.*worse than the parent on these episodes \(measurably: its 95% CI is below 0\)/);
    expect(envGateDecision(env([], [])).accept).toBe(false);
    expect(envGateDecision(env([Number.NaN], [1])).reason).toMatch(/no held-out blackjack episode finished on both sides/);
  });
});
