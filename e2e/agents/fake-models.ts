// Fake model servers for the real-client suite: just enough of each wire API for Claude Code, Codex and OpenClaw
// to finish a turn offline. Each records every request it receives, so a test can assert that a turn cost no model
// request. Formats (notes/REAL_CLIENTS.md, and each vendor's streaming reference):
// - Anthropic Messages SSE (`POST /v1/messages?beta=true`, `HEAD /`): message_start, content_block_start,
//   content_block_delta (text_delta | input_json_delta), content_block_stop, message_delta (stop_reason), message_stop.
// - OpenAI Responses SSE (`POST /v1/responses`): response.created … response.output_text.delta … response.completed.
// - OpenAI chat completions (`POST /v1/chat/completions`): `data:` chunks ending with `data: [DONE]`.
// Scripted by content, not by call order, so the clients' extra requests (titles, probes) cannot shift a script:
// a prompt with TOOL_MARKER gets a Bash tool call first, and the request that carries its result gets the text answer.
// On the Anthropic fake, EDIT_MARKER followed by a file's absolute path gets a Read of it, then (Claude Code's Edit
// refuses a file it has not read) an Edit that replaces EDIT_OLD by EDIT_NEW, then a text answer; TEST_MARKER gets a
// Bash call of `npm test`, then an answer that claims the tests pass whatever the run printed; CLAIM_MARKER gets that
// claim at once, with no run.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export const TOOL_MARKER = 'please-run-the-echo-tool';
export const TOOL_OUTPUT = 'rein-e2e-tool-output';
export const EDIT_MARKER = 'please-edit-the-file';
export const EDIT_OLD = 'colour = "red"';
export const EDIT_NEW = 'colour = "blue"';
export const TEST_MARKER = 'please-run-the-tests';
export const CLAIM_MARKER = 'please-say-the-tests-pass';
export const TEST_CLAIM = 'I ran the tests. All tests pass.';

export interface RecordedRequest {
  method: string;
  url: string;
  at: number;
  body: unknown;
}

export interface FakeServer {
  kind: FakeKind;
  port: number;
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export type FakeKind = 'anthropic' | 'responses' | 'chat';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The answer every fake gives to a plain prompt; tests look for it in the store. */
export function answerFor(prompt: string): string {
  return `Fake answer to: ${prompt.trim().slice(0, 120)}`;
}

function textBlocks(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  return content.filter((b): b is Obj => isObj(b) && typeof b.text === 'string' && (b.type === 'text' || b.type === 'input_text')).map((b) => b.text as string);
}

// Clients wrap the human text with their own context blocks (<system-reminder>, <environment_context>, …): the
// human prompt is the last text block that is not one of those.
function humanText(blocks: string[]): string {
  const plain = blocks.filter((t) => !/^\s*</.test(t));
  return (plain.at(-1) ?? blocks.at(-1) ?? '').trim();
}

function sse(res: http.ServerResponse, events: [string | null, unknown][]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  for (const [event, data] of events) {
    res.write(`${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
  }
  res.end();
}

/** The human text of the exchange a request continues: the last user message that is not a tool result. */
function lastHumanPrompt(messages: Obj[]): string {
  for (const m of [...messages].reverse()) {
    if (m.role !== 'user') continue;
    if (Array.isArray(m.content) && (m.content as unknown[]).some((b) => isObj(b) && b.type === 'tool_result')) continue;
    return humanText(textBlocks(m.content));
  }
  return '';
}

/** The name of the tool the previous assistant message called, when it called one. */
function previousToolName(messages: Obj[]): string | null {
  const prev = messages.at(-2);
  if (prev?.role !== 'assistant' || !Array.isArray(prev.content)) return null;
  const use = (prev.content as unknown[]).filter(isObj).find((b) => b.type === 'tool_use');
  return typeof use?.name === 'string' ? use.name : null;
}

function anthropic(body: Obj, res: http.ServerResponse, n: number): void {
  const messages = Array.isArray(body.messages) ? (body.messages as Obj[]) : [];
  const last = messages.at(-1);
  const content = last?.content;
  const toolResult = Array.isArray(content) ? (content as Obj[]).find((b) => isObj(b) && b.type === 'tool_result') : undefined;
  const prompt = humanText(textBlocks(content));
  const model = typeof body.model === 'string' ? body.model : 'claude-fake';
  const id = `msg_fake_${n}`;
  const start: [string, unknown] = ['message_start', { type: 'message_start', message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } }];
  const stop = (reason: string): [string, unknown][] => [
    ['message_delta', { type: 'message_delta', delta: { stop_reason: reason, stop_sequence: null }, usage: { output_tokens: 5 } }],
    ['message_stop', { type: 'message_stop' }],
  ];
  const toolUse = (name: string, input: Obj): void =>
    sse(res, [
      start,
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: `toolu_fake_${n}`, name, input: {} } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify(input) } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ...stop('tool_use'),
    ]);
  const human = toolResult === undefined ? prompt : lastHumanPrompt(messages);
  const editPath = new RegExp(`${EDIT_MARKER} (\\S+)`).exec(human)?.[1];
  const after = toolResult === undefined ? null : previousToolName(messages);
  if (toolResult === undefined && last?.role === 'user' && prompt.includes(TOOL_MARKER)) {
    toolUse('Bash', { command: `echo ${TOOL_OUTPUT}`, description: 'Echo a marker' });
    return;
  }
  if (toolResult === undefined && last?.role === 'user' && editPath !== undefined) {
    toolUse('Read', { file_path: editPath });
    return;
  }
  if (after === 'Read' && editPath !== undefined) {
    // Claude Code 2.1's Edit input schema: file_path, old_string, new_string, replace_all (optional).
    toolUse('Edit', { file_path: editPath, old_string: EDIT_OLD, new_string: EDIT_NEW });
    return;
  }
  if (toolResult === undefined && last?.role === 'user' && prompt.includes(TEST_MARKER)) {
    toolUse('Bash', { command: 'npm test', description: 'Run the tests' });
    return;
  }
  // Claude Code appends <system-reminder> blocks to tool results; the answer quotes only what the tool printed.
  const resultText = toolResult ? humanText(textBlocks(toolResult.content)).replace(/<system-reminder>[\s\S]*?<\/system-reminder>/g, '').trim() : '';
  let text = toolResult ? `The tool printed: ${resultText}` : answerFor(prompt);
  if (after === 'Edit' && editPath !== undefined) text = `I changed the colour in ${editPath.split('/').at(-1)} to blue.`;
  if ((after === 'Bash' && human.includes(TEST_MARKER)) || (toolResult === undefined && prompt.includes(CLAIM_MARKER))) text = TEST_CLAIM;
  // Two deltas, so a client that keeps only the last chunk would be caught.
  const half = Math.ceil(text.length / 2);
  sse(res, [
    start,
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: text.slice(0, half) } }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: text.slice(half) } }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ...stop('end_turn'),
  ]);
}

function responses(body: Obj, res: http.ServerResponse, n: number): void {
  const input = Array.isArray(body.input) ? (body.input as Obj[]) : [];
  const users = input.filter((m) => isObj(m) && m.role === 'user').flatMap((m) => textBlocks(m.content));
  const text = answerFor(humanText(users));
  const model = typeof body.model === 'string' ? body.model : 'gpt-fake';
  const rid = `resp_fake_${n}`;
  const mid = `msg_fake_${n}`;
  const base = { id: rid, object: 'response', created_at: Math.floor(Date.now() / 1000), model };
  const part = { type: 'output_text', text: '', annotations: [] };
  const done = { type: 'message', id: mid, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] };
  let seq = 0;
  const ev = (type: string, data: Obj): [string, unknown] => [type, { type, sequence_number: seq++, ...data }];
  const half = Math.ceil(text.length / 2);
  sse(res, [
    ev('response.created', { response: { ...base, status: 'in_progress', output: [] } }),
    ev('response.in_progress', { response: { ...base, status: 'in_progress', output: [] } }),
    ev('response.output_item.added', { output_index: 0, item: { type: 'message', id: mid, role: 'assistant', status: 'in_progress', content: [] } }),
    ev('response.content_part.added', { item_id: mid, output_index: 0, content_index: 0, part }),
    ev('response.output_text.delta', { item_id: mid, output_index: 0, content_index: 0, delta: text.slice(0, half) }),
    ev('response.output_text.delta', { item_id: mid, output_index: 0, content_index: 0, delta: text.slice(half) }),
    ev('response.output_text.done', { item_id: mid, output_index: 0, content_index: 0, text }),
    ev('response.content_part.done', { item_id: mid, output_index: 0, content_index: 0, part: { ...part, text } }),
    ev('response.output_item.done', { output_index: 0, item: done }),
    ev('response.completed', {
      response: {
        ...base,
        status: 'completed',
        output: [done],
        usage: { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 },
      },
    }),
  ]);
}

function chat(body: Obj, res: http.ServerResponse, n: number): void {
  const messages = Array.isArray(body.messages) ? (body.messages as Obj[]) : [];
  const users = messages.filter((m) => isObj(m) && m.role === 'user').flatMap((m) => textBlocks(m.content));
  const text = answerFor(humanText(users));
  const model = typeof body.model === 'string' ? body.model : 'fake-chat';
  const id = `chatcmpl-fake-${n}`;
  const created = Math.floor(Date.now() / 1000);
  if (body.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id, object: 'chat.completion', created, model, choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }));
    return;
  }
  const chunk = (delta: Obj, finish: string | null, extra: Obj = {}) => [null, { id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra }] as [null, unknown];
  const half = Math.ceil(text.length / 2);
  sse(res, [
    chunk({ role: 'assistant', content: '' }, null),
    chunk({ content: text.slice(0, half) }, null),
    chunk({ content: text.slice(half) }, null),
    chunk({}, 'stop', { usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }),
    [null, '[DONE]'],
  ]);
}

export async function startFake(kind: FakeKind, port = 0): Promise<FakeServer> {
  const requests: RecordedRequest[] = [];
  let n = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown = raw;
      try {
        body = raw === '' ? null : JSON.parse(raw);
      } catch {
        // keep the raw text in the record
      }
      requests.push({ method: req.method ?? '', url: req.url ?? '', at: Date.now(), body });
      const url = new URL(req.url ?? '/', 'http://x');
      if (req.method === 'HEAD' || (req.method === 'GET' && url.pathname === '/')) {
        res.writeHead(200).end();
        return;
      }
      if (req.method === 'GET' && url.pathname.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [] }));
        return;
      }
      const b = isObj(body) ? body : {};
      n++;
      if (req.method === 'POST' && kind === 'anthropic' && url.pathname === '/v1/messages') return anthropic(b, res, n);
      if (req.method === 'POST' && kind === 'responses' && url.pathname === '/v1/responses') return responses(b, res, n);
      if (req.method === 'POST' && kind === 'chat' && url.pathname === '/v1/chat/completions') return chat(b, res, n);
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `fake ${kind} server: no route ${req.method} ${url.pathname}` } }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const p = (server.address() as AddressInfo).port;
  return {
    kind,
    port: p,
    url: `http://127.0.0.1:${p}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Model requests only (not HEAD probes or model listings). */
export function modelRequests(s: FakeServer): RecordedRequest[] {
  return s.requests.filter((r) => r.method === 'POST');
}

/** A bare listener that records whatever reaches a port: Rein's port after uninstall, to prove nothing calls it. */
export async function startRecorder(port: number): Promise<{ requests: RecordedRequest[]; close(): Promise<void> }> {
  const requests: RecordedRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', url: req.url ?? '', at: Date.now(), body: Buffer.concat(chunks).toString('utf8').slice(0, 2000) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
