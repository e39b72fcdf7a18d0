// A small OpenAI-compatible upstream for the proxy's tests and benchmark: it answers every chat with one fixed reply,
// tokenised with a real tokenizer, streamed as one SSE chunk per token or sent whole, with logprobs when asked.
// `style` picks how tokens are named: llama-server adds each token's id, vLLM writes "token_id:N" when
// return_tokens_as_token_ids is set, OpenAI/Ollama give text and bytes only.
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeUpstreamOptions {
  reply: string;
  /** Token ids of `reply` and a decoder for one id. */
  ids: number[];
  pieceOf: (id: number) => string;
  style: 'llama-server' | 'vllm' | 'openai';
  model?: string;
  /** Milliseconds between streamed chunks (0: as fast as the socket takes them). */
  chunkDelayMs?: number;
  /** Extra response headers (e.g. x-rein-adapter-version). */
  headers?: Record<string, string>;
}

export interface FakeUpstream {
  readonly url: string;
  /** Parsed request bodies, in order. */
  readonly requests: Record<string, unknown>[];
  /** The exact bytes of each reply body sent, in order. */
  readonly replies: Buffer[];
  readonly logprobs: number[];
  close(): Promise<void>;
}

const utf8 = new TextEncoder();

export async function startFakeUpstream(opts: FakeUpstreamOptions): Promise<FakeUpstream> {
  const requests: Record<string, unknown>[] = [];
  const replies: Buffer[] = [];
  const model = opts.model ?? 'fake-model';
  const logprobs = opts.ids.map((_, i) => -(0.05 + 0.01 * i));
  // Decoded once: a real server has each piece at hand, so the fake should not spend a tokenizer call per token.
  const pieces = new Map(opts.ids.map((id) => [id, opts.pieceOf(id)]));
  const pieceOf = (id: number): string => pieces.get(id)!;
  let n = 0;

  const entry = (i: number, asIds: boolean) => {
    const id = opts.ids[i]!;
    const piece = pieceOf(id);
    const e: Record<string, unknown> = {
      token: asIds ? `token_id:${id}` : piece,
      logprob: logprobs[i],
      bytes: Array.from(utf8.encode(piece)),
      top_logprobs: [],
    };
    if (opts.style === 'llama-server') e.id = id;
    return e;
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = req.url ?? '/';
    if (req.method === 'GET' && url === '/v1/models') {
      const body = Buffer.from(JSON.stringify({ object: 'list', data: [{ id: model, object: 'model', owned_by: 'fake' }] }));
      replies.push(body);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
      return;
    }
    if (req.method !== 'POST' || url !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"not found"}}');
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    requests.push(body);
    if (!Array.isArray(body.messages)) {
      const b = Buffer.from(JSON.stringify({ error: { message: "'messages' is a required property", type: 'invalid_request_error' } }));
      replies.push(b);
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(b);
      return;
    }
    const withLp = body.logprobs === true;
    const asIds = opts.style === 'vllm' && body.return_tokens_as_token_ids === true;
    const id = `chatcmpl-${++n}`;
    const created = 1_700_000_000 + n;
    if (body.stream === true) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...opts.headers });
      const sent: Buffer[] = [];
      const write = (s: string) => {
        const b = Buffer.from(s);
        sent.push(b);
        res.write(b);
      };
      for (let i = 0; i < opts.ids.length; i++) {
        const chunk = {
          id,
          object: 'chat.completion.chunk',
          created,
          model,
          choices: [{ index: 0, delta: { ...(i === 0 ? { role: 'assistant' } : {}), content: pieceOf(opts.ids[i]!) }, logprobs: withLp ? { content: [entry(i, asIds)] } : null, finish_reason: null }],
        };
        write(`data: ${JSON.stringify(chunk)}\n\n`);
        if (opts.chunkDelayMs) await new Promise((r) => setTimeout(r, opts.chunkDelayMs));
      }
      write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }] })}\n\n`);
      write('data: [DONE]\n\n');
      replies.push(Buffer.concat(sent));
      res.end();
      return;
    }
    const reply = {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: opts.reply },
          logprobs: withLp ? { content: opts.ids.map((_, i) => entry(i, asIds)) } : null,
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 5, completion_tokens: opts.ids.length, total_tokens: 5 + opts.ids.length },
    };
    const b = Buffer.from(JSON.stringify(reply));
    replies.push(b);
    res.writeHead(200, { 'content-type': 'application/json', ...opts.headers });
    res.end(b);
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      res.writeHead(500);
      res.end(String(e));
    });
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    replies,
    logprobs,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
