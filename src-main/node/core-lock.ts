// The core's pid lock (home.lockPath): one running core per Rein home. Created with O_EXCL holding the pid; a lock
// whose pid is dead is stale and taken over; a live one is a `locked` error that names the pid.
import { closeSync, linkSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { ReinError } from '../common/errors.ts';
import { pidAlive } from './pid.ts';

function readPid(lockPath: string): number | null {
  try {
    const n = Number(readFileSync(lockPath, 'utf8').trim());
    return Number.isInteger(n) && n > 0 ? n : null;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

export interface PidLock {
  readonly path: string;
  /** Remove the lock if it is still ours. */
  release(): void;
}

export function acquireLock(lockPath: string, pid: number = process.pid): PidLock {
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx', 0o600);
      try {
        writeSync(fd, `${pid}\n`);
      } finally {
        closeSync(fd);
      }
      return {
        path: lockPath,
        release() {
          if (readPid(lockPath) === pid) unlinkSync(lockPath);
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    let holder = readPid(lockPath);
    if (holder === null) {
      // Possibly created an instant ago and not yet written: look again before calling it stale.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
      holder = readPid(lockPath);
    }
    if (holder !== null && pidAlive(holder)) {
      throw new ReinError('locked', `another Rein core (pid ${holder}) is running on this home; stop it first (lock ${lockPath})`, {
        detail: { pid: holder, path: lockPath },
      });
    }
    // Stale: move it aside under a unique name rather than unlinking by path, so that of two processes taking over
    // at once only one removes it.
    const aside = `${lockPath}.stale-${pid}-${attempt}`;
    try {
      renameSync(lockPath, aside);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw e;
    }
    const moved = readPid(aside);
    if (moved !== holder && moved !== null && pidAlive(moved)) {
      // We moved a fresh lock another process made after our read: put it back (link fails if one exists again).
      try {
        linkSync(aside, lockPath);
      } catch {
        // A new lock is already there; the next attempt reads it.
      }
    }
    unlinkSync(aside);
  }
  throw new ReinError('locked', `could not take the lock ${lockPath} (it keeps changing)`);
}
