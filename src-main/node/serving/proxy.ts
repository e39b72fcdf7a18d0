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
import { BadInputError, ReinError } from '../../common/errors.ts';
import type { Core } from '../core/types.ts';
import { DEFAULT_MAX_BODY_BYTES, isJsonContentType, readRawBody } from '../server/body.ts';
import { checkHostAndOrigin, checkToken } from '../server/guards.ts';
import { ChatRequest, CompletionRecorder, SseSplitter, sseData, turnText } from './openai.ts';
import { eventWithoutLogprobs, nullLogprobs } from './rewrite.ts';
import { mapTokens } from './tokens.ts';
import type { VocabLike } from './tokens.ts';

export type UpstreamKind = 'openai' | 'ollama' | 'vllm' | 'llama-server' | 'lmstudio' | 'rein';

export interface Upstream {
  /** The OpenAI base URL, ending in /v1 (http://127.0.0.1:11434/v1). */
  baseUrl: string;
  kind: UpstreamKind;
  /**
   * Sent as `Authorization: Bearer` to the upstream (the client's own Authorization carries the Rein token and is
   * never forwarded). null: none. Left out: the `proxy.upstreamApiKey` setting, except for Rein's own server.
   */
  apiKey?: string | null;
}

/** The response header by which Rein's own model server names the adapter version that produced a reply. */
export const ADAPTER_VERSION_HEADER = 'x-rein-adapter-version';

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
  producer: (model: string | null) => Promise<number | null>;
  /** The model name to send upstream in place of the client's, or null to keep it (producer.ts upstreamModelResolver). */
  upstreamModel?: (model: string) => string | null;
  maxBodyBytes?: number;
  /** How long no chat request must have been in flight before a turn is stored (default QUIET_MS). */
  captureQuietMs?: number;
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
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify({ error: { message, type, code: type } }));
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
  headerVersion: number | null;
  /** The model name sent upstream in place of the client's, which names the producer exactly. */
  upstreamModel: string | null;
  session: string | undefined;
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

export async function startProxyServer(opts: ProxyOptions): Promise<ProxyServer> {
  const log = opts.log ?? ((line: string) => process.stderr.write(line + '\n'));
  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const quietMs = opts.captureQuietMs ?? QUIET_MS;
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  const pending = new Set<Promise<void>>();
  let captures: Promise<void> = Promise.resolve();
  let inFlight = 0;
  /** When the last chat request was answered (performance.now()). */
  let lastEnd = -Infinity;
  /** The one capture step waiting for quiet (captures run one at a time), and the timer that looks again. */
  let waiter: { since: number; resolve: () => void } | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let dueAt = Infinity;
  let port = opts.port;

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

  function upstreamCall(up: Upstream, method: string, sub: string, headers: OutgoingHttpHeaders, body: Buffer | null): Promise<IncomingMessage> {
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
        const r = (https ? httpsRequest : httpRequest)(url, { method, headers: h, agent: https ? agents.https : agents.http }, (upRes) => {
          answered = true;
          resolve(upRes);
        });
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

  function track(p: Promise<void>): void {
    pending.add(p);
    void p.finally(() => pending.delete(p));
  }

  /** Stores the reply's turns after those queued before it, step by step as the proxy is quiet; idle() waits for them. */
  function enqueue(copy: ReplyCopy): void {
    const since = performance.now();
    const p = captures
      .then(() => capture(copy, () => quiet(since)))
      .catch((e: unknown) => log(`rein proxy: the turn was not stored: ${(e as Error)?.stack ?? String(e)}`));
    captures = p;
    track(p);
  }

  /** Settles once no chat request has been in flight for quietMs, or once `since` is MAX_WAIT_MS old. */
  function quiet(since: number): Promise<void> {
    return new Promise((resolve) => {
      waiter = { since, resolve };
      // After the I/O already waiting: a request that arrived meanwhile is in flight by then.
      setImmediate(look);
    });
  }

  function look(): void {
    if (waiter === null) return;
    const now = performance.now();
    if (now - waiter.since >= MAX_WAIT_MS || (inFlight === 0 && now - lastEnd >= quietMs)) {
      const w = waiter;
      waiter = null;
      w.resolve();
      return;
    }
    arm(now);
  }

  /** (Re)arms the timer for the earliest moment the waiting step may run. */
  function arm(now: number): void {
    if (waiter === null) return;
    const delay = inFlight > 0 ? waiter.since + MAX_WAIT_MS - now : Math.min(waiter.since + MAX_WAIT_MS, lastEnd + quietMs) - now;
    if (timer !== null) {
      if (dueAt <= now + delay) return;
      clearTimeout(timer);
    }
    dueAt = now + delay;
    timer = setTimeout(() => {
      timer = null;
      dueAt = Infinity;
      look();
    }, Math.max(0, delay));
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

  async function capture(copy: ReplyCopy, quietly: () => Promise<void>): Promise<void> {
    await quietly();
    const choices = replay(copy).recorded();
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
    let version = copy.headerVersion;
    if (version === null && t.offPolicyReason === null) {
      await quietly();
      version = await opts.producer(copy.upstreamModel ?? chat.model ?? first.model);
    }
    const id = `proxy-${randomUUID()}`;
    const single = choices.length === 1 && choices[0]![0] === 0;
    for (const [index, rec] of choices) {
      await quietly();
      const input: CaptureTurnInput = {
        source: 'proxy',
        eventId: single ? id : `${id}#${index}`,
        prompt: t.prompt,
        context: t.context,
        response: rec.content,
        ...(copy.session === undefined ? {} : { session: copy.session }),
        ...(model === null ? {} : { model }),
      };
      let offPolicy = t.offPolicyReason;
      if (offPolicy === null && version === null) offPolicy = `which adapter produced model ${JSON.stringify(chat.model ?? first.model)} is unknown`;
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
          input.adapterVersion = version!;
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

  async function chatCompletions(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
    const mapped = typeof body.model === 'string' ? (opts.upstreamModel?.(body.model) ?? null) : null;
    const sent = mapped === null ? raw : Buffer.from(JSON.stringify({ ...body, model: mapped }));

    let upRes: IncomingMessage;
    try {
      upRes = await upstreamCall(up, 'POST', '/chat/completions', { 'content-type': 'application/json', accept: req.headers.accept ?? 'application/json' }, withFields(sent, mapped === null ? body : { ...body, model: mapped }, add));
    } catch (e) {
      return sendError(res, 502, `the upstream model server at ${up.baseUrl} is not reachable: ${(e as Error).message}`, 'upstream_unreachable');
    }
    // The client went away: stop the upstream too, and store nothing.
    let aborted = false;
    res.on('close', () => {
      if (!res.writableFinished) {
        aborted = true;
        upRes.destroy();
      }
    });
    const status = upRes.statusCode ?? 502;
    const ok = status >= 200 && status < 300;
    const isSse = (upRes.headers['content-type'] ?? '').startsWith('text/event-stream');
    const headerVersion = ((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : null))(upRes.headers[ADAPTER_VERSION_HEADER]);
    const rewrite = ok && !clientLogprobs;
    const copy: ReplyCopy = { body, stream: isSse, raw: [], headerVersion, upstreamModel: mapped, session };
    const ended = (): void => {
      // Queued in the same tick as res.end(), so idle() covers it by the time the client has the whole reply.
      if (ok && !aborted) enqueue(copy);
    };

    if (rewrite && isSse) {
      // Each event as it arrives, with its logprobs set to null in place (rewrite.ts).
      res.writeHead(status, forwardHeaders(upRes.headers, true));
      const split = new SseSplitter();
      upRes.on('data', (chunk: Buffer) => {
        copy.raw.push(chunk);
        let out = '';
        for (const ev of split.push(chunk)) out += eventWithoutLogprobs(ev);
        if (out.length > 0) res.write(out);
      });
      if (!(await upstreamEnded(upRes))) return cut(res);
      const rest = split.rest();
      if (rest.length > 0) res.write(eventWithoutLogprobs(rest));
      res.end();
      ended();
    } else if (rewrite) {
      upRes.on('data', (chunk: Buffer) => copy.raw.push(chunk));
      if (!(await upstreamEnded(upRes))) return cut(res);
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
      upRes.on('data', (chunk: Buffer) => {
        res.write(chunk);
        if (ok) copy.raw.push(chunk);
      });
      if (!(await upstreamEnded(upRes))) return cut(res);
      res.end();
      ended();
    }
  }

  /** True when the upstream's reply ended whole; false when it failed or closed first (or the client went away). */
  function upstreamEnded(upRes: IncomingMessage): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      upRes.on('end', () => resolve(true));
      upRes.on('error', () => resolve(false));
      upRes.on('close', () => resolve(false));
    });
  }

  /** A reply the upstream cut off: an error when nothing was sent yet, else the client's connection is cut too. */
  function cut(res: ServerResponse): void {
    if (!res.destroyed) sendError(res, 502, 'the upstream model server closed the connection before its reply ended', 'upstream_error');
  }

  async function models(res: ServerResponse): Promise<void> {
    const up = opts.upstream();
    let upRes: IncomingMessage;
    try {
      upRes = await upstreamCall(up, 'GET', '/models', { accept: 'application/json' }, null);
    } catch (e) {
      return sendError(res, 502, `the upstream model server at ${up.baseUrl} is not reachable: ${(e as Error).message}`, 'upstream_unreachable');
    }
    res.writeHead(upRes.statusCode ?? 502, forwardHeaders(upRes.headers, false));
    upRes.pipe(res);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const pathname = (req.url ?? '/').split('?')[0];
    const denied = checkHostAndOrigin(req.headers, port);
    if (denied) return sendError(res, 403, denied.message, 'forbidden');
    const unauthorized = checkToken(req.headers, opts.token);
    if (unauthorized) return sendError(res, 401, `${unauthorized.message} (use the Rein token as the API key)`, 'invalid_api_key');
    if (pathname === '/v1/chat/completions' && req.method === 'POST') {
      inFlight++;
      try {
        return await chatCompletions(req, res);
      } finally {
        inFlight--;
        lastEnd = performance.now();
        arm(lastEnd);
      }
    }
    if (pathname === '/v1/models' && req.method === 'GET') return models(res);
    return sendError(res, 404, `no route ${req.method} ${pathname} (the proxy serves POST /v1/chat/completions and GET /v1/models)`, 'not_found');
  }

  const server: Server = createServer({ requestTimeout: 0, headersTimeout: 20_000 }, (req, res) => {
    handle(req, res).catch((e: unknown) => {
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
    disposeSettings();
    throw e;
  }
  port = (server.address() as AddressInfo).port;

  const idle = async (): Promise<void> => {
    while (pending.size > 0) await Promise.allSettled([...pending]);
  };
  let closing: Promise<void> | null = null;
  return {
    port,
    url: `http://127.0.0.1:${port}/v1`,
    idle,
    close() {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
          setTimeout(() => {
            for (const s of sockets) s.destroy();
          }, 2_000).unref();
        });
        await idle();
        disposeSettings();
        agents.http.destroy();
        agents.https.destroy();
      })();
      return closing;
    },
  };
}
