import { describe, expect, it } from 'vitest';
import { timeTickFormatter } from './charts.tsx';

describe('timeTickFormatter', () => {
  const t = Date.UTC(2026, 10, 22, 14, 5);
  it('labels a span under two days with clock times, so ticks within one day differ', () => {
    const f = timeTickFormatter(3_600_000);
    expect(f(t)).not.toBe(f(t + 30 * 60_000));
    expect(f(t)).toMatch(/\d{1,2}.\d{2}/);
  });
  it('labels a longer span with dates', () => {
    const f = timeTickFormatter(10 * 86_400_000);
    expect(f(t)).toBe(new Date(t).toLocaleDateString(undefined, { month: 'short', day: 'numeric' }));
    expect(f(t)).toBe(f(t + 60_000));
  });
});
