// The capture server: plain node:http on 127.0.0.1 only. It carries captured turns (`POST /v1/turns`), every API
// verb (`POST /api/<verb>`, a one-line adapter onto `core.call`), the event stream (`GET /api/events`), a health
// check, and the built renderer's static files. Guards run in this order: Host/Origin (DNS rebinding), rate limit,
// token, content type, body size, JSON, schema; a rejected request changes nothing.
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { VERBS } from '../../common/api.ts';
import type { CaptureResult, VerbName } from '../../common/api.ts';
import { HTTP_STATUS, NotFoundError, ReinError } from '../../common/errors.ts';
import type { Core } from '../core/types.ts';
import { DEFAULT_MAX_BODY_BYTES, declaresBody, isJsonContentType, readJsonBody } from './body.ts';
import { checkHostAndOrigin, checkToken, fromAnotherSite, RateLimiter } from './guards.ts';
import { createSseHub, type SseHub } from './sse.ts';
import { serveStatic } from './static.ts';
import { parseVerbInput } from '../../common/verb-input.ts';

export interface CaptureServerOptions {
  core: Core;
  token: string;
  /** 0 picks a free port (tests). */
  port: number;
  rateLimitPerMinute: number;
  version: string;
  /** The built renderer (out/renderer); without it `/` is a 404. */
  rendererDir?: string | null;
  maxBodyBytes?: number;
  heartbeatMs?: number;
  /** One line per rejected request, with its reason. */
  log?: (line: string) => void;
  /** Agent hook routes, `POST /hooks/<name>` (node/integrations): token-checked, answered 200 with their JSON. */
  hooks?: Record<string, (body: unknown) => Promise<unknown>>;
}

export interface CaptureServer {
  readonly port: number;
  /** `http://127.0.0.1:PORT/` */
  readonly url: string;
  sseClients(): number;
  /** Stop accepting, end event streams and idle connections, wait for in-flight requests. */
  close(): Promise<void>;
}

/**
 * Requests per minute without the token (health checks, the renderer's static files, rejected calls): enough for the
 * app's own page loads, too few for a web page's flood to cost the CPU that captures need.
 */
const ANON_RATE_LIMIT_PER_MINUTE = 600;
const API_HEADERS = {
  'content-type': 'application/json; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};

/** Verb names are the keys of VERBS; `Object.hasOwn` keeps `/api/constructor` and friends out. */
/** Method and path for the log: never the query string, where a client may have put its token (`?token=`). */
function requestLine(req: IncomingMessage): string {
  return `${req.method} ${(req.url ?? '').split('?')[0]}`;
}

/** `text` with every occurrence of the token replaced. */
export function withoutToken(text: string, token: string): string {
  return token.length > 0 && text.includes(token) ? text.split(token).join('[rein token]') : text;
}

function verbOf(pathname: string): VerbName | null {
  if (pathname === '/v1/turns') return 'captureTurn';
  const name = pathname.slice('/api/'.length);
  return pathname.startsWith('/api/') && Object.hasOwn(VERBS, name) ? (name as VerbName) : null;
}

/** What one request's handling needs from the running server. */
interface Served {
  opts: CaptureServerOptions;
  log: (line: string) => void;
  maxBody: number;
  limiter: RateLimiter;
  /** Requests without the token from the user's own page (its files, /api/health) and from local clients. */
  anonLimiter: RateLimiter;
  /** Requests without the token that another site's page sent (guards.ts fromAnotherSite). */
  foreignLimiter: RateLimiter;
  sse: SseHub;
  /** The bound port (known once listening; the Host check compares against it). */
  port: () => number;
}

export async function startCaptureServer(opts: CaptureServerOptions): Promise<CaptureServer> {
  const { core, token } = opts;
  const rawLog = opts.log ?? ((line: string) => process.stderr.write(line + '\n'));
  // A request can carry the token where it does not belong (a Content-Type, a Host, a field the reply names), and
  // the rejection echoes it: no log line and no error answer ever holds it (issue #19).
  const log = (line: string) => rawLog(withoutToken(line, token));
  const limiter = new RateLimiter(opts.rateLimitPerMinute);
  const disposeSettings = core.on('settingsChanged', (changed) => {
    const n = changed['server.rateLimitPerMinute'];
    if (typeof n === 'number') limiter.setLimit(n);
  });
  let port = opts.port;
  const served: Served = {
    opts,
    log,
    maxBody: opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    limiter,
    anonLimiter: new RateLimiter(ANON_RATE_LIMIT_PER_MINUTE),
    foreignLimiter: new RateLimiter(ANON_RATE_LIMIT_PER_MINUTE),
    sse: createSseHub(core, { heartbeatMs: opts.heartbeatMs ?? 15_000, headers: { 'x-content-type-options': 'nosniff' } }),
    port: () => port,
  };

  const server: Server = createServer({ requestTimeout: 60_000, headersTimeout: 20_000 }, (req, res) => {
    handle(served, req, res)
      .catch((e: unknown) => {
        if (e instanceof ReinError) return reject(served, req, res, e);
        log(`rein server: internal error on ${requestLine(req)}: ${(e as Error)?.stack ?? String(e)}`);
        reject(served, req, res, new ReinError('internal', 'internal error (see the server log)'));
      })
      .catch(() => {
        // The error path itself failed (the log, the socket): drop this connection, never the whole server.
        res.destroy();
      });
  });
  server.keepAliveTimeout = 10_000;
  const closeIdle = trackSockets(server);
  await listenOnLoopback(server, opts.port);
  port = (server.address() as AddressInfo).port;
  server.on('error', (e) => log(`rein server: ${e.message}`));

  let closing: Promise<void> | null = null;
  return {
    port,
    url: `http://127.0.0.1:${port}/`,
    sseClients: () => served.sse.size(),
    close() {
      closing ??= new Promise<void>((resolve) => {
        disposeSettings();
        const started = performance.now();
        // In-flight requests get up to 2 s to finish; a connection is closed as soon as it is idle (one can finish
        // its response a moment after close() began), and what remains after the grace is cut.
        const sweep = setInterval(() => {
          closeIdle();
          if (performance.now() - started > 2_000) server.closeAllConnections();
        }, 25);
        server.close(() => {
          clearInterval(sweep);
          resolve();
        });
        served.sse.closeAll();
        closeIdle();
      });
      return closing;
    },
  };
}

function reject(c: Served, req: IncomingMessage, res: ServerResponse, err: ReinError, status = HTTP_STATUS[err.code], extra: Record<string, string> = {}) {
  c.log(`rein server: rejected ${requestLine(req)} with ${status} ${err.code}: ${err.message}`);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  let body: string;
  try {
    body = JSON.stringify({ error: err.toBody() });
  } catch {
    // A detail that cannot be serialised (too deep, a cycle) must not turn the reply into a crash.
    body = JSON.stringify({ error: { code: err.code, message: err.message } });
  }
  // Refused before its body was read (no token, no route, too large): close after the answer, or the server would
  // read the rest of the declared body, any size, and take the client's next request on that connection for it.
  res.writeHead(status, { ...API_HEADERS, ...(req.complete ? {} : { connection: 'close' }), ...extra });
  res.end(withoutToken(body, c.opts.token));
}

async function handle(c: Served, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const method = req.method ?? 'GET';
  const pathname = (req.url ?? '/').split('?')[0];
  const denied = checkHostAndOrigin(req.headers, c.port());
  if (denied) return reject(c, req, res, denied);
  const api = pathname.startsWith('/api/') || pathname.startsWith('/v1/') || pathname.startsWith('/hooks/');
  const health = pathname === '/api/health' && (method === 'GET' || method === 'HEAD');
  // Authenticate before rate limiting: a request without the token draws on a small bucket of its own, so a flood of
  // them can never spend the captures'. And one that another site's page sent (an <img> on any web page) draws on
  // another, so such a flood can never starve the user's own page either: its files, /api/health, the headless UI.
  const unauthorized = api && !health ? checkToken(req.headers, c.opts.token) : null;
  const bucket = api && !health && !unauthorized ? c.limiter : fromAnotherSite(req.headers) ? c.foreignLimiter : c.anonLimiter;
  const wait = bucket.take();
  if (wait > 0) {
    const err = new ReinError('rate_limited', `more than ${bucket.limit} requests per minute; retry in ${wait} s`);
    return reject(c, req, res, err, 429, { 'retry-after': String(wait) });
  }
  // A GET or HEAD body is never read (health, the event stream, static files): one that declares one gets its
  // answer on a connection that then closes, or the server would read the declared bytes as the next request.
  if ((method === 'GET' || method === 'HEAD') && declaresBody(req)) res.setHeader('connection', 'close');
  if (health) {
    res.writeHead(200, API_HEADERS);
    res.end(method === 'HEAD' ? undefined : JSON.stringify({ ok: true, version: c.opts.version }));
    return;
  }
  if (api) {
    if (unauthorized) return reject(c, req, res, unauthorized, 401, { 'www-authenticate': 'Bearer realm="rein"' });
    return handleApi(c, req, res, method, pathname);
  }
  if (c.opts.rendererDir && (method === 'GET' || method === 'HEAD')) return serveStatic(c.opts.rendererDir, pathname, method, res);
  return reject(c, req, res, new NotFoundError(`no route ${method} ${pathname}`));
}

/** An authenticated request under /api/, /v1/ or /hooks/: the event stream, a verb, or a hook. */
async function handleApi(c: Served, req: IncomingMessage, res: ServerResponse, method: string, pathname: string): Promise<void> {
  if (pathname === '/api/events' && method === 'GET') return c.sse.attach(req, res);
  const verb = verbOf(pathname);
  const hookName = pathname.slice('/hooks/'.length);
  const hooks = c.opts.hooks;
  const hook = pathname.startsWith('/hooks/') && hooks && Object.hasOwn(hooks, hookName) ? hooks[hookName] : undefined;
  if ((verb === null && hook === undefined) || method !== 'POST') return reject(c, req, res, new NotFoundError(`no route ${method} ${pathname}`));
  if (!isJsonContentType(req.headers['content-type'])) {
    const err = new ReinError('bad_input', `Content-Type must be application/json, not ${JSON.stringify(req.headers['content-type'] ?? '')}`, {
      field: 'content-type',
    });
    return reject(c, req, res, err, 415);
  }
  let body: unknown;
  try {
    body = await readJsonBody(req, c.maxBody);
  } catch (e) {
    // Refuse an oversized body without reading the rest: answer, then close the connection.
    if (e instanceof ReinError && e.code === 'too_large') return reject(c, req, res, e, 413, { connection: 'close' });
    throw e;
  }
  if (hook !== undefined) {
    // The answer first: a hook that throws (a turn it could not store) must get its error status, not a 200.
    const answer = JSON.stringify(await hook(body));
    res.writeHead(200, API_HEADERS);
    res.end(answer);
    return;
  }
  const out = await c.opts.core.call(verb!, parseVerbInput(verb!, body), 'http');
  // 202: the database was busy and the turn is in the durable spool, stored once it is free (core/spool.ts).
  const captured = pathname === '/v1/turns' ? (out as CaptureResult) : null;
  const status = captured?.spooled === true ? 202 : captured?.created === true ? 201 : 200;
  res.writeHead(status, API_HEADERS);
  res.end(JSON.stringify(out));
}

/**
 * Counts each socket's requests in progress and returns `closeIdle`, which destroys the sockets with none. Node's
 * closeIdleConnections() skips a connection that has not sent a request yet (fetch opens a spare one after an abort),
 * which would hold close() for the whole grace period.
 */
function trackSockets(server: Server): () => void {
  const sockets = new Map<Socket, number>();
  server.on('connection', (socket: Socket) => {
    sockets.set(socket, 0);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    sockets.set(socket, (sockets.get(socket) ?? 0) + 1);
    res.on('close', () => {
      if (sockets.has(socket)) sockets.set(socket, Math.max(0, (sockets.get(socket) ?? 1) - 1));
    });
  });
  return () => {
    for (const [socket, active] of sockets) if (active === 0) socket.destroy();
  };
}

function listenOnLoopback(server: Server, port: number): Promise<void> {
  return new Promise<void>((resolve, rejectListen) => {
    const onError = (e: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      rejectListen(
        e.code === 'EADDRINUSE' ? new ReinError('conflict', `port ${port} on 127.0.0.1 is already in use; set server.port or pass --port`, { cause: e }) : e,
      );
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen({ host: '127.0.0.1', port, exclusive: true });
  });
}
