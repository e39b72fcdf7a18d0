// Writing a file whole or not at all: into a temporary file beside it (the same directory, so the rename is atomic
// on one filesystem), then renamed over the target. On any failure the temporary file is removed and the target is
// as it was. The GGUF and safetensors writers, the JSONL export and the installers' config writes all go through it.
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';

export interface AtomicWriteOptions {
  /** Mode of a newly created file (default 0o666, less the umask). */
  mode?: number;
  /** The temporary file (default `<file>.tmp-<pid>`). */
  tmp?: string;
  /** Refuse a temporary file that already exists (open with O_EXCL), so a planted link there is never followed. */
  exclusive?: boolean;
  /** fsync before the rename. */
  fsync?: boolean;
}

export function writeFileAtomic<T>(file: string, write: (fd: number) => T, opts: AtomicWriteOptions = {}): T {
  const tmp = opts.tmp ?? `${file}.tmp-${process.pid}`;
  const fd = openSync(tmp, opts.exclusive === true ? 'wx' : 'w', opts.mode ?? 0o666);
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
