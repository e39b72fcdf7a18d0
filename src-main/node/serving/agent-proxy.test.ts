// The proxy's agent endpoints (Anthropic Messages, OpenAI Responses) against a scripted OpenAI-compatible upstream
// that calls a shell tool and then answers, with logprobs and ids, and the real SQLite core. Contract: each stream's
// events follow the published sequence (Anthropic "Streaming Messages"; OpenAI "Streaming responses"), and a tool
// turn is stored once, with the tokens and μ of both replies.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Turn } from '../../common/domain.ts';
import { createCore } from '../core/core.ts';
import type { ReinCore } from '../core/core.ts';
import { tokenizerSourceDir } from '../engine/tiny.ts';
import { loadTokenizer } from '../engine/tokenizer.ts';
import type { ReinTokenizer } from '../engine/tokenizer.ts';
import { resolveHome } from '../home.ts';
import { sseData, SseSplitter } from './openai.ts';
import { producerResolver } from './producer.ts';
import { startProxyServer } from './proxy.ts';
import type { ProxyServer } from './proxy.ts';
import { startAgentUpstream, TOOL_MARKER, TOOL_OUTPUT } from './test-utils/fake-agent-upstream.ts';
import { interruptEvidence } from './upstream.ts';
import type { AgentUpstream } from './test-utils/fake-agent-upstream.ts';

const TOKEN = 'b'.repeat(64);
let tok: ReinTokenizer;
let dir: string;
let core: ReinCore;
let upstream: AgentUpstream;
let proxy: ProxyServer;
const logs: string[] = [];

beforeAll(() => {
  tok = loadTokenizer(tokenizerSourceDir('qwen2'));
});

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'rein-agent-proxy-'));
  core = createCore({ home: resolveHome({ REIN_HOME: dir }) });
  await core.call('setSettings', { values: { 'proxy.baseModelName': 'fake-model' } }, 'test');
  logs.length = 0;
  upstream = await startAgentUpstream({ encode: (t) => tok.encode(t), pieceOf: (id) => tok.decode([id]) });
  const up = upstream;
  proxy = await startProxyServer({ core, token: TOKEN, port: 0, upstream: () => ({ baseUrl: up.url, kind: 'openai' }), vocab: () => tok, producer: producerResolver(core), log: (l) => logs.push(l) });
});

afterEach(async () => {
  await proxy.close();
  await upstream.close();
  core.close();
  rmSync(dir, { recursive: true, force: true });
  expect(logs.filter((l) => l.includes('internal error'))).toEqual([]);
});

type Ev = { event: string | null; data: Record<string, unknown> };

async function events(res: Response): Promise<Ev[]> {
  const split = new SseSplitter();
  const out: Ev[] = [];
  const all = [...split.push(new Uint8Array(await res.arrayBuffer())), split.rest()].filter((e) => e.trim() !== '');
  for (const e of all) {
    const name = /^event: (.*)$/m.exec(e)?.[1] ?? null;
    out.push({ event: name, data: JSON.parse(sseData(e)!) as Record<string, unknown> });
  }
  return out;
}

const post = (route: string, body: unknown, headers: Record<string, string> = { 'x-api-key': TOKEN }) =>
  fetch(`http://127.0.0.1:${proxy.port}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

async function onlyTurn(): Promise<Turn> {
  await proxy.idle();
  const page = await core.call('listTurns', {}, 'test');
  expect(page.total).toBe(1);
  return core.call('getTurn', { turnId: page.items[0]!.id }, 'test');
}

const SAMPLING = { temperature: 1, top_p: 1 };

describe('POST /v1/messages (Anthropic Messages)', () => {
  const bash = { name: 'Bash', description: 'Run a shell command', input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } };
  const first = {
    model: 'fake-model',
    max_tokens: 512,
    stream: true,
    system: [{ type: 'text', text: 'You are Claude Code.' }],
    tools: [bash],
    metadata: { user_id: JSON.stringify({ device_id: 'd', session_id: 'sess-claude-1' }) },
    messages: [
      { role: 'user', content: [{ type: 'text', text: '<system-reminder>ctx</system-reminder>' }, { type: 'text', text: `${TOOL_MARKER} and say what it printed` }] },
      // Claude Code 2.1.330 sends its environment as a system message after the prompt.
      { role: 'system', content: [{ type: 'text', text: '# Environment' }] },
    ],
    ...SAMPLING,
  };

  // Anthropic "Streaming Messages": message_start, then per block content_block_start, deltas (pings may come
  // anywhere), content_block_stop; then message_delta and message_stop.
  const GRAMMAR = /^message_start( ping)*( content_block_start( ping| content_block_delta)* content_block_stop( ping)*)* message_delta message_stop$/;

  it('streams a tool call and then the answer in the published event sequence, and stores the turn once with tokens and μ of both replies', async () => {
    const r1 = await post('/v1/messages', first);
    expect(r1.status).toBe(200);
    expect(r1.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const e1 = await events(r1);
    expect(e1.map((e) => e.event).join(' ')).toMatch(GRAMMAR);
    for (const e of e1) expect(e.data.type).toBe(e.event);
    const start = e1.find((e) => e.event === 'content_block_start')!.data.content_block as Record<string, unknown>;
    expect(start).toMatchObject({ type: 'tool_use', name: 'Bash', input: {} });
    const json = e1.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta as { type: string; partial_json: string });
    expect(json.every((d) => d.type === 'input_json_delta')).toBe(true);
    expect(JSON.parse(json.map((d) => d.partial_json).join(''))).toEqual({ command: `echo ${TOOL_OUTPUT}` });
    expect(e1.find((e) => e.event === 'message_delta')!.data.delta).toEqual({ stop_reason: 'tool_use', stop_sequence: null });
    const msg = e1[0]!.data.message as Record<string, unknown>;
    expect(msg).toMatchObject({ type: 'message', role: 'assistant', model: 'fake-model', content: [], stop_reason: null });
    // Nothing is stored for a step.
    await proxy.idle();
    expect((await core.call('listTurns', {}, 'test')).total).toBe(0);

    // The upstream got the tools as OpenAI functions and the system prompt as a system message.
    const sent = upstream.requests[0]!;
    expect(sent.tools).toEqual([{ type: 'function', function: { name: 'Bash', description: 'Run a shell command', parameters: bash.input_schema } }]);
    expect((sent.messages as { role: string }[]).map((m) => m.role)).toEqual(['system', 'user']);
    expect((sent.messages as unknown[])[0]).toEqual({ role: 'system', content: 'You are Claude Code.\n\n# Environment' });
    expect(sent).toMatchObject({ stream: true, logprobs: true, max_tokens: 512 });

    const id = start.id as string;
    const second = {
      ...first,
      messages: [
        ...first.messages,
        { role: 'assistant', content: [{ type: 'tool_use', id, name: 'Bash', input: { command: `echo ${TOOL_OUTPUT}` } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: `${TOOL_OUTPUT}\n` }, { type: 'text', text: '<system-reminder>r</system-reminder>' }] },
      ],
    };
    const r2 = await post('/v1/messages', second);
    const e2 = await events(r2);
    expect(e2.map((e) => e.event).join(' ')).toMatch(GRAMMAR);
    expect(e2.find((e) => e.event === 'content_block_start')!.data.content_block).toEqual({ type: 'text', text: '' });
    const text = e2.filter((e) => e.event === 'content_block_delta').map((e) => (e.data.delta as { type: string; text: string }).text).join('');
    expect(text).toBe(`The tool printed: ${TOOL_OUTPUT}`);
    expect(e2.find((e) => e.event === 'message_delta')!.data).toMatchObject({ delta: { stop_reason: 'end_turn' }, usage: { output_tokens: upstream.replies[1]!.ids.length } });
    const toolMsgs = (upstream.requests[1]!.messages as { role: string; tool_call_id?: string; tool_calls?: unknown[] }[]).filter((m) => m.role === 'tool' || m.tool_calls);
    expect(toolMsgs.map((m) => m.role)).toEqual(['assistant', 'tool']);
    expect(toolMsgs[1]!.tool_call_id).toBe(id);

    const t = await onlyTurn();
    expect(t).toMatchObject({ source: 'claude-code', session: 'sess-claude-1', prompt: `${TOOL_MARKER} and say what it printed`, response: `The tool printed: ${TOOL_OUTPUT}`, onPolicy: true, adapterVersion: 0 });
    expect(t.tokens).toEqual(upstream.replies[1]!.ids);
    expect(t.logprobs).toEqual(upstream.replies[1]!.logprobs.map(Math.fround));
    expect(t.context.map((c) => [c.role, c.type ?? null])).toEqual([['assistant', 'tool_use'], ['tool', 'tool_result'], ['user', null]]);
    expect(t.context[0]).toMatchObject({ name: 'Bash', content: JSON.stringify({ command: `echo ${TOOL_OUTPUT}` }), tokens: upstream.replies[0]!.ids, logprobs: upstream.replies[0]!.logprobs });
    expect(tok.decode(t.context[0]!.tokens as number[])).toBe(upstream.replies[0]!.text);

    // The same final request again (a client's retry) stores nothing new.
    await (await post('/v1/messages', second)).arrayBuffer();
    await onlyTurn();
  });

  it('Esc while the answer streams: the answer as far as it came is stored with an interrupt signal; a call being written is not', async () => {
    await proxy.close();
    await upstream.close();
    upstream = await startAgentUpstream({ encode: (t) => tok.encode(t), pieceOf: (id) => tok.decode([id]), chunkDelayMs: 40 });
    const up = upstream;
    proxy = await startProxyServer({ core, token: TOKEN, port: 0, upstream: () => ({ baseUrl: up.url, kind: 'openai' }), vocab: () => tok, producer: producerResolver(core), log: (l) => logs.push(l) });
    const leaveAfter = async (body: unknown, until: RegExp): Promise<void> => {
      const ac = new AbortController();
      const res = await fetch(`http://127.0.0.1:${proxy.port}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN }, body: JSON.stringify(body), signal: ac.signal });
      const reader = res.body!.getReader();
      let seen = '';
      while (!until.test(seen)) seen += new TextDecoder().decode((await reader.read()).value);
      ac.abort();
      await new Promise((r) => setTimeout(r, 40 * 30));
      await proxy.idle();
    };
    await leaveAfter({ ...first, messages: [{ role: 'user', content: 'Explain why the build fails on the second step of the pipeline.' }] }, /"text_delta"/);
    const t = await onlyTurn();
    const whole = upstream.replies[0]!.text;
    expect(t).toMatchObject({ source: 'claude-code', session: 'sess-claude-1', prompt: 'Explain why the build fails on the second step of the pipeline.', onPolicy: true });
    expect(t.response.length).toBeGreaterThan(0);
    expect(t.response.length).toBeLessThan(whole.length);
    expect(whole.startsWith(t.response)).toBe(true);
    expect(tok.decode(t.tokens!)).toBe(t.response);
    const { signals } = await core.call('turnSignals', { turnId: t.id }, 'test');
    expect(signals).toMatchObject([{ kind: 'interrupt', evidence: interruptEvidence(t.tokens!.length) }]);

    // A tool call's text is held back until it is whole: the client saw nothing of it, and nothing more is stored.
    await leaveAfter(first, /message_start/);
    await onlyTurn();
  });

  it('answers a request without stream with one Message object; the API defaults (temperature 1, no top_p) are sent upstream, so μ holds', async () => {
    const { temperature: _t, top_p: _p, ...unpinned } = first;
    const r = await post('/v1/messages', { ...unpinned, stream: false, tools: undefined, messages: [{ role: 'user', content: 'What is two and two?' }] });
    expect(upstream.requests[0]).toMatchObject({ temperature: 1, top_p: 1 });
    expect(r.status).toBe(200);
    const m = (await r.json()) as Record<string, unknown>;

    expect(m).toMatchObject({ type: 'message', role: 'assistant', model: 'fake-model', stop_reason: 'end_turn', stop_sequence: null, content: [{ type: 'text', text: 'Answer to: What is two and two?' }] });
    expect(m.id).toMatch(/^msg_/);
    const t = await onlyTurn();
    expect(t).toMatchObject({ source: 'claude-code', context: [], onPolicy: true });
  });

  it("answers errors in Anthropic's shape: a wrong key, a bad body, an upstream failure", async () => {
    const wrong = await post('/v1/messages', first, { 'x-api-key': 'nope' });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const bad = await post('/v1/messages', { model: 'fake-model', messages: [] });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/max_tokens|messages/) } });
    upstream.failNext = 500;
    const down = await post('/v1/messages', first);
    expect(down.status).toBe(502);
    expect(await down.json()).toMatchObject({ type: 'error', error: { type: 'api_error', message: expect.stringContaining('scripted failure') } });
  });

  it('count_tokens answers an input_tokens count', async () => {
    const r = await post('/v1/messages/count_tokens', { model: 'fake-model', messages: first.messages });
    expect(r.status).toBe(200);
    expect(((await r.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(0);
  });
});

describe('POST /v1/responses (OpenAI Responses)', () => {
  const shell = { type: 'function', name: 'shell', description: 'Runs a command', strict: false, parameters: { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } } }, required: ['command'] } };
  const first = {
    model: 'fake-model',
    instructions: 'You are Codex.',
    stream: true,
    tools: [shell, { type: 'web_search' }],
    prompt_cache_key: 'thread-1',
    input: [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<environment_context>cwd</environment_context>' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: `${TOOL_MARKER} please` }] },
    ],
    ...SAMPLING,
  };
  // OpenAI "Streaming responses": created, in_progress, then per output item added … done, then completed.
  const ITEM = '(response\\.output_item\\.added( response\\.content_part\\.added( response\\.output_text\\.delta)* response\\.output_text\\.done response\\.content_part\\.done|( response\\.function_call_arguments\\.delta)* response\\.function_call_arguments\\.done) response\\.output_item\\.done)';
  const GRAMMAR = new RegExp(`^response\\.created response\\.in_progress( ${ITEM})* response\\.completed$`);

  it('streams a function call and then the answer in the published event sequence, and stores the turn once with tokens and μ', async () => {
    const e1 = await events(await post('/v1/responses', first, { authorization: `Bearer ${TOKEN}`, session_id: 'codex-sess' }));
    expect(e1.map((e) => e.event).join(' ')).toMatch(GRAMMAR);
    expect(e1.map((e) => e.data.sequence_number)).toEqual(e1.map((_, i) => i));
    for (const e of e1) expect(e.data.type).toBe(e.event);
    const item = e1.find((e) => e.event === 'response.output_item.done')!.data.item as Record<string, unknown>;
    expect(item).toMatchObject({ type: 'function_call', name: 'shell', status: 'completed' });
    expect(JSON.parse(item.arguments as string)).toEqual({ command: ['bash', '-lc', `echo ${TOOL_OUTPUT}`] });
    const done = e1.at(-1)!.data.response as Record<string, unknown>;
    expect(done).toMatchObject({ status: 'completed', output: [item] });
    expect((done.usage as { output_tokens: number }).output_tokens).toBe(upstream.replies[0]!.ids.length);
    expect((upstream.requests[0]!.tools as unknown[]).length).toBe(1);

    const second = {
      ...first,
      input: [
        ...first.input,
        { type: 'function_call', call_id: item.call_id, name: 'shell', arguments: item.arguments },
        { type: 'function_call_output', call_id: item.call_id, output: `Exit code: 0\nOutput:\n${TOOL_OUTPUT}\n` },
      ],
    };
    const e2 = await events(await post('/v1/responses', second, { authorization: `Bearer ${TOKEN}`, session_id: 'codex-sess' }));
    expect(e2.map((e) => e.event).join(' ')).toMatch(GRAMMAR);
    const text = e2.filter((e) => e.event === 'response.output_text.delta').map((e) => e.data.delta).join('');
    expect(text).toBe(`The tool printed: ${TOOL_OUTPUT}`);
    expect(e2.find((e) => e.event === 'response.output_text.done')!.data.text).toBe(text);

    const t = await onlyTurn();
    expect(t).toMatchObject({ source: 'codex', session: 'codex-sess', prompt: `${TOOL_MARKER} please`, response: text, onPolicy: true });
    expect(t.tokens).toEqual(upstream.replies[1]!.ids);
    expect(t.context.map((c) => [c.role, c.type ?? null, c.name ?? null])).toEqual([['assistant', 'tool_use', 'shell'], ['tool', 'tool_result', 'shell']]);
    expect(t.context[0]!.tokens).toEqual(upstream.replies[0]!.ids);
  });

  it('answers a request without stream with one response object', async () => {
    const r = await post('/v1/responses', { model: 'fake-model', input: 'Hello there', ...SAMPLING }, { authorization: `Bearer ${TOKEN}` });
    const body = (await r.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ object: 'response', status: 'completed', output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Answer to: Hello there' }] }] });
  });

  it("answers errors in OpenAI's shape", async () => {
    const bad = await post('/v1/responses', { input: 'x' }, { authorization: `Bearer ${TOKEN}` });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringContaining('model') } });
  });
});

describe('implicit signals through the agent route', () => {
  it("Claude Code's next prompt after the user put back the file its turn edited: a revert on that turn", async () => {
    const project = mkdtempSync(path.join(tmpdir(), 'rein-agent-project-'));
    const file = path.join(project, 'stats.ts');
    const ORIGINAL = 'export const mean = (xs: number[]) => sum(xs) / xs.length;\n';
    const edit = { old_string: 'sum(xs) / xs.length', new_string: '(xs.length ? sum(xs) / xs.length : 0)' };
    try {
      // Claude Code 2.1 names its working directory in a reminder beside the prompt.
      const ask = (prompt: string) => ({
        role: 'user',
        content: [
          { type: 'text', text: `<system-reminder>\n# Environment\nYou have been invoked in the following environment: \n - Primary working directory: ${project}\n - Is a git repository: false\n</system-reminder>` },
          { type: 'text', text: prompt },
        ],
      });
      const base = {
        model: 'fake-model',
        max_tokens: 512,
        stream: true,
        system: [{ type: 'text', text: 'You are Claude Code.' }],
        tools: [{ name: 'Edit', description: 'Edit a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' } } } }],
        metadata: { user_id: JSON.stringify({ device_id: 'd', session_id: 'sess-revert' }) },
        ...SAMPLING,
      };
      // The turn as its last request holds it: the prompt, the Edit the client ran (the file is edited), the result.
      writeFileSync(file, ORIGINAL.replace(edit.old_string, edit.new_string));
      const steps = [
        ask('make mean() return 0 for an empty array'),
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_e1', name: 'Edit', input: { file_path: file, ...edit } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_e1', content: 'The file has been updated.' }] },
      ];
      await events(await post('/v1/messages', { ...base, messages: steps }));
      await proxy.idle();
      const [first] = (await core.call('listTurns', {}, 'test')).items;
      expect(first).toMatchObject({ source: 'claude-code', session: 'sess-revert' });
      // The user puts the file back, then asks for something else. The model answers the new prompt with a tool call,
      // a step that stores no turn: the prompt's arrival is what checks the file.
      writeFileSync(file, ORIGINAL);
      await events(await post('/v1/messages', { ...base, messages: [...steps, { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] }, ask(`${TOOL_MARKER} now`)] }));
      await proxy.idle();
      expect((await core.call('listTurns', {}, 'test')).total).toBe(1);
      const out = await core.call('turnSignals', { turnId: first!.id }, 'test');
      expect(out.signals.find((x) => x.kind === 'revert')).toMatchObject({ evidence: "you reverted the agent's edit of stats.ts within 1 min", detail: { tools: ['Edit'] } });
      expect(out.label).toMatchObject({ value: 'bad', rule: 'reverted' });
      expect(readFileSync(file, 'utf8')).toBe(ORIGINAL);
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });


  it("Codex's next turn runs npm test and it fails: a contradiction on the answer that said all tests pass", async () => {
    const headers = { authorization: `Bearer ${TOKEN}`, session_id: 'codex-sess' };
    const env = { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<environment_context>cwd</environment_context>' }] };
    // The scripted upstream answers "Answer to: <prompt>", so the prompt carries the claim its answer makes.
    const ask = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Fixed the empty-array case. All tests pass.' }] };
    const base = { model: 'fake-model', instructions: 'You are Codex.', stream: true, ...SAMPLING };
    await events(await post('/v1/responses', { ...base, input: [env, ask] }, headers));
    await proxy.idle();
    const [first] = (await core.call('listTurns', {}, 'test')).items;
    expect(first!.responsePreview).toContain('All tests pass.');
    const red = 'Exit code: 1\nWall time: 2.1 seconds\nOutput:\n FAIL  src/stats.test.ts > mean > of an empty array\n      Tests  1 failed | 41 passed (42)\n';
    const next = [
      env,
      ask,
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: first!.responsePreview }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'add a test for NaN inputs' }] },
      { type: 'function_call', call_id: 'call_1', name: 'shell', arguments: JSON.stringify({ command: ['bash', '-lc', 'npm test'] }) },
      { type: 'function_call_output', call_id: 'call_1', output: red },
    ];
    await events(await post('/v1/responses', { ...base, input: next }, headers));
    await proxy.idle();
    const turns = (await core.call('listTurns', {}, 'test')).items;
    expect(turns).toHaveLength(2);
    const second = turns.find((t) => t.id !== first!.id)!;
    const out = await core.call('turnSignals', { turnId: first!.id }, 'test');
    expect(out.signals.map((s) => s.kind)).toEqual(['contradiction', 'followup']);
    expect(out.signals[0]).toMatchObject({
      fromTurnId: second.id,
      evidence: 'the answer said "All tests pass.", but `npm test` then failed: FAIL  src/stats.test.ts > mean > of an empty array',
      detail: { source: 'codex', later: true },
    });
    expect(out.label).toMatchObject({ value: 'bad', rule: 'contradicted', signalId: out.signals[0]!.id });
    expect(out.explanation).toMatch(/^Rein read this as Bad because the answer said "All tests pass\.", but `npm test` then failed: FAIL/);
  });
});
