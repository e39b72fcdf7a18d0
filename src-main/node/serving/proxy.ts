// The capture proxy: an OpenAI-compatible endpoint on loopback (`POST /v1/chat/completions`, `GET /v1/models`) that
// forwards to an upstream model server (Ollama, vLLM, llama-server, LM Studio, or Rein's own) and stores each answer
// as a turn. It runs as its own listener rather than on the capture server: it streams raw bytes, answers GET and
// passes upstream statuses through, none of which the capture server's JSON verb pipeline does, and the model side
// can restart without dropping the agents' hooks.
//
// What the client receives is the upstream's reply, byte for byte, when it asked for logprobs itself. When it did
// not, the proxy asks upstream for them (they are the behaviour logprobs μ of an on-policy turn) and sets each
// choice's `logprobs` back to null, as upstreams send it when none were asked for. The turn is stored once the reply
// has ended; a failed capture is logged and never touches the client's reply.
import { randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, Agent as HttpAgent } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, Server, ServerResponse } from 'node:http';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { CaptureTurnInput } from '../../common/api.ts';
import { ReinError } from '../../common/errors.ts';
import type { Core } from '../core/types.ts';
import { DEFAULT_MAX_BODY_BYTES, isJsonContentType, readJsonBody } from '../server/body.ts';
import { checkHostAndOrigin, checkToken } from '../server/guards.ts';
import { ChatRequest, CompletionRecorder, SseSplitter, sseData, turnText, withoutLogprobs } from './openai.ts';
import { mapTokens } from './tokens.ts';
import type { VocabLike } from './tokens.ts';

export type UpstreamKind = 'openai' | 'ollama' | 'vllm' | 'llama-server' | 'lmstudio' | 'rein';

export interface Upstream {
  /** The OpenAI base URL, ending in /v1 (http://127.0.0.1:11434/v1). */
  baseUrl: string;
  kind: UpstreamKind;
  /** Sent as `Authorization: Bearer` to the upstream (the client's own Authorization carries the Rein token and is never forwarded). */
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
  maxBodyBytes?: number;
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

export async function startProxyServer(opts: ProxyOptions): Promise<ProxyServer> {
  const log = opts.log ?? ((line: string) => process.stderr.write(line + '\n'));
  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  const pending = new Set<Promise<void>>();
  let port = opts.port;

  function upstreamCall(up: Upstream, method: string, sub: string, headers: OutgoingHttpHeaders, body: Buffer | null): Promise<IncomingMessage> {
    const url = new URL(up.baseUrl.replace(/\/+$/, '') + sub);
    const https = url.protocol === 'https:';
    const h: OutgoingHttpHeaders = { ...headers };
    if (up.apiKey) h.authorization = `Bearer ${up.apiKey}`;
    if (body !== null) h['content-length'] = body.length;
    return new Promise((resolve, reject) => {
      const r = (https ? httpsRequest : httpRequest)(url, { method, headers: h, agent: https ? agents.https : agents.http }, resolve);
      r.on('error', reject);
      r.end(body ?? undefined);
    });
  }

  function track(p: Promise<void>): void {
    pending.add(p);
    void p.finally(() => pending.delete(p));
  }

  async function capture(chat: ChatRequest, rec: CompletionRecorder, headerVersion: number | null, session: string | undefined): Promise<void> {
    const t = turnText(chat);
    const input: CaptureTurnInput = {
      source: 'proxy',
      eventId: `proxy-${randomUUID()}`,
      prompt: t.prompt,
      context: t.context,
      response: rec.content,
      ...(session === undefined ? {} : { session }),
      ...((rec.model ?? chat.model) ? { model: (rec.model ?? chat.model)! } : {}),
    };
    let offPolicy = t.offPolicyReason;
    const version = headerVersion ?? (offPolicy === null ? await opts.producer(chat.model ?? rec.model) : null);
    if (offPolicy === null && version === null) offPolicy = `which adapter produced model ${JSON.stringify(chat.model ?? rec.model)} is unknown`;
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
    if (offPolicy !== null) log(`rein proxy: stored as off-policy text: ${offPolicy}`);
    try {
      await opts.core.call('captureTurn', input, 'proxy');
    } catch (e) {
      log(`rein proxy: the turn was not stored: ${(e as Error).message}`);
    }
  }

  async function chatCompletions(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!isJsonContentType(req.headers['content-type'])) return sendError(res, 415, 'Content-Type must be application/json', 'invalid_request_error');
    let body: unknown;
    try {
      body = await readJsonBody(req, maxBody);
    } catch (e) {
      const tooBig = e instanceof ReinError && e.code === 'too_large';
      return sendError(res, tooBig ? 413 : 400, (e as Error).message, 'invalid_request_error');
    }
    const parsed = ChatRequest.safeParse(body);
    if (!parsed.success) {
      const i = parsed.error.issues[0]!;
      return sendError(res, 400, `${i.path.map(String).join('.') || 'body'}: ${i.message}`, 'invalid_request_error');
    }
    const chat = parsed.data;
    const up = opts.upstream();
    const clientLogprobs = chat.logprobs === true;
    const sent: Record<string, unknown> = { ...(body as Record<string, unknown>) };
    if (!clientLogprobs) {
      sent.logprobs = true;
      // vLLM extension: tokens as "token_id:N", so no vocabulary lookup is needed. Only when the client will not see them.
      if (up.kind === 'vllm') sent.return_tokens_as_token_ids = true;
    }
    const session = typeof req.headers['x-rein-session'] === 'string' ? req.headers['x-rein-session'] : undefined;

    let upRes: IncomingMessage;
    try {
      upRes = await upstreamCall(up, 'POST', '/chat/completions', { 'content-type': 'application/json', accept: req.headers.accept ?? 'application/json' }, Buffer.from(JSON.stringify(sent)));
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
    const rec = new CompletionRecorder();
    const rewrite = ok && !clientLogprobs;

    if (isSse) {
      res.writeHead(status, forwardHeaders(upRes.headers, rewrite));
      const split = new SseSplitter();
      const onEvent = (ev: string): string => {
        const data = sseData(ev);
        if (data === null || data === '[DONE]') return ev;
        let obj: unknown;
        try {
          obj = JSON.parse(data);
        } catch {
          return ev;
        }
        rec.chunk(obj);
        if (!rewrite) return ev;
        const end = /(\r\n\r\n|\n\n|\r\r)$/.exec(ev)?.[0] ?? '\n\n';
        return `data: ${JSON.stringify(withoutLogprobs(obj))}${end}`;
      };
      upRes.on('data', (chunk: Buffer) => {
        const events = split.push(chunk);
        if (rewrite) {
          const out = events.map(onEvent).join('');
          if (out.length > 0) res.write(out);
        } else {
          // Unchanged bytes, written as they arrive; the recorder reads a decoded copy.
          res.write(chunk);
          for (const ev of events) onEvent(ev);
        }
      });
      await new Promise<void>((resolve) => {
        upRes.on('end', () => {
          const rest = split.rest();
          if (rest.length > 0) {
            const r = onEvent(rest);
            if (rewrite) res.write(r);
          }
          res.end();
          resolve();
        });
        upRes.on('error', () => {
          res.destroy();
          resolve();
        });
        upRes.on('close', () => resolve());
      });
    } else {
      const chunks: Buffer[] = [];
      for await (const c of upRes) chunks.push(c as Buffer);
      const raw = Buffer.concat(chunks);
      let out: Buffer | string = raw;
      if (ok) {
        try {
          const obj = JSON.parse(raw.toString('utf8')) as unknown;
          rec.reply(obj);
          if (rewrite) out = JSON.stringify(withoutLogprobs(obj));
        } catch {
          // Not JSON: forwarded as it came, nothing recorded.
        }
      }
      res.writeHead(status, forwardHeaders(upRes.headers, out !== raw));
      res.end(out);
    }
    if (!ok || aborted || rec.content.length === 0 && rec.entries.length === 0) return;
    track(capture(chat, rec, headerVersion, session));
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
    if (pathname === '/v1/chat/completions' && req.method === 'POST') return chatCompletions(req, res);
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
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(e.code === 'EADDRINUSE' ? new ReinError('conflict', `port ${opts.port} on 127.0.0.1 is already in use; set proxy.port or pass --port`, { cause: e }) : e),
    );
    server.listen({ host: '127.0.0.1', port: opts.port, exclusive: true }, () => resolve());
  });
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
        agents.http.destroy();
        agents.https.destroy();
      })();
      return closing;
    },
  };
}
