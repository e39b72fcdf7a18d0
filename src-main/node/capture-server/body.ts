// Reading a JSON request body under a size limit. The limit is checked against Content-Length before a byte is
// read, and again while streaming (chunked bodies), so an oversized body is refused without being buffered.
import type { IncomingMessage } from 'node:http';
import { BadInputError, ReinError } from '../../common/errors.ts';

export const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;

/** `application/json`, optionally with parameters (`; charset=utf-8`). RFC 8259 JSON is UTF-8. */
export function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false;
  const [type, ...params] = value.split(';').map((s) => s.trim().toLowerCase());
  if (type !== 'application/json') return false;
  return params.every((p) => !p.startsWith('charset=') || p === 'charset=utf-8' || p === 'charset="utf-8"');
}

/** Whether a request says a body follows (its Content-Length, or chunks). */
export function declaresBody(req: IncomingMessage): boolean {
  return Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
}

export function tooLarge(max: number): ReinError {
  return new ReinError('too_large', `request body is larger than ${max} bytes`, { detail: { maxBytes: max } });
}

/** The body's bytes, refused (too_large) past `max` before or while reading; the capture proxy forwards these as they are. */
export function readRawBody(req: IncomingMessage, max: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > max) return Promise.reject(tooLarge(max));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const fail = (e: unknown) => {
      if (done) return;
      done = true;
      req.pause();
      reject(e);
    };
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > max) {
        fail(tooLarge(max));
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', fail);
    req.on('aborted', () => fail(new ReinError('bad_input', 'the client aborted the request body')));
    req.on('end', () => {
      if (done) return;
      done = true;
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    });
  });
}

export async function readJsonBody(req: IncomingMessage, max: number): Promise<unknown> {
  const text = (await readRawBody(req, max)).toString('utf8');
  if (text.trim() === '') throw new BadInputError('empty body: send a JSON object ({} when the verb takes no input)');
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new BadInputError(`the body is not valid JSON: ${(e as Error).message}`);
  }
}
