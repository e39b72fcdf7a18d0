// When an automatic round is due (setting `training.schedule`, issue #15 "Time-based training trigger", seed 000's
// "every k minutes or m turns"): `threshold` starts a round as soon as training.threshold ratings are pending;
// `interval` trains at most every `everyMinutes` when at least `minPending` are pending; `nightly` trains once a
// night, in the NIGHT_WINDOW_MS after the local time `at`, when at least `minPending` are pending and the computer is
// idle. Pure: the scheduler (node/training/scheduler.ts) and the Training screen's sentence both read it.
import { z } from 'zod';

export const ScheduleSchema = z.strictObject({
  mode: z.enum(['threshold', 'interval', 'nightly']),
  everyMinutes: z.number().int().min(5).max(7 * 24 * 60),
  at: z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'a local time as HH:MM, 00:00 to 23:59'),
  minPending: z.number().int().min(1).max(10_000),
});
export type Schedule = z.infer<typeof ScheduleSchema>;

export const DEFAULT_SCHEDULE: Schedule = { mode: 'threshold', everyMinutes: 60, at: '02:00', minPending: 8 };

/** How long after `at` a nightly round may still start (a computer busy or asleep at 02:00 catches up by 08:00). */
export const NIGHT_WINDOW_MS = 6 * 3600_000;

export interface ScheduleInput {
  now: number;
  pending: number;
  /** training.threshold, the count `threshold` mode waits for. */
  threshold: number;
  /** When the model's newest round started (any trigger), or null when none has. */
  lastStartedAt: number | null;
}

/**
 * `due`: a round may start now (nightly rounds also need an idle computer: `needsIdle`). Otherwise `wakeAt` is the
 * first moment the clock alone could make one due (null: only a new rating can).
 */
export type ScheduleDecision = { due: true; needsIdle: boolean } | { due: false; wakeAt: number | null };

/** The pending count a round waits for: training.threshold, or the schedule's minimum. */
export function minimumPending(schedule: Schedule, threshold: number): number {
  return schedule.mode === 'threshold' ? threshold : schedule.minPending;
}

/** The latest local `at` (HH:MM) at or before `now`. */
export function lastNightlyStart(at: string, now: number): number {
  const [h, m] = at.split(':').map(Number) as [number, number];
  const d = new Date(now);
  d.setHours(h, m, 0, 0);
  if (d.getTime() > now) d.setDate(d.getDate() - 1);
  return d.getTime();
}

/** The first local `at` after `now`. */
export function nextNightlyStart(at: string, now: number): number {
  const d = new Date(lastNightlyStart(at, now));
  d.setDate(d.getDate() + 1);
  return d.getTime();
}

export function scheduleDecision(schedule: Schedule, i: ScheduleInput): ScheduleDecision {
  const enough = i.pending >= minimumPending(schedule, i.threshold);
  switch (schedule.mode) {
    case 'threshold':
      return enough ? { due: true, needsIdle: false } : { due: false, wakeAt: null };
    case 'interval': {
      if (!enough) return { due: false, wakeAt: null };
      const next = i.lastStartedAt === null ? i.now : i.lastStartedAt + schedule.everyMinutes * 60_000;
      return next <= i.now ? { due: true, needsIdle: false } : { due: false, wakeAt: next };
    }
    case 'nightly': {
      const start = lastNightlyStart(schedule.at, i.now);
      const inWindow = i.now < start + NIGHT_WINDOW_MS;
      const ranTonight = i.lastStartedAt !== null && i.lastStartedAt >= start;
      if (inWindow && !ranTonight && enough) return { due: true, needsIdle: true };
      // Too few ratings inside the window: a new rating asks again; the clock's next chance is tomorrow night.
      return { due: false, wakeAt: nextNightlyStart(schedule.at, i.now) };
    }
  }
}
