// Reading a file a request names, which may be anything: /dev/zero (endless), a FIFO (open blocks the whole event
// loop until a writer comes), a 50 GB file. Opened O_NONBLOCK so a FIFO cannot block the open, refused unless it is a
// regular file (fstat on the opened fd, so a swap after the check cannot change what is read), and refused above
// `maxBytes` before anything is read (issue #21 item 7).
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

export class FileReadError extends Error {
  readonly file: string;
  constructor(file: string, message: string) {
    super(message);
    this.name = 'FileReadError';
    this.file = file;
  }
}

/** An fd on a regular file (the caller closes it), and its size. */
export function openRegular(file: string): { fd: number; size: number } {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new FileReadError(file, `${file} is not a regular file`);
    return { fd, size: st.size };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** The whole of a regular file of at most maxBytes, as UTF-8. */
export function readRegularFile(file: string, maxBytes: number): string {
  const { fd, size } = openRegular(file);
  try {
    if (size > maxBytes) throw new FileReadError(file, `${file} is ${size} bytes, more than the ${maxBytes} allowed`);
    const buf = Buffer.alloc(size);
    let off = 0;
    while (off < size) {
      const n = readSync(fd, buf, off, size - off, off);
      if (n === 0) break;
      off += n;
    }
    return buf.subarray(0, off).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
