// Agents on Rein's own model server: the tools an agent declares are rendered through the model's own chat template
// (Qwen3's, with the real tokenizer, on a tiny generated model in llama.cpp), a history of tool calls and results
// renders in the template's format, and an Anthropic and a Responses turn through the proxy complete and are stored
// with the served tokens and their μ.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCore } from '../core/core.ts';
import type { ReinCore } from '../core/core.ts';
import { hfToGguf } from '../engine/gguf/convert.ts';
import { writeTinyModel } from '../engine/tiny.ts';
import { loadTokenizer } from '../engine/tokenizer.ts';
import type { ReinTokenizer } from '../engine/tokenizer.ts';
import { resolveHome } from '../home.ts';
import { startModelServer, turnStopIds } from './embedded.ts';
import type { ModelServer } from './embedded.ts';
import { sseData, SseSplitter } from './openai.ts';
import { producerResolver } from './producer.ts';
import { startProxyServer } from './proxy.ts';
import type { ProxyServer } from './proxy.ts';

const TOKEN = 'd'.repeat(64);
let root: string;
let core: ReinCore;
let tok: ReinTokenizer;
let ms: ModelServer;
let proxy: ProxyServer;
const logs: string[] = [];

const BASH = { type: 'function', function: { name: 'Bash', description: 'Run a shell command in the sandbox', parameters: { type: 'object', properties: { command: { type: 'string' } } } } };

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'rein-embedded-agents-'));
  const modelDir = path.join(root, 'tiny');
  writeTinyModel(modelDir, { arch: 'qwen3', layers: 1, hidden: 32, heads: 2, kvHeads: 1, intermediate: 64, std: 0.2 });
  const gguf = path.join(root, 'tiny-f32.gguf');
  hfToGguf(modelDir, gguf);
  core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'home') }) });
  await core.call('setSettings', { values: { 'model.active': modelDir, 'training.auto': false } }, 'test');
  tok = loadTokenizer(modelDir);
  ms = await startModelServer({ core, token: TOKEN, port: 0, gguf, contextSize: 1024, threads: 1, log: () => {} });
  proxy = await startProxyServer({ core, token: TOKEN, port: 0, upstream: () => ({ baseUrl: ms.url, apiKey: TOKEN, kind: 'rein' }), vocab: () => tok, producer: producerResolver(core), log: (l) => logs.push(l) });
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await ms?.close();
  core?.close();
  rmSync(root, { recursive: true, force: true });
});

describe("tools through the model's own chat template", () => {
  it('renders the declared tools, a call and its result in the template format', () => {
    const text = tok.renderChat(
      [
        { role: 'user', content: 'list files' },
        { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'Bash', arguments: { command: 'ls' } } }] },
        { role: 'tool', content: 'a.txt' },
      ],
      { addGenerationPrompt: true, tools: [BASH] },
    );
    expect(text).toContain('Run a shell command in the sandbox');
    expect(text).toMatch(/<tool_call>\s*\{"name": "Bash", "arguments": \{"command": "ls"\}\}\s*<\/tool_call>/);
    expect(text).toMatch(/<tool_response>\s*a\.txt\s*<\/tool_response>/);
    expect(tok.renderChat([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true })).not.toContain('Run a shell command');
  });
});

/** The SSE events of a reply, parsed. */
async function events(res: Response): Promise<Record<string, unknown>[]> {
  const split = new SseSplitter();
  return [...split.push(new Uint8Array(await res.arrayBuffer())), split.rest()]
    .map((e) => sseData(e))
    .filter((d): d is string => d !== null && d !== '[DONE]')
    .map((d) => JSON.parse(d) as Record<string, unknown>);
}

const CHAT = [{ role: 'user' as const, content: 'list files' }];

describe('the model server with tools declared', () => {
  it('streams the text as it is sampled and reports the prompt tokens the template gave', async () => {
    const body = { model: 'tiny', messages: CHAT, tools: [BASH], stream: true, stream_options: { include_usage: true }, max_tokens: 24, seed: 7 };
    const res = await fetch(`${ms.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    const prompt = tok.encodeChat(CHAT, { addGenerationPrompt: true, tools: [BASH] }).length;
    expect(res.headers.get('x-rein-prompt-tokens')).toBe(String(prompt));
    const evs = await events(res);
    type Choice = { delta: { content?: string }; finish_reason: string | null };
    const choices = evs.map((e) => (e.choices as Choice[])[0]);
    const finishAt = choices.findIndex((c) => c?.finish_reason != null);
    expect(finishAt).toBeGreaterThan(0);
    const texts = choices.slice(0, finishAt).filter((c) => (c?.delta.content ?? '') !== '');
    process.stderr.write(`chat tools-declared stream: ${JSON.stringify({ chunks: evs.length, contentDeltasBeforeFinish: texts.length, toolCallChunks: choices.filter((c) => 'tool_calls' in (c?.delta ?? {})).length, usageChunks: evs.filter((e) => e.usage != null).length })}\n`);
    expect(texts.length).toBeGreaterThanOrEqual(2);
    expect(evs.at(-1)!.usage).toEqual({ prompt_tokens: prompt, completion_tokens: expect.any(Number), total_tokens: expect.any(Number) });
    expect(prompt).toBeGreaterThan(0);
  }, 60_000);

  it("stops on the chat template's turn markers, not only the tokenizer's end of turn", () => {
    const stops = turnStopIds(tok);
    for (const t of ['<|im_end|>', '<|im_start|>']) expect(stops.has(tok.tokenToId(t)!)).toBe(true);
    for (const id of tok.encode('assistant\n')) expect(stops.has(id)).toBe(false);
  });

  it('a whole reply names its prompt tokens too', async () => {
    const body = { model: 'tiny', messages: CHAT, tools: [BASH], max_tokens: 4, seed: 7 };
    const res = await fetch(`${ms.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify(body) });
    const r = (await res.json()) as { usage: { prompt_tokens: number } };
    expect(r.usage.prompt_tokens).toBe(tok.encodeChat(CHAT, { addGenerationPrompt: true, tools: [BASH] }).length);
  }, 60_000);
});

describe('agent endpoints against the model server', () => {
  it('an Anthropic tool-history turn streams to message_stop and is stored once with the served tokens and μ', async () => {
    const body = {
      model: 'tiny',
      max_tokens: 6,
      stream: true,
      tools: [{ name: 'Bash', description: BASH.function.description, input_schema: BASH.function.parameters }],
      messages: [
        { role: 'user', content: 'list files' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.txt' }] },
      ],
    };
    const res = await fetch(`http://127.0.0.1:${proxy.port}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    const split = new SseSplitter();
    const evs = [...split.push(new Uint8Array(await res.arrayBuffer())), split.rest()].filter((e) => e.trim() !== '').map((e) => JSON.parse(sseData(e)!) as { type: string; delta?: { stop_reason?: string } });
    expect(evs[0]!.type).toBe('message_start');
    expect(evs.at(-1)!.type).toBe('message_stop');
    expect(['end_turn', 'max_tokens', 'tool_use']).toContain(evs.at(-2)!.delta?.stop_reason);
    await proxy.idle();
    const page = await core.call('listTurns', { source: 'claude-code' }, 'test');
    expect(page.total).toBe(1);
    const t = await core.call('getTurn', { turnId: page.items[0]!.id }, 'test');
    expect(t.prompt).toBe('list files');
    expect(t.context.map((c) => c.type)).toEqual(['tool_use', 'tool_result']);
    expect(t.tokens!.length).toBeGreaterThan(0);
    expect(t.logprobs!.length).toBe(t.tokens!.length);
    expect(t.onPolicy).toBe(true);
    // The steps came from the client's history, not this proxy: they have no tokens, and the log says so.
    expect(t.context[0]!.tokens).toBeUndefined();
    expect(logs.some((l) => l.includes('a step of the agent turn has no tokens'))).toBe(true);
  }, 60_000);

  it("a prompt longer than the model's context is the client's error (400 in Anthropic's shape, which Claude Code does not retry)", async () => {
    const body = { model: 'tiny', max_tokens: 4, messages: [{ role: 'user', content: 'word '.repeat(3000) }] };
    const res = await fetch(`http://127.0.0.1:${proxy.port}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN }, body: JSON.stringify(body) });
    expect(res.status).toBe(400);
    const tokens = tok.encodeChat([{ role: 'user', content: 'word '.repeat(3000) }], { addGenerationPrompt: true }).length;
    // Anthropic's own message, which Claude Code compacts on.
    expect(await res.json()).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: `prompt is too long: ${tokens} tokens > 1024 maximum` } });
  }, 60_000);

  it('a prompt longer than the context reaches a Responses client as context_length_exceeded, whole or streamed', async () => {
    const post = (stream: boolean) => fetch(`http://127.0.0.1:${proxy.port}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ model: 'tiny', input: 'word '.repeat(3000), stream }) });
    const whole = await post(false);
    expect(whole.status).toBe(400);
    expect(((await whole.json()) as { error: { code: string } }).error.code).toBe('context_length_exceeded');
    const streamed = await post(true);
    const evs = await events(streamed);
    expect(evs.at(-1)).toMatchObject({ type: 'response.failed', response: { error: { code: 'context_length_exceeded' } } });
  }, 60_000);

  it("count_tokens counts the prompt with the model's template and tokenizer, and checks its body", async () => {
    const count = (body: unknown) => fetch(`http://127.0.0.1:${proxy.port}/v1/messages/count_tokens`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN }, body: JSON.stringify(body) });
    const tools = [{ name: 'Bash', description: BASH.function.description, input_schema: BASH.function.parameters }];
    const r = await count({ model: 'tiny', system: 'Be brief.', tools, messages: [{ role: 'user', content: 'list files' }] });
    expect(r.status).toBe(200);
    const want = tok.encodeChat([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'list files' }], { addGenerationPrompt: true, tools: [BASH] }).length;
    expect(await r.json()).toEqual({ input_tokens: want });
    const bad = await count({ model: 'tiny', messages: 'hi' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/^messages/);
    const doc = await count({ model: 'tiny', messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }] }] });
    expect(doc.status).toBe(400);
  });

  it('a message of only unsupported blocks is a 400 naming the block type', async () => {
    const body = { model: 'tiny', max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }] }] };
    const res = await fetch(`http://127.0.0.1:${proxy.port}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN }, body: JSON.stringify(body) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/"document"/);
  });

  it('an Anthropic stream with tools declared sends text deltas as they are sampled, and the prompt size', async () => {
    const messages = [{ role: 'user' as const, content: 'list files' }];
    const body = { model: 'tiny', max_tokens: 24, stream: true, temperature: 1, tools: [{ name: 'Bash', description: BASH.function.description, input_schema: BASH.function.parameters }], messages };
    const res = await fetch(`http://127.0.0.1:${proxy.port}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN }, body: JSON.stringify(body) });
    const evs = (await events(res)) as { type: string; message?: { usage: { input_tokens: number } }; usage?: { input_tokens?: number }; delta?: { type?: string } }[];
    const prompt = tok.encodeChat([{ role: 'user', content: 'list files' }], { addGenerationPrompt: true, tools: [BASH] }).length;
    expect(evs[0]!.message!.usage.input_tokens).toBe(prompt);
    expect(evs.find((e) => e.type === 'message_delta')!.usage!.input_tokens).toBe(prompt);
    const deltas = evs.filter((e) => e.type === 'content_block_delta');
    const counts = Object.fromEntries(['content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta'].map((t) => [t, evs.filter((e) => e.type === t).length]));
    process.stderr.write(`anthropic tools-declared stream: ${JSON.stringify(counts)}\n`);
    expect(deltas.filter((e) => e.delta?.type === 'text_delta').length).toBeGreaterThanOrEqual(2);
    await proxy.idle();
  }, 60_000);

  it('a Responses stream with tools declared sends text deltas before it completes, and the prompt size', async () => {
    const body = { model: 'tiny', input: 'list files', stream: true, max_output_tokens: 24, tools: [{ type: 'function', name: 'Bash', description: BASH.function.description, parameters: BASH.function.parameters }] };
    const res = await fetch(`http://127.0.0.1:${proxy.port}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify(body) });
    const evs = (await events(res)) as { type: string; response?: { usage?: { input_tokens: number } } }[];
    const counts: Record<string, number> = {};
    for (const e of evs) counts[e.type] = (counts[e.type] ?? 0) + 1;
    process.stderr.write(`responses tools-declared stream: ${JSON.stringify(counts)}\n`);
    const end = evs.findIndex((e) => e.type === 'response.completed' || e.type === 'response.incomplete');
    expect(evs.slice(0, end).filter((e) => e.type === 'response.output_text.delta').length).toBeGreaterThanOrEqual(2);
    expect(evs[end]!.response!.usage!.input_tokens).toBe(tok.encodeChat([{ role: 'user', content: 'list files' }], { addGenerationPrompt: true, tools: [BASH] }).length);
    await proxy.idle();
  }, 60_000);

  it('a text-only Responses turn completes', async () => {
    const before = (await core.call('listTurns', { source: 'codex' }, 'test')).total;
    const res = await fetch(`http://127.0.0.1:${proxy.port}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ model: 'tiny', input: 'Say hi', max_output_tokens: 4 }) });
    expect(res.status).toBe(200);
    const r = (await res.json()) as { status: string; output: unknown[] };
    expect(['completed', 'incomplete']).toContain(r.status);
    await proxy.idle();
    expect((await core.call('listTurns', { source: 'codex' }, 'test')).total).toBe(before + 1);
  }, 60_000);
});
