// A scripted OpenAI-compatible upstream for the agent endpoints' tests: a chat whose last user message holds
// TOOL_MARKER, with tools declared, gets a call to the first tool whose name looks like a shell (Qwen's
// `<tool_call>` text, tokenised, streamed one token a chunk with its logprob and id as llama-server does, and the
// parsed call in `delta.tool_calls`, as vLLM's and llama-server's tool parsers send it); a chat that ends in a tool
// result gets "The tool printed: <result>"; any other gets "Answer to: <prompt>".
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const TOOL_MARKER = 'please-run-the-echo-tool';
export const TOOL_OUTPUT = 'rein-tool-output';

export interface AgentUpstreamOptions {
  encode: (text: string) => number[];
  pieceOf: (id: number) => string;
  model?: string;
  headers?: Record<string, string>;
  /** A pause before each token's chunk, as a model sampling it would take. */
  chunkDelayMs?: number;
}

export interface AgentUpstream {
  readonly url: string;
  readonly requests: Record<string, unknown>[];
  /** Per reply: the sampled text (the call's raw text for a call), its ids and their logprobs. */
  readonly replies: { text: string; ids: number[]; logprobs: number[] }[];
  /** The next reply fails with this status (once). */
  failNext: number | null;
  close(): Promise<void>;
}

type Obj = Record<string, unknown>;
const utf8 = new TextEncoder();

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as Obj[]).filter((p) => typeof p?.text === 'string').map((p) => p.text as string).join('\n');
}

/** The command a shell tool takes: an array of argv for Codex's `shell`, a string for Claude's Bash. */
function shellArgs(tool: Obj): Obj {
  const props = ((tool.function as Obj)?.parameters as Obj)?.properties as Obj | undefined;
  const cmd = props?.command as Obj | undefined;
  return cmd?.type === 'array' ? { command: ['bash', '-lc', `echo ${TOOL_OUTPUT}`] } : { command: `echo ${TOOL_OUTPUT}` };
}

export async function startAgentUpstream(o: AgentUpstreamOptions): Promise<AgentUpstream> {
  const requests: Obj[] = [];
  const replies: AgentUpstream['replies'] = [];
  const model = o.model ?? 'fake-model';
  let n = 0;
  const state = { failNext: null as number | null };

  function script(body: Obj): { text: string; call: { name: string; arguments: string } | null } {
    const messages = Array.isArray(body.messages) ? (body.messages as Obj[]) : [];
    // The results after the model's last message (an agent may add its own text beside them).
    const lastAssistant = messages.findLastIndex((m) => m.role === 'assistant');
    const last = lastAssistant < 0 ? undefined : messages.slice(lastAssistant + 1).findLast((m) => m.role === 'tool');
    if (last !== undefined) {
      const out = textOf(last.content).replace(/<system-reminder>[\s\S]*?<\/system-reminder>/g, '').trim();
      // Codex wraps a shell result in its own lines ("Exit code: 0", "Output:"); the answer quotes the marker line.
      const line = out.split('\n').find((l) => l.includes(TOOL_OUTPUT)) ?? out;
      return { text: `The tool printed: ${line.trim()}`, call: null };
    }
    const users = messages.filter((m) => m.role === 'user').map((m) => textOf(m.content));
    const prompt = (users.at(-1) ?? '').trim();
    const tools = Array.isArray(body.tools) ? (body.tools as Obj[]) : [];
    const shell = tools.find((t) => /^(bash|shell|exec_command|local_shell)$/i.test(String((t.function as Obj)?.name ?? ''))) ?? tools[0];
    if (prompt.includes(TOOL_MARKER) && shell !== undefined) {
      const name = String((shell.function as Obj).name);
      const args = JSON.stringify(shellArgs(shell));
      return { text: `<tool_call>\n{"name": ${JSON.stringify(name)}, "arguments": ${args}}\n</tool_call>`, call: { name, arguments: args } };
    }
    const plain = prompt.split('\n').filter((l) => !/^\s*</.test(l)).join(' ').trim();
    return { text: `Answer to: ${plain.slice(0, 80)}`, call: null };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (req.method === 'GET' && (req.url ?? '').endsWith('/models')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: model, object: 'model' }] }));
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Obj;
    requests.push(body);
    if (state.failNext !== null) {
      const status = state.failNext;
      state.failNext = null;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'scripted failure', type: 'server_error' } }));
      return;
    }
    const { text, call } = script(body);
    const ids = o.encode(text);
    const logprobs = ids.map((_, i) => -(0.02 + 0.01 * (i % 7)));
    replies.push({ text, ids, logprobs });
    const id = `chatcmpl-agent-${++n}`;
    const chunk = (delta: Obj, extra: Obj = {}) => `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', model, choices: [{ index: 0, delta, finish_reason: null, ...extra }] })}\n\n`;
    res.writeHead(200, { 'content-type': 'text/event-stream', ...o.headers });
    res.write(chunk({ role: 'assistant', content: '' }, { logprobs: null }));
    for (const [i, tid] of ids.entries()) {
      const piece = o.pieceOf(tid);
      const lp = { content: [{ id: tid, token: piece, logprob: logprobs[i], bytes: Array.from(utf8.encode(piece)), top_logprobs: [] }] };
      if (o.chunkDelayMs) await new Promise((r) => setTimeout(r, o.chunkDelayMs));
      if (res.destroyed) return;
      // A call's text is held back by the server's tool parser: its tokens come with empty deltas.
      res.write(chunk(call === null ? { content: piece } : {}, { logprobs: lp }));
    }
    if (call !== null) {
      const half = Math.ceil(call.arguments.length / 2);
      res.write(chunk({ tool_calls: [{ index: 0, id: `call_up_${n}`, type: 'function', function: { name: call.name, arguments: '' } }] }));
      res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: call.arguments.slice(0, half) } }] }));
      res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: call.arguments.slice(half) } }] }));
    }
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', model, choices: [{ index: 0, delta: {}, finish_reason: call === null ? 'stop' : 'tool_calls' }] })}\n\n`);
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', model, choices: [], usage: { prompt_tokens: 50, completion_tokens: ids.length, total_tokens: 50 + ids.length } })}\n\n`);
    res.end('data: [DONE]\n\n');
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      res.writeHead(500).end(String(e));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    replies,
    get failNext() {
      return state.failNext;
    },
    set failNext(v: number | null) {
      state.failNext = v;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
