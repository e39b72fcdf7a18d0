// Issue #21 item 6 and #19 item 5: the proxy against raw loopback upstreams that misbehave. A silent upstream gets a
// 504 in bounded time, clients that give up leave no upstream socket open, an endless reply is cut at a size limit,
// one that closes mid-stream stores nothing, and the Rein token never goes upstream.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createCore, type ReinCore } from '../../src-main/node/core/core.ts';
import { resolveHome } from '../../src-main/node/home.ts';
import { startProxyServer, type ProxyServer } from '../../src-main/node/serving/proxy.ts';
import { figure } from './figures.ts';

const TOKEN = 'c'.repeat(64);
let core: ReinCore | null = null;
let proxy: ProxyServer | null = null;
let silent: Server | null = null;
let dir = '';
afterEach(async () => {
  await proxy?.close();
  silent?.closeAllConnections();
  await new Promise((r) => (silent ? silent.close(r) : r(null)));
  core?.close();
  rmSync(dir, { recursive: true, force: true });
  proxy = silent = core = null;
});

/** An upstream that accepts, reads the request and never answers; it counts its open sockets. */
async function startSilent(): Promise<{ url: string; open: () => number }> {
  const sockets = new Set<Socket>();
  silent = createServer(() => {});
  silent.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => silent!.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`, open: () => sockets.size };
}

async function startAgainst(url: string, upstreamIdleMs?: number, upstreamMaxBytes?: number): Promise<ProxyServer> {
  dir = mkdtempSync(path.join(tmpdir(), 'rein-rel-proxy-'));
  core = createCore({ home: resolveHome({ REIN_HOME: dir }) });
  proxy = await startProxyServer({
    core, token: TOKEN, port: 0, upstream: () => ({ baseUrl: url, kind: 'openai' }), vocab: () => null, producer: async () => null, log: () => {},
    ...(upstreamIdleMs === undefined ? {} : { upstreamIdleMs }),
    ...(upstreamMaxBytes === undefined ? {} : { upstreamMaxBytes }),
  });
  return proxy;
}

const chat = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });

/** An upstream streaming `total` bytes of SSE chat chunks, generated as the client reads (never held whole). */
async function startHuge(total: number): Promise<string> {
  const content = 'x'.repeat(64 * 1024);
  const ev = Buffer.from(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { content } }] })}\n\n`);
  silent = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let sent = 0;
    const pump = (): void => {
      while (sent < total) {
        sent += ev.length;
        if (!res.write(ev)) return void res.once('drain', pump);
      }
      res.end(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`);
    };
    pump();
  });
  await new Promise<void>((r) => silent!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`;
}

describe('proxy upstream bounds (issue #21 item 6)', () => {
  it('a 2 GB streamed reply passes through whole with bounded memory, and the stored turn is capped', async () => {
    const total = 2 * 1024 ** 3;
    const p = await startAgainst(await startHuge(total));
    const rss0 = process.memoryUsage().rss;
    let peak = rss0;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
    const t0 = performance.now();
    const r = await fetch(`${p.url}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }) });
    let got = 0;
    for await (const c of r.body!) got += (c as Uint8Array).length;
    const s = (performance.now() - t0) / 1000;
    await p.idle();
    clearInterval(sampler);
    const turns = await core!.call('listTurns', { limit: 5 }, 'test');
    const turn = turns.items[0] === undefined ? null : await core!.call('getTurn', { turnId: turns.items[0].id }, 'test');
    const mb = (n: number) => (n / 1024 ** 2).toFixed(0);
    console.log(`2 GB SSE reply: ${mb(got)} MB to the client in ${s.toFixed(1)} s, RSS ${mb(rss0)} MB → peak ${mb(peak)} MB; stored turns ${turns.items.length}, response ${turn?.response.length ?? 0} chars`);
    expect(got).toBeGreaterThan(total);
    expect(peak - rss0).toBeLessThan(400 * 1024 ** 2);
    expect(turns.items).toHaveLength(1);
    expect(turn!.response.length).toBeLessThanOrEqual(1_000_000);
  });

  it('a silent upstream: a 504 naming the timeout, in bounded time', async () => {
    const up = await startSilent();
    const p = await startAgainst(up.url, 1500);
    const t0 = performance.now();
    const r = await fetch(`${p.url}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: chat, signal: AbortSignal.timeout(30_000) });
    const text = await r.text();
    const ms = performance.now() - t0;
    console.log(`silent upstream (idle limit 1.5 s): ${r.status} after ${ms.toFixed(0)} ms: ${text.slice(0, 160)}; upstream sockets open after: ${up.open()}`);
    expect(r.status).toBe(504);
    expect(text).toMatch(/sent nothing for 1.5 s/);
    expect(ms).toBeLessThan(5000);
  });

  it('6 clients that give up before the upstream answers leave 0 upstream sockets open', async () => {
    const up = await startSilent();
    const p = await startAgainst(up.url);
    const port = Number(new URL(p.url).port);
    const clients = [];
    for (let i = 0; i < 6; i++) {
      const req = request({ host: '127.0.0.1', port, path: '/v1/chat/completions', method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(chat) } });
      req.on('error', () => {});
      req.end(chat);
      clients.push(req);
    }
    for (let t = 0; t < 100 && up.open() < 6; t++) await new Promise((r) => setTimeout(r, 20));
    const during = up.open();
    // The clients give up (as a closed tab or a killed agent does): their sockets close with no reply.
    for (const c of clients) c.destroy();
    let after = up.open();
    for (let t = 0; t < 100 && after > 0; t++) {
      await new Promise((r) => setTimeout(r, 20));
      after = up.open();
    }
    console.log(`6 abandoned clients: upstream sockets open while waiting ${during}, after the clients left ${after}`);
    expect(during).toBe(6);
    expect(after).toBe(0);
  });
});

/** An upstream whose handler is `serve`; it records every request's headers and body, to look for the Rein token. */
async function startUpstream(serve: (res: ServerResponse) => void): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  silent = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      seen.push(JSON.stringify(req.headers) + Buffer.concat(parts).toString('utf8'));
      serve(res);
    });
  });
  await new Promise<void>((r) => silent!.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`, seen };
}

const chunk = (content: string) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { content } }] })}\n\n`;

/** Writes `piece` for ever, as fast as the reader takes it, until the connection closes. */
function endless(res: ServerResponse, piece: Buffer): void {
  const pump = (): void => {
    while (!res.destroyed) if (!res.write(piece)) return void res.once('drain', pump);
  };
  res.on('close', () => undefined);
  pump();
}

async function post(p: ProxyServer, route: string, body: unknown): Promise<{ status: number; text: string; ms: number }> {
  const t0 = performance.now();
  const r = await fetch(`${p.url}${route}`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'x-api-key': TOKEN, 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(60_000) });
  const text = await r.text().catch((e: unknown) => `(the connection was cut: ${(e as Error).message})`);
  return { status: r.status, text, ms: performance.now() - t0 };
}

async function storedTurns(): Promise<number> {
  await proxy!.idle();
  return (await core!.call('listTurns', { limit: 5 }, 'test')).items.length;
}

describe('upstreams that misbehave (issue #19 item 5)', () => {
  const streamed = { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] };

  it('an endless event stream is cut at the size limit with an error event, and nothing is stored', async () => {
    const up = await startUpstream((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      endless(res, Buffer.from(chunk('y'.repeat(64 * 1024))));
    });
    // The limit as a ProxyServer option (default 4 GiB, which a 2 GB reply passes under, above): 64 MiB keeps CI short.
    const p = await startAgainst(up.url, undefined, 64 * 1024 ** 2);
    const r = await post(p, '/chat/completions', streamed);
    const tail = r.text.slice(-300);
    const n = await storedTurns();
    console.log(`endless SSE: ${r.status}, ${(r.text.length / 1024 ** 2).toFixed(0)} MB to the client in ${r.ms.toFixed(0)} ms, ending ${JSON.stringify(tail.slice(-200))}; stored turns ${n}`);
    expect(r.status).toBe(200);
    expect(r.text.length).toBeGreaterThan(60 * 1024 ** 2);
    expect(r.text.length).toBeLessThan(70 * 1024 ** 2);
    expect(tail).toMatch(/"type":"upstream_too_large"/);
    expect(tail).toMatch(/passed 64 MiB/);
    expect(n).toBe(0);
    expect(up.seen.join('')).not.toContain(TOKEN);
  });

  it('an endless JSON body is cut at 64 MiB (the default) with a 502 naming the limit, in bounded memory, and nothing is stored', async () => {
    const up = await startUpstream((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"');
      endless(res, Buffer.from('z'.repeat(64 * 1024)));
    });
    const p = await startAgainst(up.url);
    const rss0 = process.memoryUsage().rss;
    let peak = rss0;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const r = await post(p, '/chat/completions', { ...streamed, stream: false });
    clearInterval(sampler);
    const grew = peak - rss0;
    const n = await storedTurns();
    console.log(`endless JSON: ${r.status} in ${r.ms.toFixed(0)} ms: ${r.text.slice(0, 200)}; peak RSS +${(grew / 1024 ** 2).toFixed(0)} MB; stored turns ${n}`);
    expect(r.status).toBe(502);
    expect(r.text).toMatch(/passed 64 MiB/);
    expect(grew).toBeLessThan(400 * 1024 ** 2);
    expect(n).toBe(0);
  });

  it('an upstream that closes mid-stream: the client sees the reply cut, on the chat and the Anthropic routes, and nothing is stored', async () => {
    const up = await startUpstream((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk('the first half of an answer'));
      setTimeout(() => res.destroy(), 50);
    });
    const p = await startAgainst(up.url);
    const chat = await post(p, '/chat/completions', streamed);
    const messages = await post(p, '/messages', { model: 'm', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const whole = await post(p, '/messages', { model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    const n = await storedTurns();
    console.log(`closed mid-stream: chat ${chat.status} ${JSON.stringify(chat.text.slice(-120))}; messages ${messages.status} ${JSON.stringify(messages.text.slice(-160))}; non-streamed messages ${whole.status} ${whole.text.slice(0, 160)}; stored turns ${n}`);
    expect(chat.text).toMatch(/the connection was cut/);
    expect(messages.text).toMatch(/closed the connection before its reply ended/);
    expect(whole.status).toBe(502);
    expect(whole.text).toMatch(/closed the connection before its reply ended/);
    expect(n).toBe(0);
    expect(up.seen).toHaveLength(3);
    expect(up.seen.join('')).not.toContain(TOKEN);
    figure(`misbehaving upstreams: endless SSE cut at 64 MiB (limit option; default 4 GiB) with an error event, endless JSON cut at 64 MiB with a 502, closed mid-stream on 3 routes: stored turns 0; Rein token sent upstream 0/${up.seen.length + 2}`);
  });
});
