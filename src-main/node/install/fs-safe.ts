// File access for the installers: never through a symlink (a link could point the write at a file the user did not
// mean us to touch), atomic replace (temp file in the same directory, then rename), and the mode kept or set.
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readFileSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { ReinError } from '../../common/errors.ts';
import { writeAll, writeFileAtomic } from '../fs-atomic.ts';

export interface FileState {
  bytes: Buffer | null;
  mode: number | null;
}

export function refuseSymlink(file: string): void {
  try {
    if (lstatSync(file).isSymbolicLink()) {
      throw new ReinError('forbidden', `refusing to write through a symlink: ${file} (edit the file it points to by hand, or replace the link)`, {
        detail: { path: file },
      });
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

export function readState(file: string): FileState {
  try {
    const st = lstatSync(file);
    if (st.isSymbolicLink()) refuseSymlink(file);
    if (!st.isFile()) throw new ReinError('conflict', `not a regular file: ${file}`, { detail: { path: file } });
    return { bytes: readFileSync(file), mode: st.mode & 0o7777 };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { bytes: null, mode: null };
    throw e;
  }
}

export function sha256(bytes: Buffer | string | null): string | null {
  return bytes === null ? null : createHash('sha256').update(bytes).digest('hex');
}

/** Replace `file` with `bytes` atomically, with `mode`; null removes the file. */
export function writeAtomic(file: string, bytes: Buffer | string | null, mode: number): void {
  refuseSymlink(file);
  if (bytes === null) {
    try {
      unlinkSync(file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    return;
  }
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileAtomic(file, (fd) => writeAll(fd, typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes), { mode, fsync: true });
}
