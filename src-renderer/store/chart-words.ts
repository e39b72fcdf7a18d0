// What the Training charts say, as data and words (issue #15 item 6): time-axis ticks that never repeat a label, the
// per-day bars from the first rated day, "% Good" as "x of y", and a text summary of each chart for screen readers.
import type { EmaPoint } from '../../src-main/common/domain.ts';

const SEC = 1000;
const MIN = 60 * SEC;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
/** Tick spacings a time axis may use, smallest first. */
const STEPS = [SEC, 5 * SEC, 15 * SEC, 30 * SEC, MIN, 5 * MIN, 15 * MIN, 30 * MIN, HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY, 30 * DAY];
const MAX_TICKS = 6;

/**
 * Ticks at round multiples of one spacing (local time for spacings of an hour and more), at most MAX_TICKS, and a
 * label format fine enough that no two ticks read the same: seconds under a minute's spacing, the date once the span
 * crosses midnight.
 */
export function timeTicks(min: number, max: number): { ticks: number[]; format: (t: number) => string } {
  const span = Math.max(0, max - min);
  const step = STEPS.find((s) => span / s <= MAX_TICKS - 1) ?? STEPS[STEPS.length - 1]!;
  const ticks: number[] = [];
  const offset = step >= HOUR ? new Date(min).getTimezoneOffset() * MIN : 0;
  for (let t = Math.ceil((min - offset) / step) * step + offset; t <= max; t += step) ticks.push(t);
  if (ticks.length === 0) ticks.push(min);
  const sameDay = new Date(min).toDateString() === new Date(max).toDateString();
  const format = (t: number): string => {
    const d = new Date(t);
    if (step >= DAY) return d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
    const time = d.toLocaleTimeString(undefined, step < MIN ? { hour: '2-digit', minute: '2-digit', second: '2-digit' } : { hour: '2-digit', minute: '2-digit' });
    return sameDay ? time : `${d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })} ${time}`;
  };
  return { ticks, format };
}

export interface DayBar {
  /** "Nov 24" */
  day: string;
  good: number;
  bad: number;
}

/** The per-day bars from the first day with a rating to the last (today), so no run of empty days leads the chart. */
export function fromFirstRatedDay(days: { day: string; good: number; bad: number }[]): { day: string; good: number; bad: number }[] {
  const first = days.findIndex((d) => d.good + d.bad > 0);
  return first < 0 ? [] : days.slice(first);
}

/** "% Good: 68% (21 of 31)": the share of a day's Good and Bad ratings that were Good, with the counts it comes from. */
export function percentGood(good: number, bad: number): string {
  const n = good + bad;
  return n === 0 ? '% Good: no ratings' : `% Good: ${Math.round((100 * good) / n)}% (${good} of ${n})`;
}

export function perDaySummary(days: { day: string; good: number; bad: number }[]): string {
  if (days.length === 0) return 'No ratings yet.';
  const good = days.reduce((s, d) => s + d.good, 0);
  const bad = days.reduce((s, d) => s + d.bad, 0);
  const each = days.filter((d) => d.good + d.bad > 0).map((d) => `${d.day}: ${d.good} Good, ${d.bad} Bad`);
  return `${days.length} day${days.length === 1 ? '' : 's'}, ${percentGood(good, bad)} in all. ${each.join('; ')}.`;
}

const num = (x: number) => (Math.abs(x) >= 0.01 || x === 0 ? x.toFixed(3) : x.toPrecision(2));

export function emaSummary(points: EmaPoint[]): string {
  if (points.length === 0) return 'No ratings yet.';
  const first = points[0]!;
  const last = points[points.length - 1]!;
  const lo = Math.min(...points.map((p) => p.value));
  const hi = Math.max(...points.map((p) => p.value));
  return `${points.length} points from ${new Date(first.at).toLocaleString()} to ${new Date(last.at).toLocaleString()}: from ${num(first.value)} to ${num(last.value)} (lowest ${num(lo)}, highest ${num(hi)}).`;
}

/** "Loss went from 0.693 at step 1 to 0.412 at step 12 (lowest 0.401)." */
export function curveSummary(name: string, points: { step: number; value: number }[], refs: { name: string; value: number }[] = []): string {
  if (points.length === 0) return `No ${name} yet.`;
  const first = points[0]!;
  const last = points[points.length - 1]!;
  const lo = Math.min(...points.map((p) => p.value));
  const hi = Math.max(...points.map((p) => p.value));
  const r = refs.map((x) => ` ${x.name}: ${num(x.value)}.`).join('');
  return `${name} went from ${num(first.value)} at step ${first.step} to ${num(last.value)} at step ${last.step} (lowest ${num(lo)}, highest ${num(hi)}).${r}`;
}
