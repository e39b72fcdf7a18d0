// Writing a file whole or not at all: into a temporary file beside it (the same directory, so the rename is atomic
// on one filesystem), then renamed over the target. On any failure the temporary file is removed and the target is
// as it was. The GGUF and safetensors writers, the JSONL export and the installers' config writes all go through it.
// The target must be a regular file or nothing: a rename replaces whatever has the name, so an export aimed at a FIFO
// turned it into a file, and as root one aimed at /dev/null replaced the device.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fsyncSync, lstatSync, openSync, readdirSync, renameSync, rmSync, writeSync, type Stats } from 'node:fs';
import path from 'node:path';

export interface AtomicWriteOptions {
  /** Mode of a newly created file (default 0o666, less the umask). */
  mode?: number;
  /** fsync before the rename. */
  fsync?: boolean;
}

/** The target of a write exists and is not a regular file (a symlink, FIFO, device, socket or folder): nothing was written. */
export class NotRegularTargetError extends Error {
  readonly file: string;
  /** What is there, in words: `a FIFO`, `a symbolic link`, … */
  readonly what: string;
  constructor(file: string, what: string) {
    const why = what === 'a symbolic link' ? 'Rein neither writes through a link nor replaces it; name the file itself' : 'Rein replaces only regular files; choose another path';
    super(`${file} is ${what}, not a regular file (${why})`);
    this.name = 'NotRegularTargetError';
    this.file = file;
    this.what = what;
  }
}

function kindOf(st: Stats): string {
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  if (st.isDirectory()) return 'a folder';
  return 'not a file';
}

/** Throws NotRegularTargetError unless `file` is absent or a regular file (lstat: a link is judged, not followed). */
export function refuseNonRegular(file: string): void {
  let st: Stats;
  try {
    st = lstatSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (!st.isFile()) throw new NotRegularTargetError(file, kindOf(st));
}

export function writeFileAtomic<T>(file: string, write: (fd: number) => T, opts: AtomicWriteOptions = {}): T {
  refuseNonRegular(file);
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
    // Again just before the rename: a writer may take long enough (an export) for the path to change meanwhile.
    refuseNonRegular(file);
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

/**
 * fsyncs every file under `dir`, then each directory (children first), so a power cut after a following rename finds
 * the bytes there: without it, ext4 and others may persist the rename before the data (zero-length files in a whole-
 * looking directory). Directories are opened read-only, which Linux and macOS allow fsync on.
 */
export function fsyncTree(dir: string): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) fsyncTree(p);
    else if (e.isFile()) fsyncPath(p);
  }
  fsyncPath(dir);
}

/** fsync of one file or directory by path (a directory's fsync persists its entries: a rename into it). */
export function fsyncPath(p: string): void {
  const fd = openSync(p, 'r');
  try {
    fsyncSync(fd);
  } catch (e) {
    // Windows cannot fsync a directory (EPERM/EISDIR); there the rename is what NTFS journals.
    if (!['EPERM', 'EISDIR', 'EINVAL'].includes((e as NodeJS.ErrnoException).code ?? '')) throw e;
  } finally {
    closeSync(fd);
  }
}
