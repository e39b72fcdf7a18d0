// The capture proxy against a fake OpenAI-compatible upstream (real sockets on 127.0.0.1) and the real SQLite core.
// The tokenizer is Qwen3's real tokenizer.json, so the token-text → id mapping is the one a user gets.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Turn } from '../../common/domain.ts';
import { createCore } from '../core/core.ts';
import type { ReinCore } from '../core/core.ts';
import { resolveHome } from '../home.ts';
import { tokenizerSourceDir } from '../engine/tiny.ts';
import { loadTokenizer } from '../engine/tokenizer.ts';
import type { ReinTokenizer } from '../engine/tokenizer.ts';
import { producerResolver } from './producer.ts';
import { ADAPTER_VERSION_HEADER, startProxyServer } from './proxy.ts';
import type { ProxyServer, UpstreamKind } from './proxy.ts';
import { startFakeUpstream } from './test-utils/fake-openai.ts';
import type { FakeUpstream, FakeUpstreamOptions } from './test-utils/fake-openai.ts';

const TOKEN = 'a'.repeat(64);
const REPLY = 'Hello world! The answer is 42, as always.';
let tok: ReinTokenizer;
let ids: number[];
let dir: string;
let core: ReinCore;
let upstream: FakeUpstream | null = null;
let proxy: ProxyServer | null = null;
const logs: string[] = [];

beforeAll(() => {
  tok = loadTokenizer(tokenizerSourceDir('qwen2'));
  ids = tok.encode(REPLY);
});

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'rein-proxy-'));
  core = createCore({ home: resolveHome({ REIN_HOME: dir }) });
  await core.call('setSettings', { values: { 'proxy.baseModelName': 'fake-model' } }, 'test');
  logs.length = 0;
});

afterEach(async () => {
  await proxy?.close();
  await upstream?.close();
  proxy = upstream = null;
  core.close();
  rmSync(dir, { recursive: true, force: true });
});

afterAll(() => expect(logs.filter((l) => l.includes('internal error'))).toEqual([]));

async function setup(style: FakeUpstreamOptions['style'], kind: UpstreamKind = 'openai', extra: Partial<FakeUpstreamOptions> = {}): Promise<void> {
  upstream = await startFakeUpstream({ reply: REPLY, ids, pieceOf: (id) => tok.decode([id]), style, ...extra });
  const up = upstream;
  proxy = await startProxyServer({
    core,
    token: TOKEN,
    port: 0,
    upstream: () => ({ baseUrl: up.url, kind }),
    vocab: () => tok,
    producer: producerResolver(core),
    log: (l) => logs.push(l),
  });
}

function post(body: unknown, token = TOKEN): Promise<Response> {
  return fetch(`${proxy!.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
}

const chat = (extra: Record<string, unknown> = {}) => ({
  model: 'fake-model',
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'What is the answer?' },
  ],
  ...extra,
});

async function storedTurn(): Promise<Turn> {
  await proxy!.idle();
  const page = await core.call('listTurns', {}, 'test');
  expect(page.total).toBe(1);
  return core.call('getTurn', { turnId: page.items[0]!.id }, 'test');
}

function expectOnPolicy(t: Turn, version: number): void {
  expect(t.source).toBe('proxy');
  expect(t.prompt).toBe('What is the answer?');
  expect(t.context).toEqual([{ role: 'system', content: 'Be brief.' }]);
  expect(t.response).toBe(REPLY);
  expect(t.tokens).toEqual(ids);
  expect(t.logprobs).toEqual(upstream!.logprobs.map(Math.fround));
  expect(t.adapterVersion).toBe(version);
  expect(t.onPolicy).toBe(true);
}

/** The content and logprobs fields of every data chunk of an SSE body. */
function chunksOf(text: string): { content: string; logprobs: unknown[] } {
  let content = '';
  const logprobs: unknown[] = [];
  for (const ev of text.split('\n\n')) {
    if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
    const c = (JSON.parse(ev.slice(6)) as { choices: { delta: { content?: string }; logprobs: unknown }[] }).choices[0]!;
    content += c.delta.content ?? '';
    logprobs.push(c.logprobs);
  }
  return { content, logprobs };
}

describe('capture proxy', () => {
  it('non-streaming, client without logprobs: asks upstream for them, strips them from the reply, stores an on-policy turn', async () => {
    await setup('llama-server');
    const res = await post(chat());
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: { message: { content: string }; logprobs: unknown }[]; usage: unknown };
    expect(upstream!.requests[0]!.logprobs).toBe(true);
    expect(body.choices[0]!.message.content).toBe(REPLY);
    expect(body.choices[0]!.logprobs).toBeNull();
    // Everything else is the upstream's reply as it was.
    const sent = JSON.parse(upstream!.replies[0]!.toString()) as Record<string, unknown>;
    expect({ ...body, choices: null }).toEqual({ ...sent, choices: null });
    expectOnPolicy(await storedTurn(), 0);
  });

  it('non-streaming, client with logprobs: the reply is byte for byte the upstream one', async () => {
    await setup('openai');
    const res = await post(chat({ logprobs: true, top_logprobs: 2 }));
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.equals(upstream!.replies[0]!)).toBe(true);
    expect(upstream!.requests[0]!.top_logprobs).toBe(2);
    // Token text only: mapped back through the vocabulary.
    expectOnPolicy(await storedTurn(), 0);
  });

  it('streaming, client with logprobs: the stream is passed through unchanged', async () => {
    await setup('openai');
    const res = await post(chat({ stream: true, logprobs: true }));
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.equals(upstream!.replies[0]!)).toBe(true);
    expectOnPolicy(await storedTurn(), 0);
  });

  it('streaming, client without logprobs: every chunk arrives with logprobs null and the same content', async () => {
    await setup('llama-server');
    const res = await post(chat({ stream: true }));
    const text = await res.text();
    expect(upstream!.requests[0]!.logprobs).toBe(true);
    const got = chunksOf(text);
    expect(got.content).toBe(REPLY);
    expect(got.logprobs.every((l) => l === null)).toBe(true);
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    // The upstream's own stream did carry them.
    expect(chunksOf(upstream!.replies[0]!.toString()).logprobs.filter((l) => l !== null)).toHaveLength(ids.length);
    expectOnPolicy(await storedTurn(), 0);
  });

  it('vLLM: asks for token ids when the client will not see them', async () => {
    await setup('vllm', 'vllm');
    await (await post(chat({ stream: true }))).text();
    expect(upstream!.requests[0]!.return_tokens_as_token_ids).toBe(true);
    expectOnPolicy(await storedTurn(), 0);
  });

  it('vLLM with client logprobs: no token-id switch, so the client sees the token text it asked for', async () => {
    await setup('vllm', 'vllm');
    await (await post(chat({ logprobs: true }))).json();
    expect(upstream!.requests[0]!.return_tokens_as_token_ids).toBeUndefined();
    expectOnPolicy(await storedTurn(), 0);
  });

  it('the version comes from the embedded server header, or from a publish record', async () => {
    await setup('llama-server', 'rein', { headers: { [ADAPTER_VERSION_HEADER]: '3' } });
    await (await post(chat())).json();
    expectOnPolicy(await storedTurn(), 3);
  });

  it('a published alias maps to the active version', async () => {
    const a = core.store.insertAdapter({ modelId: 'default', version: 2, status: 'active', path: path.join(dir, 'v2') }, 'test');
    core.store
      .stmt('UPDATE adapters SET publish = ? WHERE id = ?')
      .run(JSON.stringify({ ollama: { ok: true, message: 'ok', at: 1, model: 'qwen-rein:v2' } }), a.id);
    await setup('llama-server', 'ollama', { model: 'qwen-rein' });
    await (await post(chat({ model: 'qwen-rein' }))).json();
    expectOnPolicy(await storedTurn(), 2);
  });

  it('an unknown producer, a chat ending in a tool result, or unmappable token text is stored off-policy', async () => {
    await setup('openai');
    await (await post(chat({ model: 'someone-else' }))).json();
    await (await post({ ...chat(), messages: [...chat().messages, { role: 'assistant', content: '' }, { role: 'tool', content: 'x' }] })).json();
    await proxy!.idle();
    const bad = tok;
    // A vocabulary that knows none of the pieces.
    tok = { ...bad, tokenToId: () => null, size: bad.size, decode: (x: readonly number[]) => bad.decode(x) } as unknown as ReinTokenizer;
    try {
      await (await post(chat())).json();
    } finally {
      tok = bad;
    }
    await proxy!.idle();
    const page = await core.call('listTurns', {}, 'test');
    expect(page.total).toBe(3);
    for (const s of page.items) {
      const t = await core.call('getTurn', { turnId: s.id }, 'test');
      expect(t.tokens).toBeNull();
      expect(t.onPolicy).toBe(false);
      expect(t.response).toBe(REPLY);
    }
    expect(logs.filter((l) => l.includes('off-policy'))).toHaveLength(3);
    expect(logs.join('\n')).toMatch(/unknown/);
    expect(logs.join('\n')).toMatch(/does not end with the user message/);
    expect(logs.join('\n')).toMatch(/matches no vocabulary entries/);
  });

  it('refuses a missing token, passes upstream errors through, answers 502 when the upstream is down, forwards /v1/models', async () => {
    await setup('openai');
    expect((await post(chat(), 'wrong')).status).toBe(401);
    const bad = await fetch(`${proxy!.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: '{"model":"m","messages":[]}',
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/messages/);
    const models = await fetch(`${proxy!.url}/models`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(Buffer.from(await models.arrayBuffer()).equals(upstream!.replies.at(-1)!)).toBe(true);
    await upstream!.close();
    const down = await post(chat());
    expect(down.status).toBe(502);
    expect(((await down.json()) as { error: { message: string } }).error.message).toMatch(/not reachable/);
    await proxy!.idle();
    expect((await core.call('listTurns', {}, 'test')).total).toBe(0);
  });

  it('a client that disconnects mid-stream stores nothing', async () => {
    await setup('openai', 'openai', { chunkDelayMs: 20 });
    const ac = new AbortController();
    const res = await fetch(`${proxy!.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(chat({ stream: true })),
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    ac.abort();
    await new Promise((r) => setTimeout(r, ids.length * 20 + 100));
    await proxy!.idle();
    expect((await core.call('listTurns', {}, 'test')).total).toBe(0);
  });
});
