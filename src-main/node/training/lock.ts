// The training lock, <home>/training.lock: {pid, runId, at}. It makes one round at a time across every process
// that shares a home (the app, `rein train`, `rein demo`), and it survives crashes: a lock whose pid no longer
// runs is stale and is taken over.
import { closeSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { ReinError } from '../../common/errors.ts';
import type { ReinHome } from '../home.ts';
import { pidAlive } from '../pid.ts';

export interface TrainingLock {
  pid: number;
  runId: number | null;
  at: number;
}

export const lockPath = (home: ReinHome): string => path.join(home.dir, 'training.lock');

export function readTrainingLock(home: ReinHome): TrainingLock | null {
  try {
    const v = JSON.parse(readFileSync(lockPath(home), 'utf8')) as TrainingLock;
    return Number.isInteger(v.pid) ? v : null;
  } catch {
    return null;
  }
}

/** Takes the lock for `pid`; a stale lock (dead pid, or unreadable) is replaced. Throws 'locked' when a live one holds it. */
export function acquireTrainingLock(home: ReinHome, lock: Omit<TrainingLock, 'at'>): void {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(lockPath(home), 'wx', 0o600);
      try {
        writeSync(fd, JSON.stringify({ ...lock, at: Date.now() }));
      } finally {
        closeSync(fd);
      }
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const held = readTrainingLock(home);
    if (held !== null && pidAlive(held.pid)) {
      throw new ReinError('locked', `a training round is already running (pid ${held.pid}${held.runId === null ? '' : `, run ${held.runId}`})`, { detail: held });
    }
    rmSync(lockPath(home), { force: true });
  }
  throw new ReinError('locked', `could not take ${lockPath(home)}`);
}

/** Rewrites the lock (atomically) for the worker that now owns it. */
export function writeTrainingLock(home: ReinHome, lock: Omit<TrainingLock, 'at'>): void {
  const tmp = `${lockPath(home)}.${process.pid}`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, JSON.stringify({ ...lock, at: Date.now() }));
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, lockPath(home));
}

/** Removes the lock if `pid` holds it. */
export function releaseTrainingLock(home: ReinHome, pid: number): void {
  const held = readTrainingLock(home);
  if (held !== null && held.pid === pid) rmSync(lockPath(home), { force: true });
}
