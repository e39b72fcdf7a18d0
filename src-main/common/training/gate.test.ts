import { describe, expect, it } from 'vitest';
import { envGateDecision, gateDecision, k3, pairedReturns, signTestP, wilson, type AnswerComparison, type EnvGateMetrics, type GateMetrics } from './gate.ts';
import { defaultRoundScenario, simulateGateOc } from './gate-oc.ts';

describe('the eval gate', () => {
  const m = (o: Partial<AnswerComparison> | null, kl = 0.01): GateMetrics => ({
    kind: 'ratings',
    heldout: 6,
    correct: 4,
    accuracy: 4 / 6,
    accuracyCi: wilson(4, 6),
    previousAccuracy: null,
    pairedCi: null,
    answers: o === null ? null : { judge: 'direction', prompts: 6, samples: 16, wins: 0, losses: 0, ties: 96, candidate: 0, parent: 0, ...o },
    kl,
    klBase: kl,
    klTokens: 100,
    klBudget: 0.1,
  });

  it('the sign test is the exact binomial tail: P(X ≥ 6 | 6) = 1/64, P(X ≥ 5 | 6) = 7/64, and the two tails add up to 1', () => {
    expect(signTestP(6, 6)).toBeCloseTo(1 / 64, 15);
    expect(signTestP(5, 6)).toBeCloseTo(7 / 64, 15);
    expect(signTestP(0, 6)).toBe(1);
    expect(signTestP(7, 6)).toBe(0);
    // P(X ≥ k) + P(X ≥ n − k + 1) = 1 by symmetry, and no underflow at n = 2000.
    for (const [k, n] of [[3, 7], [40, 90], [1100, 2000]] as const) expect(signTestP(k, n) + signTestP(n - k + 1, n)).toBeCloseTo(1, 10);
    expect(signTestP(1100, 2000)).toBeGreaterThan(0);
  });

  it('accepts a candidate whose answers win the discordant pairs, at the stated alpha', () => {
    // 15 wins of 18 discordant pairs: p = (816 + 153 + 18 + 1) / 2^18 = 0.0038.
    const d = gateDecision(m({ wins: 15, losses: 3, ties: 78 }));
    expect(d).toMatchObject({ accept: true, verdict: 'accept' });
    expect(d.reason).toMatch(/better in 15 pairs, worse in 3, the same in 78: better than the parent \(one-sided sign test p = 0\.0038 ≤ 0\.05\)/);
  });

  it('rejects a candidate whose answers lose, and leaves one it cannot tell from its parent undecided', () => {
    expect(gateDecision(m({ wins: 3, losses: 15, ties: 78 }))).toMatchObject({ accept: false, verdict: 'reject' });
    // 5 wins, 3 losses: p = 0.36 either way; the accuracy of the log-ratio (4 of 6) does not decide.
    const u = gateDecision(m({ wins: 5, losses: 3, ties: 88 }));
    expect(u).toMatchObject({ accept: false, verdict: 'undecided' });
    expect(u.reason).toMatch(/^undecided: .*stay in the bank/);
    // Every pair the same: the round changed nothing a user would see.
    expect(gateDecision(m({}))).toMatchObject({ verdict: 'undecided' });
    expect(gateDecision(m(null))).toMatchObject({ verdict: 'undecided' });
  });

  it('rejects over the KL budget, however the answers compare', () => {
    const d = gateDecision(m({ wins: 40, losses: 0, ties: 56 }, 0.2));
    expect(d).toMatchObject({ accept: false, verdict: 'reject' });
    expect(d.reason).toMatch(/exceeds the preset's budget 0.1/);
  });

  it('operating characteristic at the default round size: P(accept | no better) ≤ 5%, P(accept | +20 points) ≥ 80%', () => {
    const none = simulateGateOc(defaultRoundScenario(0));
    // The null's worst case for a sign test is rates near ½ (most discordant pairs); and a judge that errs.
    const half = simulateGateOc(defaultRoundScenario(0, { rateLow: 0.4, rateHigh: 0.6, seed: 2 }));
    const noisy = simulateGateOc(defaultRoundScenario(0, { judgeAccuracy: 0.8, seed: 3 }));
    const better = simulateGateOc(defaultRoundScenario(0.2, { seed: 4 }));
    for (const r of [none, half, noisy]) expect(r.accept).toBeLessThanOrEqual(0.05);
    expect(better.accept).toBeGreaterThanOrEqual(0.8);
    // A worse candidate is rejected, not accepted.
    const worse = simulateGateOc({ ...defaultRoundScenario(0.2, { seed: 5 }), lift: -0.2, rateLow: 0.2, rateHigh: 1 });
    expect(worse.accept).toBeLessThanOrEqual(0.05);
    expect(worse.reject).toBeGreaterThanOrEqual(0.8);
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
