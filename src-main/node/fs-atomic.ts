// Writing a file whole or not at all: into a temporary file beside it (the same directory, so the rename is atomic
// on one filesystem), then renamed over the target. On any failure the temporary file is removed and the target is
// as it was. The GGUF and safetensors writers, the JSONL export and the installers' config writes all go through it.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';

export interface AtomicWriteOptions {
  /** Mode of a newly created file (default 0o666, less the umask). */
  mode?: number;
  /** fsync before the rename. */
  fsync?: boolean;
}

export function writeFileAtomic<T>(file: string, write: (fd: number) => T, opts: AtomicWriteOptions = {}): T {
  // A name nobody can guess (128 random bits), created with O_EXCL | O_NOFOLLOW: a link planted at any name, guessed
  // or not, makes the open fail instead of being written through (issue #21 item 8).
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(16).toString('hex')}.tmp`);
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const fd = openSync(tmp, flags, opts.mode ?? 0o666);
  try {
    let result: T;
    try {
      result = write(fd);
      if (opts.fsync === true) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
    return result;
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** writeSync until every byte is written (a single call may write fewer). */
export function writeAll(fd: number, bytes: Uint8Array): void {
  let off = 0;
  while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
}
