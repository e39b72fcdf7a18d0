import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NotRegularTargetError, writeAll, writeFileAtomic } from './fs-atomic.ts';

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

  it('refuses a target that is not a regular file, names what it is, and leaves it and the folder as they were', () => {
    const sub = mkdtempSync(path.join(dir, 'odd-'));
    const fifo = path.join(sub, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const folder = path.join(sub, 'folder');
    mkdirSync(folder);
    const victim = path.join(sub, 'victim');
    writeFileSync(victim, 'keep');
    const link = path.join(sub, 'link');
    symlinkSync(victim, link);
    const dangling = path.join(sub, 'dangling');
    symlinkSync(path.join(sub, 'nowhere'), dangling);
    const cases: [string, string][] = [
      [fifo, 'a FIFO'],
      [folder, 'a folder'],
      [link, 'a symbolic link'],
      [dangling, 'a symbolic link'],
    ];
    let writes = 0;
    for (const [file, what] of cases) {
      let thrown: unknown;
      try {
        writeFileAtomic(file, (fd) => (writes++, writeAll(fd, Buffer.from('x'))));
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(NotRegularTargetError);
      expect((thrown as NotRegularTargetError).what).toBe(what);
      expect((thrown as Error).message).toContain(`${file} is ${what}, not a regular file`);
    }
    expect(writes).toBe(0);
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    expect(readlinkSync(link)).toBe(victim);
    expect(readFileSync(victim, 'utf8')).toBe('keep');
    expect(existsSync(path.join(sub, 'nowhere'))).toBe(false);
    expect(readdirSync(sub).sort()).toEqual(['dangling', 'fifo', 'folder', 'link', 'victim']);
  });

  it('a target that turns into a link while the writer runs is refused before the rename', () => {
    const file = path.join(dir, 'swapped');
    const victim = path.join(dir, 'victim2');
    writeFileSync(victim, 'keep');
    expect(() =>
      writeFileAtomic(file, (fd) => {
        symlinkSync(victim, file);
        writeAll(fd, Buffer.from('data'));
      }),
    ).toThrow(NotRegularTargetError);
    expect(lstatSync(file).isSymbolicLink()).toBe(true);
    expect(readFileSync(victim, 'utf8')).toBe('keep');
    expect(readdirSync(dir).filter((n) => n.startsWith('.swapped'))).toEqual([]);
    rmSync(file);
  });
});
