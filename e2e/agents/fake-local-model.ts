// A scripted stand-in for the user's local model server, for the agents-on-the-local-model suite: OpenAI chat
// completions (what Rein's proxy forwards Claude Code's and Codex's requests to), streamed, with each sampled
// token's logprob and id as llama-server reports them. A chat whose human prompt holds TOOL_MARKER and that
// declares a shell tool gets a call to that tool (its raw text `<tool_call>{…}</tool_call>` as the sampled tokens,
// the parsed call in `delta.tool_calls`, as a tool-parsing server sends it); a chat whose model turn was followed by
// a tool result gets "The tool printed: <the marker line>"; a chat whose prompt holds SLOW_MARKER gets a long answer
// streamed a piece every SLOW_PIECE_MS, stopping when the client leaves (for interrupting a client mid-answer); any
// other chat gets answerFor(prompt).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerFor, TOOL_MARKER, TOOL_OUTPUT } from './fake-models.ts';
import type { RecordedRequest } from './fake-models.ts';

type Obj = Record<string, unknown>;

/** A prompt holding this gets SLOW_ANSWER, streamed slowly: a client can be interrupted while it arrives. */
export const SLOW_MARKER = 'walk me slowly through every step of the release checklist';
const SLOW_PIECE_MS = 60;
export interface SlowAnswer {
  started: number;
  sent: number;
  total: number;
  clientLeft: boolean;
}
export const SLOW_ANSWER = Array.from({ length: 40 }, (_, i) => `Step ${i + 1}: check the item, then note what you saw.`).join(' ');
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface LocalModel {
  url: string;
  requests: RecordedRequest[];
  /**
   * The latest slow answer: how many have started (`started`, counting this one), its pieces written so far, and whether
   * its client left before the end (null: none started).
   */
  slow(): SlowAnswer | null;
  /** Chat requests only. */
  chats(): Obj[];
  close(): Promise<void>;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as unknown[]).filter(isObj).filter((p) => typeof p.text === 'string').map((p) => p.text as string).join('\n');
}

/** The shell tool a client declared and the arguments that run `echo TOOL_OUTPUT` with it. */
function shellCall(tools: Obj[]): { name: string; arguments: string } | null {
  for (const t of tools) {
    const fn = isObj(t.function) ? t.function : {};
    const name = String(fn.name ?? '');
    if (!/^(bash|shell|shell_command|exec_command)$/i.test(name)) continue;
    const props = (isObj(fn.parameters) && isObj(fn.parameters.properties) ? fn.parameters.properties : {}) as Obj;
    const key = ['command', 'cmd'].find((k) => k in props);
    if (key === undefined) continue;
    const cmd = `echo ${TOOL_OUTPUT}`;
    const value = isObj(props[key]) && (props[key] as Obj).type === 'array' ? ['bash', '-lc', cmd] : cmd;
    return { name, arguments: JSON.stringify({ [key]: value }) };
  }
  return null;
}

/** The answer (or call) for a chat, by its content. */
function script(body: Obj): { text: string; call: { name: string; arguments: string } | null } {
  const messages = Array.isArray(body.messages) ? (body.messages as Obj[]) : [];
  const lastModel = messages.findLastIndex((m) => m.role === 'assistant');
  const result = lastModel < 0 ? undefined : messages.slice(lastModel + 1).findLast((m) => m.role === 'tool');
  if (result !== undefined) {
    const line = textOf(result.content).split('\n').find((l) => l.includes(TOOL_OUTPUT)) ?? textOf(result.content);
    return { text: `The tool printed: ${line.replace(/<[^>]+>/g, '').trim()}`, call: null };
  }
  const users = messages.filter((m) => m.role === 'user').map((m) => textOf(m.content));
  const prompt = users.flatMap((u) => u.split('\n')).filter((l) => !/^\s*</.test(l) && l.trim() !== '').at(-1) ?? '';
  const call = prompt.includes(TOOL_MARKER) ? shellCall(Array.isArray(body.tools) ? (body.tools as Obj[]) : []) : null;
  if (call !== null) return { text: `<tool_call>\n{"name": ${JSON.stringify(call.name)}, "arguments": ${call.arguments}}\n</tool_call>`, call };
  if (prompt.includes(SLOW_MARKER)) return { text: SLOW_ANSWER, call: null };
  return { text: answerFor(prompt), call: null };
}

export async function startLocalModel(): Promise<LocalModel> {
  const requests: RecordedRequest[] = [];
  // A toy vocabulary: every distinct 3-character piece gets the next id, so each reply has stable token ids.
  const vocab = new Map<string, number>();
  const idOf = (piece: string) => {
    let id = vocab.get(piece);
    if (id === undefined) vocab.set(piece, (id = 100 + vocab.size));
    return id;
  };
  let n = 0;
  let slow: SlowAnswer | null = null;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = raw === '' ? null : JSON.parse(raw);
      } catch {
        body = raw;
      }
      requests.push({ method: req.method ?? '', url: req.url ?? '', at: Date.now(), body });
      const url = new URL(req.url ?? '/', 'http://x');
      if (req.method === 'GET' && url.pathname.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: 'rein-local', object: 'model' }] }));
        return;
      }
      if (req.method !== 'POST' || url.pathname !== '/v1/chat/completions' || !isObj(body)) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `no route ${req.method} ${url.pathname}` } }));
        return;
      }
      const { text, call } = script(body);
      const pieces = text.match(/[\s\S]{1,3}/g) ?? [];
      const id = `chatcmpl-local-${++n}`;
      const model = typeof body.model === 'string' ? body.model : 'rein-local';
      const send = (choice: Obj, extra: Obj = {}) => res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', model, choices: [{ index: 0, finish_reason: null, ...choice }], ...extra })}\n\n`);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      send({ delta: { role: 'assistant', content: '' }, logprobs: null });
      const piece = (i: number, p: string) => {
        const lp = { content: [{ id: idOf(p), token: p, logprob: -(0.01 + 0.01 * (i % 5)), bytes: [...Buffer.from(p, 'utf8')], top_logprobs: [] }] };
        send({ delta: call === null ? { content: p } : {}, logprobs: lp });
      };
      if (text === SLOW_ANSWER) {
        const state: SlowAnswer = { started: (slow?.started ?? 0) + 1, sent: 0, total: pieces.length, clientLeft: false };
        slow = state;
        res.on('close', () => (state.clientLeft = !res.writableFinished));
        void (async () => {
          for (const [i, p] of pieces.entries()) {
            if (state.clientLeft) return;
            piece(i, p);
            state.sent = i + 1;
            await new Promise((r) => setTimeout(r, SLOW_PIECE_MS));
          }
          if (state.clientLeft) return;
          send({ delta: {}, finish_reason: 'stop' });
          res.end('data: [DONE]\n\n');
        })();
        return;
      }
      for (const [i, p] of pieces.entries()) piece(i, p);
      if (call !== null) send({ delta: { tool_calls: [{ index: 0, id: `call_local_${n}`, type: 'function', function: { name: call.name, arguments: call.arguments } }] } });
      send({ delta: {}, finish_reason: call === null ? 'stop' : 'tool_calls' });
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', model, choices: [], usage: { prompt_tokens: 100, completion_tokens: pieces.length, total_tokens: 100 + pieces.length } })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    slow: () => (slow === null ? null : { ...slow }),
    chats: () => requests.filter((r) => r.method === 'POST' && r.url.startsWith('/v1/chat/completions')).map((r) => r.body as Obj),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
