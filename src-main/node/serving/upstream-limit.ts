// How much of one upstream reply the proxy takes (issue #19 item 5). A model server that streams without end would
// otherwise hold the client, and the capture, forever; one that sends an endless JSON body would fill memory, since a
// whole (non-streamed) reply is read before it is rewritten. Past the limit the upstream connection is destroyed with
// an UpstreamTooLargeError, the reply ends as cut (the client gets an error, nothing is stored).
import type { IncomingMessage } from 'node:http';

/** A streamed reply: far above any real answer (a 2 GB stream still passes whole, proxy-upstream.test.ts). */
export const UPSTREAM_MAX_STREAM_BYTES = 4 * 1024 ** 3;
/** A whole JSON reply, held in memory to rewrite: a chat completion is kilobytes; this is thousands of times that. */
export const UPSTREAM_MAX_JSON_BYTES = 64 * 1024 ** 2;

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
