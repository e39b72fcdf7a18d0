// Server-Sent Events for every core event (WHATWG HTML, "Server-sent events": `event:` and `data:` lines ended by a
// blank line; lines starting with ':' are comments, used here as heartbeats so idle proxies and clients see traffic).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { EVENT_NAMES } from '../../common/api.ts';
import type { Core } from '../core/types.ts';

export interface SseHub {
  attach(req: IncomingMessage, res: ServerResponse): void;
  /** Connected clients. */
  size(): number;
  /** End every stream (server shutdown). */
  closeAll(): void;
}

export function formatEvent(name: string, payload: unknown): string {
  // JSON.stringify never emits a raw newline, so the payload is a single `data:` line.
  return `event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`;
}

export function createSseHub(core: Core, opts: { heartbeatMs: number; headers: Record<string, string> }): SseHub {
  const clients = new Set<() => void>();
  return {
    attach(req, res) {
      res.writeHead(200, {
        ...opts.headers,
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      res.write('retry: 2000\n: connected\n\n');
      req.socket.setNoDelay(true);
      const disposers = EVENT_NAMES.map((name) => core.on(name, (payload) => res.write(formatEvent(name, payload))));
      const heartbeat = setInterval(() => res.write(': heartbeat\n\n'), opts.heartbeatMs);
      heartbeat.unref();
      let closed = false;
      const dispose = () => {
        if (closed) return;
        closed = true;
        clearInterval(heartbeat);
        for (const d of disposers) d();
        clients.delete(dispose);
        if (!res.writableEnded) res.end();
      };
      clients.add(dispose);
      // The response's 'close' fires when the client goes away as well as when we end it. (The request's own
      // 'close' fires once its empty body is read, so it cannot tell us the client left.)
      res.on('close', dispose);
    },
    size: () => clients.size,
    closeAll() {
      for (const d of [...clients]) d();
    },
  };
}
