// Whether a process id names a live process: the core lock (core-lock.ts) and the training lock (training/lock.ts)
// both ask it of the pid a lock file names.

/**
 * True when `pid` names a live process, even one of another user (EPERM). A pid ≤ 0 or not an integer is never
 * alive: `kill(0, 0)` would signal our own process group and `kill(-1, 0)` every process we may signal.
 */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: the process exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
