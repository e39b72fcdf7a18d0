import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { ReinError } from '../common/errors.ts';
import { pidAlive } from './pid.ts';
import { acquireLock } from './core-lock.ts';

let dir: string;
let lockPath: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rein-lock-'));
  lockPath = path.join(dir, 'core.lock');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The pid of a process that has exited (a child that ran and was reaped). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  const pid = Number(r.stdout);
  expect(pidAlive(pid)).toBe(false);
  return pid;
}

it('writes the pid with O_EXCL and mode 0600, and a second taker gets a locked error naming the holder', () => {
  const lock = acquireLock(lockPath);
  expect(readFileSync(lockPath, 'utf8').trim()).toBe(String(process.pid));
  let err: unknown;
  try {
    acquireLock(lockPath, process.pid + 1);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(ReinError);
  expect((err as ReinError).code).toBe('locked');
  expect((err as ReinError).message).toContain(`pid ${process.pid}`);
  lock.release();
  expect(existsSync(lockPath)).toBe(false);
});

it('takes over a lock whose pid is dead, and a lock with garbage in it', () => {
  writeFileSync(lockPath, `${deadPid()}\n`);
  const a = acquireLock(lockPath);
  expect(readFileSync(lockPath, 'utf8').trim()).toBe(String(process.pid));
  a.release();
  writeFileSync(lockPath, 'not a pid');
  const b = acquireLock(lockPath);
  expect(readFileSync(lockPath, 'utf8').trim()).toBe(String(process.pid));
  b.release();
});

it('release leaves a lock that is no longer ours', () => {
  const lock = acquireLock(lockPath);
  writeFileSync(lockPath, '1\n');
  lock.release();
  expect(readFileSync(lockPath, 'utf8').trim()).toBe('1');
});
