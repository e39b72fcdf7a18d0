// The capture proxy: an OpenAI-compatible endpoint on loopback (`POST /v1/chat/completions`, `GET /v1/models`) that
// forwards to an upstream model server (Ollama, vLLM, llama-server, LM Studio, or Rein's own) and stores each answer
// as a turn. It runs as its own listener rather than on the capture server: it streams raw bytes, answers GET and
// passes upstream statuses through, none of which the capture server's JSON verb pipeline does, and the model side
// can restart without dropping the agents' hooks.
//
// What the client receives is the upstream's reply, byte for byte, when it asked for logprobs itself. When it did
// not, the proxy asks upstream for them (they are the behaviour logprobs μ of an on-policy turn) and sets each
// choice's `logprobs` back to null, as upstreams send it when none were asked for. Every choice of the reply (a
// client may ask for n > 1) is stored as its own turn.
//
// Latency: the request path does only what forwarding needs. The body is parsed once (to read `logprobs` and check
// that it is a chat), and forwarded as the client's own bytes, with `"logprobs":true` spliced in before the closing
// brace when it must be added; a reply is rewritten in place (rewrite.ts), not parsed and serialised again. The full
// validation of the chat, the reading of the reply and the storing of its turns happen after the reply has ended,
// one capture at a time, each step when the proxy is quiet (QUIET_MS below), so they never hold a reply's bytes
// back. A failed capture is logged and never touches the client's reply.
import { randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, Agent as HttpAgent } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, Server, ServerResponse } from 'node:http';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { CaptureTurnInput } from '../../common/api.ts';
import { CHAT_SOURCES, type ChatSource } from '../../common/chat/arena.ts';
import { BadInputError, ReinError } from '../../common/errors.ts';
import type { Core } from '../core/types.ts';
import { DEFAULT_MAX_BODY_BYTES, declaresBody, isJsonContentType, readRawBody } from '../capture-server/body.ts';
import { checkHostAndOrigin, checkToken } from '../capture-server/guards.ts';
import { countTokens as countPromptTokens } from './count-tokens.ts';
import { agentRequest } from './agent-proxy.ts';
import type { AgentDeps } from './agent-proxy.ts';
import { SegmentMemory } from './agent-turn.ts';
import { anthropicError } from './anthropic.ts';
import { ChatRequest, CompletionRecorder, SseSplitter, sseData, turnText } from './openai.ts';
import { eventWithoutLogprobs, nullLogprobs } from './rewrite.ts';
import { mapTokens } from './tokens.ts';
import { CaptureBudget, limitReply, UPSTREAM_MAX_JSON_BYTES, UPSTREAM_MAX_STREAM_BYTES, type UpstreamTooLargeError } from './upstream-limit.ts';
import type { VocabLike } from './tokens.ts';
import type { Producer } from './producer.ts';
import { abortWhenClientLeaves, ADAPTER_VERSION_HEADER, interruptEvidence, MODEL_ID_HEADER, parseSampling, parseWeights, pinnedSampling, SAMPLING_HEADER, WEIGHTS_HEADER } from './upstream.ts';
import type { Sampling, Upstream, UpstreamKind } from './upstream.ts';

/**
 * Rein's own chat and arena (serving/chat.ts) send these so the turn the proxy stores can be found again: its source
 * (`chat` or `arena`, no other) and its event id. Any other client's turns are `proxy` turns with a random id.
 */
export const CHAT_EVENT_HEADER = 'x-rein-event-id';
export const CHAT_SOURCE_HEADER = 'x-rein-source';

export interface ProxyOptions {
  core: Core;
  token: string;
  /** 0 picks a free port. */
  port: number;
  /** Read per request, so a settings change applies to the next one. */
  upstream: () => Upstream;
  /** The served model's vocabulary, to map token text back to ids (null: no tokenizer, text-only replies go off-policy). */
  vocab: () => VocabLike | null;
  /**
   * The adapter version (0 = the base) that produced a reply of `model`, or null when unknown; the proxy asks after
   * the reply ended. A reply with no known producer is stored as off-policy text.
   */
  producer: (model: string | null) => Promise<Producer | null>;
  /** The model name to send upstream in place of the client's, or null to keep it (producer.ts upstreamModelResolver). */
  upstreamModel?: (model: string) => string | null;
  maxBodyBytes?: number;
  /** How long no chat request must have been in flight before a turn is stored (default QUIET_MS). */
  captureQuietMs?: number;
  /** How long the upstream may stay silent, before its headers or between two chunks (default UPSTREAM_IDLE_MS). */
  upstreamIdleMs?: number;
  /** The most bytes of one streamed reply passed on (default UPSTREAM_MAX_STREAM_BYTES); a whole JSON reply is held to
   *  at most UPSTREAM_MAX_JSON_BYTES. Past it the reply is cut and nothing is stored (upstream-limit.ts). */
  upstreamMaxBytes?: number;
  log?: (line: string) => void;
}

export interface ProxyServer {
  readonly port: number;
  /** `http://127.0.0.1:PORT/v1` */
  readonly url: string;
  /** Settles when every capture started so far is stored (tests, shutdown). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/** A local model may think for minutes before its first token on a long prompt; silence past this is a hung server,
 *  and the client gets a 504 instead of waiting forever (issue #21 item 6). */
export const UPSTREAM_IDLE_MS = 10 * 60_000;

class UpstreamTimeoutError extends Error {}

function keep(copy: ReplyCopy, chunk: Buffer): void {
  const k = copy.kept.take(chunk.length);
  if (k > 0) copy.raw.push(k < chunk.length ? chunk.subarray(0, k) : chunk);
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade', 'te', 'trailer']);

function forwardHeaders(h: IncomingHttpHeaders, dropLength: boolean): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined || HOP_BY_HOP.has(k)) continue;
    if (dropLength && (k === 'content-length' || k === 'content-encoding')) continue;
    out[k] = v;
  }
  return out;
}

/** An OpenAI-style error body, so OpenAI clients show the message. */
function sendError(res: ServerResponse, status: number, message: string, type: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // A request refused before its body was read (too large, no token, no such route): the connection closes after
  // the answer. Kept alive, the server would read the rest of the declared body (any size) while it waits for the
  // next request, and the next request a client sent on that connection was taken for that body and reset (found by
  // the fuzzer, issue #19).
  const unread = !res.req.complete;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...(unread ? { connection: 'close' } : {}) });
  res.end(JSON.stringify({ error: { message, type, code: type } }));
}

function sendJsonError(res: ServerResponse, status: number, body: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // Refused before its body was read: the connection closes after the answer (sendError says why).
  const unread = !res.req.complete;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...(unread ? { connection: 'close' } : {}) });
  res.end(body);
}

function parseJson(raw: Buffer): unknown {
  const text = raw.toString('utf8');
  if (text.trim() === '') throw new BadInputError('empty body: send a JSON object');
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new BadInputError(`the body is not valid JSON: ${(e as Error).message}`);
  }
}

const isWhitespace = (b: number): boolean => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/**
 * The body to send upstream: the client's own bytes, with `fields` (each set to true) added. A field the client did
 * not send at all is spliced in before the closing brace, so a long chat is not serialised again; one it did send
 * (`"logprobs": false`) is replaced through JSON, so the upstream never sees a duplicate key.
 */
export function withFields(raw: Buffer, body: Record<string, unknown>, fields: readonly string[]): Buffer {
  if (fields.length === 0) return raw;
  if (fields.some((f) => Object.hasOwn(body, f))) return Buffer.from(JSON.stringify({ ...body, ...Object.fromEntries(fields.map((f) => [f, true])) }));
  let end = raw.length - 1;
  while (end >= 0 && isWhitespace(raw[end]!)) end--;
  // The body parsed as an object with a messages field, so raw[end] is its closing brace and a comma is right.
  const insert = Buffer.from(fields.map((f) => `,${JSON.stringify(f)}:true`).join(''));
  return Buffer.concat([raw.subarray(0, end), insert, raw.subarray(end)]);
}

/** What the proxy kept of one reply to store it once the reply has ended. */
interface ReplyCopy {
  /** The client's parsed request body (validated as a chat only then). */
  body: Record<string, unknown>;
  stream: boolean;
  /** The reply's bytes as the upstream sent them (with the logprobs a rewritten reply no longer has). */
  raw: Buffer[];
  /** Rein's own model server names what produced the reply (all three, or the reply is not its own). */
  headerProducer: Producer | null;
  headerSampling: Sampling | null;
  kind: UpstreamKind;
  /** The bytes in raw; past COPY_MAX_BYTES the rest of a streamed reply is forwarded but not kept. */
  kept: CaptureBudget;
  /** The model name sent upstream in place of the client's, which names the producer exactly. */
  upstreamModel: string | null;
  session: string | undefined;
  /** Rein's own chat and arena name the turn they will look up (CHAT_EVENT_HEADER, CHAT_SOURCE_HEADER). */
  eventId: string | undefined;
  source: ChatSource | undefined;
}

/** Records every choice of a completion (one CompletionRecorder per `choices[].index`), from one reply or its chunks. */
class ChoiceRecorder {
  readonly choices = new Map<number, CompletionRecorder>();

  /** A streamed chunk (`choices[].delta`); a choice without an index is choice 0. */
  chunk(obj: unknown): void {
    this.add(obj, true);
  }

  /** A whole reply (`choices[].message`); a choice without an index is its position. */
  reply(obj: unknown): void {
    this.add(obj, false);
  }

  private add(obj: unknown, streamed: boolean): void {
    if (obj === null || typeof obj !== 'object') return;
    const { choices, ...rest } = obj as { choices?: unknown };
    if (!Array.isArray(choices)) return;
    for (const [pos, c] of (choices as unknown[]).entries()) {
      if (c === null || typeof c !== 'object') continue;
      const i = (c as { index?: unknown }).index;
      const index = Number.isInteger(i) && (i as number) >= 0 ? (i as number) : streamed ? 0 : pos;
      let rec = this.choices.get(index);
      if (rec === undefined) this.choices.set(index, (rec = new CompletionRecorder()));
      // CompletionRecorder reads choice 0: hand it this choice alone, as choice 0.
      const one = { ...rest, choices: [{ ...c, index: 0 }] };
      if (streamed) rec.chunk(one);
      else rec.reply(one);
    }
  }

  /** The choices that carried anything, by index. */
  recorded(): [number, CompletionRecorder][] {
    return [...this.choices].filter(([, r]) => r.content.length > 0 || r.entries.length > 0).sort((a, b) => a[0] - b[0]);
  }
}

/**
 * A finished reply's turns are stored while the proxy is quiet: each step of a capture (reading the reply, asking
 * which version produced it, mapping tokens, the SQLite write; about 1.5 ms in all on a 2-core machine) waits until
 * no chat request has been in flight for QUIET_MS, so the CPU time a client needs to take its reply, and the next
 * request, are not shared with it. A capture that has waited MAX_WAIT_MS since its reply ended stops waiting, so a
 * long stream or a steady load does not hold turns (and their replies' bytes) back for long.
 */
const QUIET_MS = 5;
const MAX_WAIT_MS = 1_000;

/** What the proxy's handlers share. */
interface Proxy {
  opts: ProxyOptions;
  log: (line: string) => void;
  maxBody: number;
  /** The most bytes of a streamed reply, and of a whole JSON reply (upstream-limit.ts). */
  maxStream: number;
  maxJson: number;
  upstream: UpstreamCaller;
  captures: CaptureQueue;
}

export async function startProxyServer(opts: ProxyOptions): Promise<ProxyServer> {
  const log = opts.log ?? ((line: string) => process.stderr.write(line + '\n'));
  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const upstream = await openUpstream(opts, log);
  const captures = new CaptureQueue(opts.captureQuietMs ?? QUIET_MS, log);
  const maxStream = opts.upstreamMaxBytes ?? UPSTREAM_MAX_STREAM_BYTES;
  const p: Proxy = { opts, log, maxBody, maxStream, maxJson: Math.min(maxStream, UPSTREAM_MAX_JSON_BYTES), upstream, captures };
  const agentDeps: AgentDeps = {
    core: opts.core,
    upstream: opts.upstream,
    ...(opts.upstreamModel === undefined ? {} : { upstreamModel: opts.upstreamModel }),
    vocab: opts.vocab,
    producer: opts.producer,
    maxBody,
    maxReplyBytes: maxStream,
    log,
    call: (up, sub, headers, body, signal) => upstream.call(up, 'POST', sub, headers, body, signal),
    enqueue: (job) => captures.enqueueJob(job),
    segments: new SegmentMemory(),
  };
  let port = opts.port;

  const server: Server = createServer({ requestTimeout: 120_000, headersTimeout: 20_000 }, (req, res) => {
    handle(p, agentDeps, port, req, res).catch((e: unknown) => {
      log(`rein proxy: internal error on ${req.method} ${req.url}: ${(e as Error)?.stack ?? String(e)}`);
      sendError(res, 500, 'internal error (see the Rein log)', 'internal_error');
    });
  });
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e: NodeJS.ErrnoException) =>
        reject(e.code === 'EADDRINUSE' ? new ReinError('conflict', `port ${opts.port} on 127.0.0.1 is already in use; set proxy.port or pass --port`, { cause: e }) : e),
      );
      server.listen({ host: '127.0.0.1', port: opts.port, exclusive: true }, () => resolve());
    });
  } catch (e) {
    upstream.close();
    throw e;
  }
  port = (server.address() as AddressInfo).port;

  let closing: Promise<void> | null = null;
  return {
    port,
    url: `http://127.0.0.1:${port}/v1`,
    idle: () => captures.idle(),
    close() {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
          setTimeout(() => {
            for (const s of sockets) s.destroy();
          }, 2_000).unref();
        });
        await captures.idle();
        upstream.close();
      })();
      return closing;
    },
  };
}

/** Requests to the upstream model server, with the `proxy.upstreamApiKey` setting and kept-alive connections. */
interface UpstreamCaller {
  call(up: Upstream, method: string, sub: string, headers: OutgoingHttpHeaders, body: Buffer | null, signal?: AbortSignal): Promise<IncomingMessage>;
  close(): void;
}

async function openUpstream(opts: ProxyOptions, log: (line: string) => void): Promise<UpstreamCaller> {
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  const idleMs = opts.upstreamIdleMs ?? UPSTREAM_IDLE_MS;
  // The `proxy.upstreamApiKey` setting, read once here and followed through settingsChanged, so no request waits on
  // a settings read. It is only ever put into the upstream request's Authorization header: never logged or stored.
  let settingKey: string | null = null;
  try {
    settingKey = (await opts.core.call('getSettings', {}, 'proxy'))['proxy.upstreamApiKey'];
  } catch (e) {
    log(`rein proxy: could not read the settings, so no upstream API key is set: ${(e as Error).message}`);
  }
  const disposeSettings = opts.core.on('settingsChanged', (changed) => {
    if (Object.hasOwn(changed, 'proxy.upstreamApiKey')) settingKey = changed['proxy.upstreamApiKey'] ?? null;
  });

  /** `signal` is the client's: aborted when it goes away, at any point, so no upstream socket outlives it. */
  function call(up: Upstream, method: string, sub: string, headers: OutgoingHttpHeaders, body: Buffer | null, signal?: AbortSignal): Promise<IncomingMessage> {
    const url = new URL(up.baseUrl.replace(/\/+$/, '') + sub);
    const https = url.protocol === 'https:';
    // Built from scratch: nothing of the client's headers (its Authorization is the Rein token) goes upstream.
    const h: OutgoingHttpHeaders = { ...headers };
    const key = up.apiKey !== undefined ? up.apiKey : up.kind === 'rein' ? null : settingKey;
    if (key) h.authorization = `Bearer ${key}`;
    if (body !== null) h['content-length'] = body.length;
    return new Promise((resolve, reject) => {
      const send = (again: boolean) => {
        let answered = false;
        const r = (https ? httpsRequest : httpRequest)(url, { method, headers: h, agent: https ? agents.https : agents.http, signal }, (upRes) => {
          answered = true;
          resolve(upRes);
        });
        // Socket inactivity: before the headers and between body chunks alike; the reply then ends cut (upstreamEnded).
        r.setTimeout(idleMs, () => r.destroy(new UpstreamTimeoutError(`the upstream model server sent nothing for ${idleMs / 1000} s`)));
        r.on('error', (e: NodeJS.ErrnoException) => {
          // A kept-alive connection the upstream closed as it was being reused (its idle timeout): nothing was
          // answered on it, so the request goes once more, on a new connection.
          if (again && !answered && r.reusedSocket && e.code === 'ECONNRESET') send(false);
          else reject(e);
        });
        r.end(body ?? undefined);
      };
      send(true);
    });
  }

  return {
    call,
    close() {
      disposeSettings();
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

/**
 * Stores replies' turns one after another (idle() waits for them), each step waiting until the proxy is quiet: no
 * chat request in flight for quietMs, or MAX_WAIT_MS since its reply was queued.
 */
class CaptureQueue {
  private readonly quietMs: number;
  private readonly log: (line: string) => void;
  private readonly pending = new Set<Promise<void>>();
  private captures: Promise<void> = Promise.resolve();
  private inFlight = 0;
  /** When the last chat request was answered (performance.now()). */
  private lastEnd = -Infinity;
  /** The one capture step waiting for quiet (captures run one at a time), and the timer that looks again. */
  private waiter: { since: number; resolve: () => void } | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private dueAt = Infinity;

  constructor(quietMs: number, log: (line: string) => void) {
    this.quietMs = quietMs;
    this.log = log;
  }

  /** Runs `job` after those queued before it; its `quietly()` settles when the proxy is quiet. */
  enqueueJob(job: (quietly: () => Promise<void>) => Promise<void>): void {
    const since = performance.now();
    const p = this.captures
      .then(() => job(() => this.quiet(since)))
      .catch((e: unknown) => this.log(`rein proxy: the turn was not stored: ${(e as Error)?.stack ?? String(e)}`));
    this.captures = p;
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /** A chat request: counted in flight, so captures wait until the proxy is quiet. */
  async chat(run: () => Promise<void>): Promise<void> {
    this.inFlight++;
    try {
      return await run();
    } finally {
      this.inFlight--;
      this.lastEnd = performance.now();
      this.arm(this.lastEnd);
    }
  }

  async idle(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  /** Settles once no chat request has been in flight for quietMs, or once `since` is MAX_WAIT_MS old. */
  private quiet(since: number): Promise<void> {
    return new Promise((resolve) => {
      this.waiter = { since, resolve };
      // After the I/O already waiting: a request that arrived meanwhile is in flight by then.
      setImmediate(() => this.look());
    });
  }

  private look(): void {
    if (this.waiter === null) return;
    const now = performance.now();
    if (now - this.waiter.since >= MAX_WAIT_MS || (this.inFlight === 0 && now - this.lastEnd >= this.quietMs)) {
      const w = this.waiter;
      this.waiter = null;
      w.resolve();
      return;
    }
    this.arm(now);
  }

  /** (Re)arms the timer for the earliest moment the waiting step may run. */
  private arm(now: number): void {
    if (this.waiter === null) return;
    const w = this.waiter;
    const delay = this.inFlight > 0 ? w.since + MAX_WAIT_MS - now : Math.min(w.since + MAX_WAIT_MS, this.lastEnd + this.quietMs) - now;
    if (this.timer !== null) {
      if (this.dueAt <= now + delay) return;
      clearTimeout(this.timer);
    }
    this.dueAt = now + delay;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.dueAt = Infinity;
      this.look();
    }, Math.max(0, delay));
  }
}

async function handle(p: Proxy, agentDeps: AgentDeps, port: number, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { opts } = p;
  const pathname = (req.url ?? '/').split('?')[0];
  // Anthropic clients send the key as x-api-key (ANTHROPIC_API_KEY) and want Anthropic's error shape.
  const anthropic = pathname === '/v1/messages' || pathname === '/v1/messages/count_tokens';
  const fail = (status: number, message: string, type: string) =>
    anthropic ? sendJsonError(res, status, anthropicError(status, message)) : sendError(res, status, message, type);
  const denied = checkHostAndOrigin(req.headers, port);
  if (denied) return fail(403, denied.message, 'forbidden');
  // Claude Code checks the base URL is up with `HEAD /` before its first request, without waiting for an answer.
  if (pathname === '/' && req.method === 'HEAD') return void res.writeHead(200).end();
  const apiKey = req.headers['x-api-key'];
  const headers = req.headers.authorization === undefined && typeof apiKey === 'string' ? { ...req.headers, authorization: `Bearer ${apiKey}` } : req.headers;
  const unauthorized = checkToken(headers, opts.token);
  if (unauthorized) return fail(401, `${unauthorized.message} (use the Rein token as the API key)`, 'invalid_api_key');
  if (req.method === 'POST') {
    if (pathname === '/v1/chat/completions') return p.captures.chat(() => chatCompletions(p, req, res));
    if (pathname === '/v1/messages') return p.captures.chat(() => agentRequest(agentDeps, 'anthropic', req, res));
    if (pathname === '/v1/responses') return p.captures.chat(() => agentRequest(agentDeps, 'responses', req, res));
    if (pathname === '/v1/messages/count_tokens') return countTokens(p, req, res);
  }
  if (pathname === '/v1/models' && req.method === 'GET') {
    // A GET body is never read: one that declares one gets its answer on a connection that then closes, or the
    // server would read the declared bytes as the client's next request (found by the fuzzer, issue #19).
    if (declaresBody(req)) res.setHeader('connection', 'close');
    return models(p, res);
  }
  return fail(404, `no route ${req.method} ${pathname} (the proxy serves POST /v1/chat/completions, /v1/messages, /v1/responses and GET /v1/models)`, 'not_found');
}

/** Anthropic's token count, by the served model's tokenizer (count-tokens.ts). */
async function countTokens(p: Proxy, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let body: unknown;
  try {
    body = JSON.parse((await readRawBody(req, p.maxBody)).toString('utf8'));
  } catch (e) {
    return sendJsonError(res, 400, anthropicError(400, `the body is not valid JSON: ${(e as Error).message}`));
  }
  const [status, out] = countPromptTokens(body, p.opts.vocab());
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(out);
}

async function chatCompletions(p: Proxy, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { opts, maxBody } = p;
  if (!isJsonContentType(req.headers['content-type'])) return sendError(res, 415, 'Content-Type must be application/json', 'invalid_request_error');
  let raw: Buffer;
  let parsedBody: unknown;
  try {
    raw = await readRawBody(req, maxBody);
    parsedBody = parseJson(raw);
  } catch (e) {
    const tooBig = e instanceof ReinError && e.code === 'too_large';
    return sendError(res, tooBig ? 413 : 400, (e as Error).message, 'invalid_request_error');
  }
  // Only what forwarding needs is checked here (an object with messages); the chat is validated after the reply.
  const shaped =
    parsedBody !== null && typeof parsedBody === 'object' && !Array.isArray(parsedBody) &&
    Array.isArray((parsedBody as { messages?: unknown }).messages) && (parsedBody as { messages: unknown[] }).messages.length > 0;
  if (!shaped) {
    const r = ChatRequest.safeParse(parsedBody);
    const i = r.success ? null : r.error.issues[0]!;
    return sendError(res, 400, i === null ? 'body: expected a chat' : `${i.path.map(String).join('.') || 'body'}: ${i.message}`, 'invalid_request_error');
  }
  const body = parsedBody as Record<string, unknown>;
  const up = opts.upstream();
  const clientLogprobs = body.logprobs === true;
  // vLLM extension: tokens as "token_id:N", so no vocabulary lookup is needed. Only when the client will not see them.
  const add = clientLogprobs ? [] : up.kind === 'vllm' ? ['logprobs', 'return_tokens_as_token_ids'] : ['logprobs'];
  const session = typeof req.headers['x-rein-session'] === 'string' ? req.headers['x-rein-session'] : undefined;
  const asSource = req.headers[CHAT_SOURCE_HEADER];
  const source = (CHAT_SOURCES as readonly unknown[]).includes(asSource) ? (asSource as ChatSource) : undefined;
  const asEvent = req.headers[CHAT_EVENT_HEADER];
  const eventId = source !== undefined && typeof asEvent === 'string' && /^[A-Za-z0-9._:-]{1,200}$/.test(asEvent) ? asEvent : undefined;
  const mapped = typeof body.model === 'string' ? (opts.upstreamModel?.(body.model) ?? null) : null;
  const sent = mapped === null ? raw : Buffer.from(JSON.stringify({ ...body, model: mapped }));

  // The client went away, before the upstream answered or during the reply: stop the upstream too. Only an answer it
  // was being shown is stored (interrupted, below).
  const abort = abortWhenClientLeaves(res);
  let upRes: IncomingMessage;
  try {
    upRes = await p.upstream.call(up, 'POST', '/chat/completions', { 'content-type': 'application/json', accept: req.headers.accept ?? 'application/json' }, withFields(sent, mapped === null ? body : { ...body, model: mapped }, add), abort.signal);
  } catch (e) {
    if (abort.signal.aborted) return;
    if (e instanceof UpstreamTimeoutError) return sendError(res, 504, `${e.message} (no reply from ${up.baseUrl})`, 'upstream_timeout');
    return sendError(res, 502, `the upstream model server at ${up.baseUrl} is not reachable: ${(e as Error).message}`, 'upstream_unreachable');
  }
  if (abort.signal.aborted) {
    upRes.destroy();
    return;
  }
  abort.signal.addEventListener('abort', () => upRes.destroy());
  const status = upRes.statusCode ?? 502;
  const ok = status >= 200 && status < 300;
  const isSse = (upRes.headers['content-type'] ?? '').startsWith('text/event-stream');
  const headerVersion = ((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : null))(upRes.headers[ADAPTER_VERSION_HEADER]);
  const headerModel = upRes.headers[MODEL_ID_HEADER];
  // Only Rein's own server is trusted to say what it sampled from; the headers of any other upstream are its own.
  const own = up.kind === 'rein' && headerVersion !== null && typeof headerModel === 'string' && headerModel !== '';
  const weights = parseWeights(upRes.headers[WEIGHTS_HEADER]);
  const headerProducer = own ? { modelId: headerModel, version: headerVersion, ...(weights === null ? {} : { weights }) } : null;
  const headerSampling = own ? parseSampling(upRes.headers[SAMPLING_HEADER]) : null;
  const rewrite = ok && !clientLogprobs;
  const copy: ReplyCopy = { body, stream: isSse, raw: [], kept: new CaptureBudget(), headerProducer, headerSampling, kind: up.kind, upstreamModel: mapped, session, eventId, source };
  const ended = (): void => {
    // Queued in the same tick as res.end(), so idle() covers it by the time the client has the whole reply.
    if (ok && !abort.signal.aborted) p.captures.enqueueJob((quietly) => capture(p, copy, quietly));
  };
  // The client left while the answer streamed to it (Esc in Codex or Claude Code, Stop in a chat app): the answer as far
  // as it went is stored, cut there, with an `interrupt` signal, the evidence of a weak label (common/implicit).
  // Rein's own chat and arena stop their own replies and store nothing; a reply not streamed was shown nothing.
  const interrupted = (): void => {
    if (ok && isSse && abort.signal.aborted && copy.source === undefined && copy.raw.length > 0) p.captures.enqueueJob((quietly) => capture(p, copy, quietly, true));
  };

  if (rewrite && isSse) {
    // Each event as it arrives, with its logprobs set to null in place (rewrite.ts).
    res.writeHead(status, forwardHeaders(upRes.headers, true));
    const split = new SseSplitter();
    const tooBig = limitReply(upRes, p.maxStream);
    upRes.on('data', (chunk: Buffer) => {
      keep(copy, chunk);
      let out = '';
      for (const ev of split.push(chunk)) out += eventWithoutLogprobs(ev);
      if (out.length > 0 && !res.write(out)) holdFor(res, upRes);
    });
    if (!(await upstreamEnded(upRes))) return abort.signal.aborted ? interrupted() : cut(res, tooBig());
    const rest = split.rest();
    if (rest.length > 0) res.write(eventWithoutLogprobs(rest));
    res.end();
    ended();
  } else if (rewrite) {
    const tooBig = limitReply(upRes, p.maxJson);
    upRes.on('data', (chunk: Buffer) => copy.raw.push(chunk));
    if (!(await upstreamEnded(upRes))) return cut(res, tooBig());
    const text = Buffer.concat(copy.raw).toString('utf8');
    // Not a JSON object: forwarded as it came (and nothing is recorded from it).
    const rewritten = nullLogprobs(text);
    const headers = forwardHeaders(upRes.headers, rewritten !== null && rewritten !== text);
    if (rewritten === null || rewritten === text) {
      res.writeHead(status, headers);
      res.end(copy.raw.length === 1 ? copy.raw[0] : Buffer.concat(copy.raw));
    } else {
      headers['content-length'] = Buffer.byteLength(rewritten);
      res.writeHead(status, headers);
      res.end(rewritten);
    }
    ended();
  } else {
    // The upstream's bytes, written as they arrive; a copy is kept to read the turn from once the reply has ended.
    res.writeHead(status, forwardHeaders(upRes.headers, false));
    const tooBig = limitReply(upRes, p.maxStream);
    upRes.on('data', (chunk: Buffer) => {
      if (!res.write(chunk)) holdFor(res, upRes);
      if (ok) keep(copy, chunk);
    });
    if (!(await upstreamEnded(upRes))) return abort.signal.aborted ? interrupted() : cut(res, tooBig(), isSse);
    res.end();
    ended();
  }
}

/** A client that reads slower than the upstream sends: pause the upstream until the client has drained, so its
 *  bytes wait in the kernel's buffers and not in this process's memory. */
function holdFor(res: ServerResponse, upRes: IncomingMessage): void {
  upRes.pause();
  res.once('drain', () => upRes.resume());
}

/** True when the upstream's reply ended whole; false when it failed or closed first (or the client went away). */
function upstreamEnded(upRes: IncomingMessage): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    upRes.on('end', () => resolve(true));
    upRes.on('error', () => resolve(false));
    upRes.on('close', () => resolve(false));
  });
}

/**
 * A reply the upstream cut off: an error when nothing was sent yet, else the client's connection is cut too. A
 * reply cut at the size limit ends a stream with an OpenAI-style error event (the SDKs raise it), then the connection.
 */
function cut(res: ServerResponse, tooBig: UpstreamTooLargeError | null = null, sse = true): void {
  if (res.destroyed) return;
  if (tooBig === null) return sendError(res, 502, 'the upstream model server closed the connection before its reply ended', 'upstream_error');
  if (!res.headersSent) return sendError(res, 502, tooBig.message, 'upstream_too_large');
  if (sse) res.end(`data: ${JSON.stringify({ error: { message: tooBig.message, type: 'upstream_too_large' } })}\n\n`);
  else res.destroy();
}

async function models(p: Proxy, res: ServerResponse): Promise<void> {
  const { opts } = p;
  const up = opts.upstream();
  let upRes: IncomingMessage;
  try {
    upRes = await p.upstream.call(up, 'GET', '/models', { accept: 'application/json' }, null);
  } catch (e) {
    if (e instanceof UpstreamTimeoutError) return sendError(res, 504, `${e.message} (no reply from ${up.baseUrl})`, 'upstream_timeout');
    return sendError(res, 502, `the upstream model server at ${up.baseUrl} is not reachable: ${(e as Error).message}`, 'upstream_unreachable');
  }
  res.writeHead(upRes.statusCode ?? 502, forwardHeaders(upRes.headers, false));
  limitReply(upRes, p.maxJson);
  upRes.on('error', () => res.destroy());
  upRes.pipe(res);
}

function replay(copy: ReplyCopy): ChoiceRecorder {
  const rec = new ChoiceRecorder();
  const add = (obj: unknown) => (copy.stream ? rec.chunk(obj) : rec.reply(obj));
  const parse = (data: string | null) => {
    if (data === null || data === '[DONE]') return;
    try {
      add(JSON.parse(data));
    } catch {
      // Not JSON: forwarded as it came, nothing recorded.
    }
  };
  if (copy.stream) {
    const split = new SseSplitter();
    for (const c of copy.raw) for (const ev of split.push(c)) parse(sseData(ev));
    const rest = split.rest();
    if (rest.length > 0) parse(sseData(rest));
  } else {
    parse(Buffer.concat(copy.raw).toString('utf8'));
  }
  return rec;
}

/** `interrupted`: the client left while the reply streamed; each choice is stored as far as it had come, if anywhere. */
async function capture(p: Proxy, copy: ReplyCopy, quietly: () => Promise<void>, interrupted = false): Promise<void> {
  const { opts, log } = p;
  await quietly();
  const choices = replay(copy)
    .recorded()
    .filter(([, rec]) => !interrupted || rec.content !== '');
  if (choices.length === 0) return;
  const parsed = ChatRequest.safeParse(copy.body);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    log(`rein proxy: the turn was not stored: the request is not a chat the proxy can read (${i.path.map(String).join('.') || 'body'}: ${i.message})`);
    return;
  }
  const chat = parsed.data;
  const t = turnText(chat);
  const first = choices[0]![1];
  const model = first.model ?? chat.model ?? null;
  let producer = copy.headerProducer;
  if (producer === null && t.offPolicyReason === null) {
    await quietly();
    producer = await opts.producer(copy.upstreamModel ?? chat.model ?? first.model);
  }
  const sampling: Sampling | { reason: string } = copy.headerSampling ?? pinnedSampling(copy.body, copy.kind);
  const id = copy.eventId ?? `proxy-${randomUUID()}`;
  const single = choices.length === 1 && choices[0]![0] === 0;
  for (const [index, rec] of choices) {
    await quietly();
    const input: CaptureTurnInput = {
      source: copy.source ?? 'proxy',
      eventId: single ? id : `${id}#${index}`,
      prompt: t.prompt,
      context: t.context,
      response: rec.content,
      ...(copy.session === undefined ? {} : { session: copy.session }),
      ...(model === null ? {} : { model }),
      ...(interrupted ? { interrupted: interruptEvidence(rec.entries.length || null) } : {}),
    };
    let offPolicy = t.offPolicyReason;
    if (offPolicy === null && producer === null) offPolicy = `which adapter produced model ${JSON.stringify(chat.model ?? first.model)} is unknown`;
    if (offPolicy === null && 'reason' in sampling) offPolicy = sampling.reason;
    if (offPolicy === null && !rec.logprobsComplete) offPolicy = 'the upstream did not return logprobs for every chunk';
    if (offPolicy === null) {
      const m = mapTokens(rec.entries, rec.content, opts.vocab());
      // Servers round a certain token's logprob to a hair above 0; anything clearly positive or not finite is not a logprob.
      const lps = rec.entries.map((e) => (e.logprob > 0 && e.logprob < 1e-4 ? 0 : e.logprob));
      if (!m.ok) offPolicy = m.reason;
      else if (lps.some((x) => !Number.isFinite(x) || x > 0)) offPolicy = 'the upstream returned a logprob above 0';
      else {
        input.tokens = m.ids;
        input.logprobs = lps;
        input.adapterVersion = producer!.version;
        input.policy = { modelId: producer!.modelId, ...(sampling as Sampling), ...(producer!.weights === undefined ? {} : { weights: producer!.weights }) };
      }
    }
    if (offPolicy !== null) log(`rein proxy: stored as off-policy text${single ? '' : ` (choice ${index})`}: ${offPolicy}`);
    await quietly();
    try {
      await opts.core.call('captureTurn', input, 'proxy');
    } catch (e) {
      log(`rein proxy: the turn was not stored: ${(e as Error).message}`);
    }
  }
}
