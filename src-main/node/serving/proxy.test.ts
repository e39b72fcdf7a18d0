// The capture proxy against a fake OpenAI-compatible upstream (real sockets on 127.0.0.1) and the real SQLite core.
// The tokenizer is Qwen3's real tokenizer.json, so the token-text → id mapping is the one a user gets.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
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
import { CHAT_EVENT_HEADER, CHAT_SOURCE_HEADER, startProxyServer } from './proxy.ts';
import { ADAPTER_VERSION_HEADER, MODEL_ID_HEADER, SAMPLING_HEADER } from './upstream.ts';
import type { ProxyOptions, ProxyServer } from './proxy.ts';
import type { UpstreamKind } from './upstream.ts';
import { startFakeUpstream } from './test-utils/fake-openai.ts';
import type { FakeUpstream, FakeUpstreamOptions } from './test-utils/fake-openai.ts';

const TOKEN = 'a'.repeat(64);
const REPLY = 'Hello world! The answer is 42, as always.';
const REPLY2 = 'Forty-two, naturally. Nothing else?';
let tok: ReinTokenizer;
let ids: number[];
let ids2: number[];
let dir: string;
let core: ReinCore;
let upstream: FakeUpstream | null = null;
let proxy: ProxyServer | null = null;
let scripted: Scripted | null = null;
const logs: string[] = [];

beforeAll(() => {
  tok = loadTokenizer(tokenizerSourceDir('qwen2'));
  ids = tok.encode(REPLY);
  ids2 = tok.encode(REPLY2);
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
  await scripted?.close();
  proxy = upstream = scripted = null;
  core.close();
  rmSync(dir, { recursive: true, force: true });
});

afterAll(() => expect(logs.filter((l) => l.includes('internal error'))).toEqual([]));

async function setup(style: FakeUpstreamOptions['style'], kind: UpstreamKind = 'openai', extra: Partial<FakeUpstreamOptions> = {}, opts: Partial<ProxyOptions> = {}): Promise<void> {
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
    ...opts,
  });
}

function post(body: unknown, token = TOKEN): Promise<Response> {
  return fetch(`${proxy!.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
}

// An identity sampler, pinned: the fake upstreams report raw logprobs, as llama-server and vLLM do by default, and
// those are μ only when nothing tempers or truncates the distribution (proxy.ts pinnedSampling).
const IDENTITY = { temperature: 1, top_p: 1, top_k: 0, min_p: 0 };
const chat = (extra: Record<string, unknown> = {}) => ({
  model: 'fake-model',
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'What is the answer?' },
  ],
  ...IDENTITY,
  ...extra,
});

const policyOf = (t: Turn): unknown => {
  const row = core.store.stmt<{ policy: string | null }>('SELECT policy FROM turns WHERE id = ?').get(t.id)!;
  return row.policy === null ? null : JSON.parse(row.policy);
};

async function storedTurn(): Promise<Turn> {
  await proxy!.idle();
  const page = await core.call('listTurns', {}, 'test');
  expect(page.total).toBe(1);
  return core.call('getTurn', { turnId: page.items[0]!.id }, 'test');
}

function expectOnPolicy(t: Turn, version: number, sampling = { temperature: 1, topP: 1 }): void {
  expect(t.source).toBe('proxy');
  expect(t.prompt).toBe('What is the answer?');
  expect(t.context).toEqual([{ role: 'system', content: 'Be brief.' }]);
  expect(t.response).toBe(REPLY);
  expect(t.tokens).toEqual(ids);
  expect(t.logprobs).toEqual(upstream!.logprobs.map(Math.fround));
  expect(t.adapterVersion).toBe(version);
  expect(t.onPolicy).toBe(true);
  expect(policyOf(t)).toEqual({ modelId: 'default', ...sampling });
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

  it('the version, model and sampling come from the embedded server headers: its logprobs are of what it sampled', async () => {
    const headers = { [ADAPTER_VERSION_HEADER]: '3', [MODEL_ID_HEADER]: 'default', [SAMPLING_HEADER]: JSON.stringify({ temperature: 0.7, topP: 0.9 }) };
    await setup('llama-server', 'rein', { headers });
    await (await post(chat({ temperature: 0.7, top_p: 0.9, top_k: undefined, min_p: undefined }))).json();
    expectOnPolicy(await storedTurn(), 3, { temperature: 0.7, topP: 0.9 });
  });

  it('another upstream sampling at temperature 0.7 or its defaults reports raw logprobs: stored off-policy, with the reason', async () => {
    // Even with Rein's headers: only Rein's own server (kind 'rein') is taken at its word.
    const headers = { [ADAPTER_VERSION_HEADER]: '0', [MODEL_ID_HEADER]: 'default', [SAMPLING_HEADER]: JSON.stringify({ temperature: 0.7, topP: 1 }) };
    await setup('llama-server', 'llama-server', { headers });
    await (await post(chat({ temperature: 0.7 }))).json();
    await (await post(chat({ temperature: undefined, top_p: undefined, top_k: undefined, min_p: undefined }))).json();
    await proxy!.idle();
    const page = await core.call('listTurns', {}, 'test');
    expect(page.total).toBe(2);
    for (const s of page.items) {
      const t = await core.call('getTurn', { turnId: s.id }, 'test');
      expect([t.tokens, t.logprobs, policyOf(t), t.onPolicy]).toEqual([null, null, null, false]);
    }
    const off = logs.filter((l) => l.includes('off-policy'));
    expect(off).toHaveLength(2);
    expect(off[0]).toMatch(/raw logprobs.*temperature 0\.7 \(needs 1\)/);
    expect(off[1]).toMatch(/temperature "unset" \(needs 1\), top_p "unset" \(needs 1\), top_k "unset" \(needs 0 or -1\), min_p "unset" \(needs 0\)/);
  });

  it('a published alias maps to the active version', async () => {
    const a = core.store.adapters.insert({ modelId: 'default', version: 2, status: 'active', path: path.join(dir, 'v2') }, 'test');
    core.store
      .stmt('UPDATE adapters SET publish = ? WHERE id = ?')
      .run(JSON.stringify({ ollama: { ok: true, message: 'ok', at: 1, model: 'qwen-rein:v2' } }), a.id);
    await setup('llama-server', 'ollama', { model: 'qwen-rein' });
    await (await post(chat({ model: 'qwen-rein' }))).json();
    expectOnPolicy(await storedTurn(), 2);
  });

  it("Rein's chat and arena name the source (chat or arena only) and event id of the turn they will look up", async () => {
    await setup('llama-server');
    const send = (headers: Record<string, string>) =>
      fetch(`${proxy!.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, ...headers }, body: JSON.stringify(chat()) }).then((r) => r.json());
    await send({ 'x-rein-source': 'arena', 'x-rein-event-id': 'arena-1' });
    await send({ 'x-rein-source': 'claude-code', 'x-rein-event-id': 'forged-1' });
    await send({ 'x-rein-source': 'chat', 'x-rein-event-id': 'bad id with spaces' });
    await proxy!.idle();
    const turns = (await core.call('listTurns', {}, 'test')).items.map((t) => [t.source, t.eventId.startsWith('proxy-') ? 'proxy-…' : t.eventId]);
    expect(turns.sort()).toEqual([
      ['arena', 'arena-1'],
      ['chat', 'proxy-…'],
      ['proxy', 'proxy-…'],
    ]);
    expect(core.store.arena.turnId('arena', 'arena-1')).not.toBeNull();
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
      // The turn is stored after the reply has ended: the vocabulary is asked for then.
      await proxy!.idle();
    } finally {
      tok = bad;
    }
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

  it('a client that leaves mid-stream (Esc, Stop): the answer it was shown is stored, cut there, with an interrupt signal', async () => {
    await setup('openai', 'openai', { chunkDelayMs: 40 });
    const ac = new AbortController();
    const res = await fetch(`${proxy!.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(chat({ stream: true })),
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('"content":"')) seen += new TextDecoder().decode((await reader.read()).value);
    ac.abort();
    await new Promise((r) => setTimeout(r, ids.length * 40 + 100));
    const t = await storedTurn();
    expect(t.response.length).toBeGreaterThan(0);
    expect(t.response.length).toBeLessThan(REPLY.length);
    expect(REPLY.startsWith(t.response)).toBe(true);
    const { signals, label } = await core.call('turnSignals', { turnId: t.id }, 'test');
    expect(signals).toMatchObject([{ kind: 'interrupt', evidence: expect.stringMatching(/^the client closed the stream after \d+ tokens? of the answer, before it ended$/) }]);
    // An interrupt alone is too weak to suggest a label (the reader's threshold).
    expect(label).toBeNull();
  });

  it('Rein\'s own chat stopped mid-stream stores nothing (it stops its own replies)', async () => {
    await setup('openai', 'openai', { chunkDelayMs: 40 });
    const ac = new AbortController();
    const res = await fetch(`${proxy!.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, [CHAT_SOURCE_HEADER]: 'chat', [CHAT_EVENT_HEADER]: 'chat-stop-1' },
      body: JSON.stringify(chat({ stream: true })),
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    await reader.read();
    ac.abort();
    await new Promise((r) => setTimeout(r, ids.length * 40 + 100));
    await proxy!.idle();
    expect((await core.call('listTurns', {}, 'test')).total).toBe(0);
  });

  it.each([false, true])('the whole reply reaches the client before the turn is looked at or stored (streamed %s)', async (stream) => {
    const order: string[] = [];
    const producer = producerResolver(core);
    const dispose = core.on('turnCaptured', () => order.push('stored'));
    try {
      await setup('llama-server', 'openai', {}, {
        // The client is in this process too: a margin that a loaded machine's scheduling does not eat.
        captureQuietMs: 300,
        producer: (m) => {
          order.push('producer');
          return producer(m);
        },
        vocab: () => {
          order.push('vocab');
          return tok;
        },
      });
      const res = await post(chat({ stream }));
      await res.text();
      order.push('client has the reply');
      await proxy!.idle();
    } finally {
      dispose();
    }
    expect(order).toEqual(['client has the reply', 'producer', 'vocab', 'stored']);
  });

  it('n > 1, not streamed: every choice is stored as its own turn with its own tokens and logprobs, and every choice reaches the client with logprobs null', async () => {
    await setupScripted((body) => ({ json: completion(body, 'ids') }));
    const res = await post(chat({ n: 2 }));
    const body = (await res.json()) as { choices: { index: number; message: { content: string }; logprobs: unknown }[] };
    expect(body.choices.map((c) => [c.index, c.message.content, c.logprobs])).toEqual([
      [0, REPLY, null],
      [1, REPLY2, null],
    ]);
    expect(scripted!.seen[0]!.body.n).toBe(2);
    await expectTwoChoices();
  });

  it.each([true, false])('n > 1, streamed (client logprobs %s): chunks of both choices, interleaved and sometimes together, become two turns (token text mapped through the vocabulary)', async (clientLogprobs) => {
    await setupScripted((body) => ({ events: streamed(body, 'text') }));
    const res = await post(chat({ n: 2, stream: true, ...(clientLogprobs ? { logprobs: true } : {}) }));
    const text = await res.text();
    if (clientLogprobs) {
      // The client asked for logprobs: its stream is the upstream's, byte for byte.
      expect(text).toBe(scripted!.replies[0]);
    } else {
      expect(scripted!.seen[0]!.body.logprobs).toBe(true);
      const content = ['', ''];
      for (const ev of text.split('\n\n')) {
        if (!ev.startsWith('data: {')) continue;
        for (const c of (JSON.parse(ev.slice(6)) as { choices: { index: number; delta: { content?: string }; logprobs: unknown }[] }).choices) {
          expect(c.logprobs).toBeNull();
          content[c.index] += c.delta.content ?? '';
        }
      }
      expect(content).toEqual([REPLY, REPLY2]);
    }
    await expectTwoChoices();
  });

  it('the upstream API key setting goes upstream as the Bearer token; the Rein token never does, and the key is neither logged nor stored', async () => {
    const KEY = 'sk-upstream-0123456789';
    await expect(core.call('setSettings', { values: { 'proxy.upstreamApiKey': 'two words' } }, 'test')).rejects.toThrow(/proxy.upstreamApiKey/);
    await core.call('setSettings', { values: { 'proxy.upstreamApiKey': KEY } }, 'test');
    // Like vLLM started with --api-key: anything but the key is refused.
    await setupScripted((body, headers) => (headers.authorization === `Bearer ${KEY}` ? { json: completion(body, 'ids') } : { status: 401, json: { error: { message: 'bad key' } } }));
    const ok = await post(chat());
    expect(ok.status).toBe(200);
    await ok.json();
    const models = await fetch(`${proxy!.url}/models`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(models.status).toBe(200);
    await models.arrayBuffer();
    // A change applies to the next request (the proxy follows settingsChanged); null sends no Authorization at all.
    await core.call('setSettings', { values: { 'proxy.upstreamApiKey': null } }, 'test');
    const refused = await post(chat());
    expect(refused.status).toBe(401);
    await refused.arrayBuffer();
    expect(scripted!.seen.map((r) => r.headers.authorization)).toEqual([`Bearer ${KEY}`, `Bearer ${KEY}`, undefined]);
    for (const r of scripted!.seen) expect(JSON.stringify(r)).not.toContain(TOKEN);
    await proxy!.idle();
    const page = await core.call('listTurns', {}, 'test');
    expect(page.total).toBe(1);
    const t = await core.call('getTurn', { turnId: page.items[0]!.id }, 'test');
    expect(JSON.stringify(t)).not.toContain(KEY);
    expect(logs.join('\n')).not.toContain(KEY);
  });

  it('the chat goes upstream as the client sent it, with the logprobs switch added once', async () => {
    await setupScripted((body) => ({ json: completion(body, 'ids') }));
    const send = (text: string) =>
      fetch(`${proxy!.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: text });
    const spaced = JSON.stringify(chat({ temperature: 0.5 }), null, 1);
    await (await send(`${spaced}\n`)).json();
    // The client's own bytes, the field spliced in before the closing brace.
    expect(scripted!.seen[0]!.text).toBe(`${spaced.slice(0, -1)},"logprobs":true}\n`);
    // A client that said logprobs: false: sent through JSON, so the upstream never sees the key twice.
    await (await send(JSON.stringify(chat({ logprobs: false })))).json();
    expect(scripted!.seen[1]!.text).toBe(JSON.stringify(chat({ logprobs: true })));
    await proxy!.idle();
    expect((await core.call('listTurns', {}, 'test')).total).toBe(2);
  });

  it('a kept-alive upstream connection closed as it is reused: the request is sent again on a new one', async () => {
    // As an upstream whose idle timeout closes the connection just as the proxy sends the next request on it.
    await setupScripted((body, _headers, nth) => (nth === 1 ? { json: completion(body, 'ids') } : { drop: true }));
    for (let i = 0; i < 3; i++) {
      const res = await post(chat());
      expect(res.status).toBe(200);
      await res.json();
    }
    expect(scripted!.seen).toHaveLength(5);
    await proxy!.idle();
    expect((await core.call('listTurns', {}, 'test')).total).toBe(3);
  });

  it.each([true, false])('an upstream that dies mid-stream: the client\'s stream is cut too, and nothing is stored (client logprobs %s)', async (clientLogprobs) => {
    await setupScripted((body) => ({ events: streamed(body, 'ids'), cutAfter: 5 }));
    const res = await post(chat({ stream: true, ...(clientLogprobs ? { logprobs: true } : {}) }));
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
    await proxy!.idle();
    expect((await core.call('listTurns', {}, 'test')).total).toBe(0);
  });

  it('an explicit upstream apiKey (Rein\'s own server is given the Rein token) wins over the setting', async () => {
    await core.call('setSettings', { values: { 'proxy.upstreamApiKey': 'sk-not-this-one' } }, 'test');
    await setupScripted((body) => ({ json: completion(body, 'ids') }), { apiKey: 'sk-explicit' });
    await (await post(chat())).json();
    expect(scripted!.seen[0]!.headers.authorization).toBe('Bearer sk-explicit');
  });
});

// A scripted upstream for what the fake one does not do: several choices, and checking request headers.
interface Scripted {
  url: string;
  seen: { headers: IncomingHttpHeaders; body: Record<string, unknown>; text: string; url: string }[];
  /** The reply bodies sent, as text. */
  replies: string[];
  close(): Promise<void>;
}
/** `drop`: close the connection without an answer; `cutAfter`: close it after that many events, without [DONE]. */
type Answer = { status?: number; json?: unknown; events?: unknown[]; drop?: boolean; cutAfter?: number };
/** The request's position on its connection (1 = the first). */
type Answerer = (body: Record<string, unknown>, headers: IncomingHttpHeaders, nthOnConnection: number) => Answer;

async function startScripted(answer: Answerer): Promise<Scripted> {
  const seen: Scripted['seen'] = [];
  const replies: string[] = [];
  const perConnection = new WeakMap<object, number>();
  const server = createServer((req, res) => {
    const nth = (perConnection.get(req.socket) ?? 0) + 1;
    perConnection.set(req.socket, nth);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text.length > 0 ? (JSON.parse(text) as Record<string, unknown>) : {};
      seen.push({ headers: req.headers, body, text, url: req.url ?? '' });
      const a: Answer = req.url === '/v1/models' ? { json: { object: 'list', data: [] } } : answer(body, req.headers, nth);
      if (a.drop) {
        req.socket.destroy();
      } else if (a.events !== undefined && a.cutAfter !== undefined) {
        res.writeHead(a.status ?? 200, { 'content-type': 'text/event-stream' });
        res.write(a.events.slice(0, a.cutAfter).map((e) => `data: ${JSON.stringify(e)}\n\n`).join(''), () => setTimeout(() => req.socket.destroy(), 20));
      } else if (a.events !== undefined) {
        const text = a.events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n';
        replies.push(text);
        res.writeHead(a.status ?? 200, { 'content-type': 'text/event-stream' });
        res.end(text);
      } else {
        const text = JSON.stringify(a.json);
        replies.push(text);
        res.writeHead(a.status ?? 200, { 'content-type': 'application/json' });
        res.end(text);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    seen,
    replies,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function setupScripted(answer: Answerer, up: { apiKey?: string } = {}): Promise<void> {
  scripted = await startScripted(answer);
  const url = scripted.url;
  proxy = await startProxyServer({ core, token: TOKEN, port: 0, upstream: () => ({ baseUrl: url, kind: 'openai', ...up }), vocab: () => tok, producer: producerResolver(core), log: (l) => logs.push(l) });
}

/** Choice i's reply, token ids and logprobs. */
const choiceData = (i: number) => {
  const [text, tids] = i === 0 ? [REPLY, ids] : [REPLY2, ids2];
  return { text, ids: tids, logprobs: tids.map((_, k) => -(0.1 * (i + 1) + 0.01 * k)) };
};
const lpEntry = (id: number, lp: number, style: 'ids' | 'text') => {
  const piece = tok.decode([id]);
  return { token: piece, logprob: lp, bytes: Array.from(Buffer.from(piece, 'utf8')), top_logprobs: [], ...(style === 'ids' ? { id } : {}) };
};

function completion(body: Record<string, unknown>, style: 'ids' | 'text'): unknown {
  const n = typeof body.n === 'number' ? body.n : 1;
  return {
    id: 'chatcmpl-n',
    object: 'chat.completion',
    created: 1,
    model: 'fake-model',
    choices: Array.from({ length: n }, (_, i) => {
      const d = choiceData(i);
      return {
        index: i,
        message: { role: 'assistant', content: d.text },
        logprobs: body.logprobs === true ? { content: d.ids.map((id, k) => lpEntry(id, d.logprobs[k]!, style)) } : null,
        finish_reason: 'stop',
      };
    }),
  };
}

/** One chunk per token and choice, the choices interleaved; every third step sends both choices in one chunk. */
function streamed(body: Record<string, unknown>, style: 'ids' | 'text'): unknown[] {
  const n = typeof body.n === 'number' ? body.n : 1;
  const data = Array.from({ length: n }, (_, i) => choiceData(i));
  const piece = (i: number, k: number) => ({
    index: i,
    delta: { content: tok.decode([data[i]!.ids[k]!]) },
    logprobs: body.logprobs === true ? { content: [lpEntry(data[i]!.ids[k]!, data[i]!.logprobs[k]!, style)] } : null,
    finish_reason: null,
  });
  const events: unknown[] = [];
  const longest = Math.max(...data.map((d) => d.ids.length));
  for (let k = 0; k < longest; k++) {
    const here = data.flatMap((d, i) => (k < d.ids.length ? [piece(i, k)] : []));
    if (k % 3 === 2) events.push({ id: 'chatcmpl-s', object: 'chat.completion.chunk', model: 'fake-model', choices: here });
    else for (const c of here) events.push({ id: 'chatcmpl-s', object: 'chat.completion.chunk', model: 'fake-model', choices: [c] });
  }
  events.push({ id: 'chatcmpl-s', object: 'chat.completion.chunk', model: 'fake-model', choices: data.map((_, i) => ({ index: i, delta: {}, logprobs: null, finish_reason: 'stop' })) });
  return events;
}

async function expectTwoChoices(): Promise<void> {
  await proxy!.idle();
  const page = await core.call('listTurns', {}, 'test');
  expect(page.total).toBe(2);
  const turns = await Promise.all(page.items.map((s) => core.call('getTurn', { turnId: s.id }, 'test')));
  turns.sort((a, b) => a.eventId.localeCompare(b.eventId));
  expect(turns[0]!.eventId).toMatch(/^proxy-[0-9a-f-]+#0$/);
  expect(turns[1]!.eventId).toBe(turns[0]!.eventId.replace(/#0$/, '#1'));
  for (const [i, t] of turns.entries()) {
    const d = choiceData(i);
    expect(t.source).toBe('proxy');
    expect(t.prompt).toBe('What is the answer?');
    expect(t.context).toEqual([{ role: 'system', content: 'Be brief.' }]);
    expect(t.response).toBe(d.text);
    expect(t.tokens).toEqual(d.ids);
    expect(t.logprobs).toEqual(d.logprobs.map(Math.fround));
    expect(t.adapterVersion).toBe(0);
    expect(t.onPolicy).toBe(true);
  }
  expect(logs.filter((l) => l.includes('off-policy'))).toEqual([]);
}
