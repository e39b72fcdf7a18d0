// How much of one upstream reply the proxy takes (issue #19 item 5). A model server that streams without end would
// otherwise hold the client, and the capture, forever; one that sends an endless JSON body would fill memory, since a
// whole (non-streamed) reply is read before it is rewritten. Past the limit the upstream connection is destroyed with
// an UpstreamTooLargeError, the reply ends as cut (the client gets an error, nothing is stored).
import type { IncomingMessage } from 'node:http';

/** A streamed reply: far above any real answer (a 2 GB stream still passes whole, proxy-upstream.test.ts). */
export const UPSTREAM_MAX_STREAM_BYTES = 4 * 1024 ** 3;
/** A whole JSON reply, held in memory to rewrite: a chat completion is kilobytes; this is thousands of times that. */
export const UPSTREAM_MAX_JSON_BYTES = 64 * 1024 ** 2;

/**
 * The most of one streamed reply kept to read its turn from (the chat route's raw bytes; the agent routes' text,
 * tool calls and logprobs, read as the bytes arrive); the client still gets every byte. A turn's text is capped far
 * below this when stored (capture.maxTextChars), so a 2 GB reply need not cost 2 GB of memory.
 */
export const COPY_MAX_BYTES = 32 * 1024 * 1024;

/** What one reply has kept for its capture, against COPY_MAX_BYTES. */
export class CaptureBudget {
  bytes = 0;
  /** True once a chunk did not fit whole: the rest of the reply is forwarded but not kept. */
  capped = false;

  /** How many of a chunk's `n` bytes may be kept (all, some, or 0 once capped). */
  take(n: number): number {
    if (this.capped) return 0;
    const room = COPY_MAX_BYTES - this.bytes;
    if (n > room) this.capped = true;
    const k = Math.min(n, room);
    this.bytes += k;
    return k;
  }
}

export class UpstreamTooLargeError extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`the upstream model server's reply passed ${limit >= 1024 ** 3 ? `${limit / 1024 ** 3} GiB` : `${Math.round(limit / 1024 ** 2)} MiB`}, the most Rein takes from one reply; it was cut there`);
    this.name = 'UpstreamTooLargeError';
    this.limit = limit;
  }
}

/**
 * Counts the reply's bytes and destroys it past `limit`. Call it in the same tick as the caller's own 'data' listener,
 * so attaching this one (which starts the flow) loses no chunk. Returns a getter for the error that cut it, if any.
 */
export function limitReply(upRes: IncomingMessage, limit: number): () => UpstreamTooLargeError | null {
  let bytes = 0;
  let cut: UpstreamTooLargeError | null = null;
  upRes.on('data', (c: Buffer) => {
    bytes += c.length;
    if (bytes > limit && cut === null) {
      cut = new UpstreamTooLargeError(limit);
      upRes.destroy(cut);
    }
  });
  return () => cut;
}
