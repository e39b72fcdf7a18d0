import { describe, expect, it } from 'vitest';
import { Rng } from '../engine/rng.ts';
import { askDecision, auroc, fitRewardHead, pairAccuracy, predictReward, rewardLabel, rewardModelLine, REWARD_MIN_HELDOUT, REWARD_MIN_PAIRS } from './reward.ts';

describe('reward-model arithmetic', () => {
  it('AUROC counts ordered (positive, negative) pairs, ties half, with the Hanley-McNeil interval', () => {
    // Pairs: 0.9>0.3, 0.9>0.5, 0.4>0.3, 0.4<0.5 → 3 of 4.
    const a = auroc([0.9, 0.4, 0.3, 0.5], [1, 1, 0, 0])!;
    expect(a.auroc).toBe(0.75);
    // Hanley & McNeil (1982) eq. 2 by hand: Q1 = 0.75/1.25 = 0.6, Q2 = 2·0.5625/1.75.
    const q2 = (2 * 0.5625) / 1.75;
    const se = Math.sqrt((0.75 * 0.25 + (0.6 - 0.5625) + (q2 - 0.5625)) / 4);
    expect(a.ci[0]).toBeCloseTo(Math.max(0, 0.75 - 1.96 * se), 12);
    expect(a.ci[1]).toBe(1);
    expect(auroc([0.5, 0.5], [1, 0])!.auroc).toBe(0.5);
    expect(auroc([0.1, 0.2], [1, 1])).toBeNull();
  });

  it('pair accuracy counts a tie as wrong, with a Wilson interval', () => {
    const p = pairAccuracy([{ chosen: 0.9, rejected: 0.1 }, { chosen: 0.2, rejected: 0.2 }, { chosen: 0.3, rejected: 0.6 }, { chosen: 0.7, rejected: 0.6 }])!;
    expect(p).toMatchObject({ correct: 2, pairs: 4, accuracy: 0.5 });
    expect(p.ci[0]).toBeLessThan(0.5);
    expect(pairAccuracy([])).toBeNull();
  });

  it('fits a head that separates a direction in noise and scores held-out points by it', () => {
    const rng = new Rng(5);
    const make = (n: number) =>
      Array.from({ length: n }, () => {
        const y = rng.uniform() < 0.5 ? 1 : 0;
        const x = Float32Array.from({ length: 16 }, () => rng.normal());
        x[3]! += y === 1 ? 1.5 : -1.5;
        return { x, y: y as 0 | 1, weight: 1 };
      });
    const head = fitRewardHead(make(64));
    const held = make(200);
    const a = auroc(held.map((e) => predictReward(head, e.x)), held.map((e) => e.y))!;
    expect(a.auroc).toBeGreaterThan(0.9);
    // The informative feature carries the largest weight.
    const top = head.w.map(Math.abs).indexOf(Math.max(...head.w.map(Math.abs)));
    expect(top).toBe(3);
    expect(() => predictReward(head, new Float32Array(3))).toThrow(/3 features for a head of width 16/);
  });

  it('labels a rating by its sign and weighs it by |reward|; a 3 of 5 carries none', () => {
    expect(rewardLabel(1)).toEqual({ y: 1, weight: 1 });
    expect(rewardLabel(-0.5)).toEqual({ y: 0, weight: 0.5 });
    expect(rewardLabel(0)).toBeNull();
  });

  it('asks always, or only when unsure, and says why', () => {
    expect(askDecision('always', 0.99, 0.4)).toMatchObject({ ask: true });
    expect(askDecision('unsure', null, 0.4)).toMatchObject({ ask: true, reason: 'there is no reward model yet to judge this answer' });
    expect(askDecision('unsure', 0.52, 0.4)).toEqual({ ask: true, reason: 'the reward model is unsure: it gives this answer a 52% chance of being Good', p: 0.52 });
    expect(askDecision('unsure', 0.25, 0.4).reason).toBe('the reward model is unsure: it gives this answer a 25% chance of being Good');
    expect(askDecision('unsure', 0.95, 0.4)).toMatchObject({ ask: false });
    expect(askDecision('unsure', 0.05, 0.4).reason).toBe('the reward model is confident: it gives this answer a 5% chance of being Good; not asked, and not labelled');
    expect(askDecision('unsure', 0.85, 0.4).ask).toBe(true);
  });

  it('one line per version for the CLI and the Training screen', () => {
    const m = { version: 3, ratings: 40, metrics: { heldout: { positives: 5, negatives: 6 }, auroc: { value: 0.9, ci: [0.7, 1] as [number, number] }, pairs: null } };
    expect(rewardModelLine(m)).toBe('reward model v3 (40 examples): held-out AUROC 0.90 [0.70, 1.00] on 5 Good + 6 Bad; no held-out pairs yet');
  });

  it(`below ${REWARD_MIN_HELDOUT} held-out examples of each kind (or pairs) it judges nothing, and never prints a zero-width interval`, () => {
    const few = { version: 1, ratings: 8, metrics: { heldout: { positives: 1, negatives: 1 }, auroc: { value: 0, ci: [0, 0] as [number, number] }, pairs: { accuracy: 1, ci: [0.21, 1] as [number, number], pairs: 1 } } };
    expect(rewardModelLine(few)).toBe(
      `reward model v1 (8 examples): held-out AUROC: too few ratings to judge yet (1 Good and 1 Bad held out; it needs ${REWARD_MIN_HELDOUT} of each); pair accuracy: too few held-out pairs to judge yet (1; it needs ${REWARD_MIN_PAIRS})`,
    );
    const oneSided = { ...few, metrics: { ...few.metrics, heldout: { positives: 1, negatives: 5 }, auroc: { value: 1, ci: [1, 1] as [number, number] } } };
    expect(rewardModelLine(oneSided)).toMatch(/AUROC: too few ratings to judge yet \(1 Good and 5 Bad held out/);
    // Hanley–McNeil's interval has zero width at AUROC 1 whatever the counts: no range is printed then.
    const perfect = { ...few, metrics: { ...few.metrics, heldout: { positives: 6, negatives: 7 }, auroc: { value: 1, ci: [1, 1] as [number, number] } } };
    expect(rewardModelLine(perfect)).toMatch(/held-out AUROC 1\.00 on 6 Good \+ 7 Bad \(every Good scored above every Bad; too few to give a range\)/);
    expect(rewardModelLine(perfect)).not.toMatch(/\[1\.00, 1\.00\]/);
  });
});
