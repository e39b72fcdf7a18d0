import { describe, expect, it } from 'vitest';
import { curveSummary, fromFirstRatedDay, percentGood, perDaySummary, timeTicks } from './chart-words.ts';

describe('time-axis ticks', () => {
  const start = new Date(2026, 10, 22, 23, 9, 12).getTime();
  // A few seconds, minutes, hours, across midnight, and weeks: the spans that repeated "11:09 PM" before.
  for (const span of [0, 4_000, 50_000, 7 * 60_000, 3 * 3600_000, 30 * 3600_000, 20 * 86_400_000]) {
    it(`labels every tick differently over ${span / 1000} s, with at most 6 ticks inside the span`, () => {
      const { ticks, format } = timeTicks(start, start + span);
      expect(ticks.length).toBeGreaterThan(0);
      expect(ticks.length).toBeLessThanOrEqual(6);
      for (const t of ticks) expect(t >= start && t <= start + span).toBe(true);
      const labels = ticks.map(format);
      expect(new Set(labels).size).toBe(labels.length);
    });
  }
});

describe('chart words', () => {
  it('starts the per-day bars at the first rated day', () => {
    const days = [
      { day: '11-10', good: 0, bad: 0 },
      { day: '11-11', good: 2, bad: 1 },
      { day: '11-12', good: 0, bad: 0 },
      { day: '11-13', good: 1, bad: 0 },
    ];
    expect(fromFirstRatedDay(days).map((d) => d.day)).toEqual(['11-11', '11-12', '11-13']);
    expect(fromFirstRatedDay(days.map((d) => ({ ...d, good: 0, bad: 0 })))).toEqual([]);
    expect(perDaySummary(fromFirstRatedDay(days))).toBe('3 days, % Good: 75% (3 of 4) in all. 11-11: 2 Good, 1 Bad; 11-13: 1 Good, 0 Bad.');
  });

  it('says % Good as x of y', () => {
    expect(percentGood(21, 10)).toBe('% Good: 68% (21 of 31)');
    expect(percentGood(0, 0)).toBe('% Good: no ratings');
  });

  it('summarises a curve with its ends, range and reference lines', () => {
    const pts = [
      { step: 1, value: 0.5 },
      { step: 2, value: 12.25 },
      { step: 3, value: 4 },
    ];
    expect(curveSummary('Training-batch KL', pts, [{ name: "Gate's KL budget", value: 0.1 }])).toBe(
      "Training-batch KL went from 0.500 at step 1 to 4.000 at step 3 (lowest 0.500, highest 12.250). Gate's KL budget: 0.100.",
    );
  });
});
