import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeAll, writeFileAtomic } from './fs-atomic.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'rein-atomic-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('writeFileAtomic', () => {
  it('replaces the file whole, with the mode, and leaves no temporary file', () => {
    const file = path.join(dir, 'a.bin');
    writeFileSync(file, 'old');
    expect(writeFileAtomic(file, (fd) => (writeAll(fd, Buffer.from('new bytes')), 9), { mode: 0o600, fsync: true })).toBe(9);
    expect(readFileSync(file, 'utf8')).toBe('new bytes');
    expect(readdirSync(dir)).toEqual(['a.bin']);
    const fresh = path.join(dir, 'b.bin');
    writeFileAtomic(fresh, (fd) => writeAll(fd, Buffer.from('x')), { mode: 0o600 });
    expect(statSync(fresh).mode & 0o777).toBe(0o600);
    rmSync(fresh);
  });

  it('a failing writer leaves the target as it was and removes the temporary file', () => {
    const file = path.join(dir, 'a.bin');
    expect(() =>
      writeFileAtomic(file, (fd) => {
        writeAll(fd, Buffer.from('half'));
        throw new Error('disk full');
      }),
    ).toThrow('disk full');
    expect(readFileSync(file, 'utf8')).toBe('new bytes');
    expect(readdirSync(dir)).toEqual(['a.bin']);
  });

  it('the temporary name is fresh each time, so a link planted at the old `<file>.tmp-<pid>` is never written through', () => {
    const target = path.join(dir, 'victim');
    writeFileSync(target, 'keep');
    const file = path.join(dir, 'c');
    symlinkSync(target, `${file}.tmp-${process.pid}`);
    writeFileAtomic(file, (fd) => writeAll(fd, Buffer.from('data')));
    expect(readFileSync(target, 'utf8')).toBe('keep');
    expect(readFileSync(file, 'utf8')).toBe('data');
    expect(existsSync(`${file}.tmp-${process.pid}`)).toBe(true);
  });
});
