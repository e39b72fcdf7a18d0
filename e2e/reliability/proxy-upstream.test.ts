// Issue #21 item 6: the proxy against a raw loopback upstream that never answers. A silent upstream gets a 504 in
// bounded time, and clients that give up leave no upstream socket open.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createCore, type ReinCore } from '../../src-main/node/core/core.ts';
import { resolveHome } from '../../src-main/node/home.ts';
import { startProxyServer, type ProxyServer } from '../../src-main/node/serving/proxy.ts';

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

async function startAgainst(url: string, upstreamIdleMs?: number): Promise<ProxyServer> {
  dir = mkdtempSync(path.join(tmpdir(), 'rein-rel-proxy-'));
  core = createCore({ home: resolveHome({ REIN_HOME: dir }) });
  proxy = await startProxyServer({
    core, token: TOKEN, port: 0, upstream: () => ({ baseUrl: url, kind: 'openai' }), vocab: () => null, producer: async () => null, log: () => {},
    ...(upstreamIdleMs === undefined ? {} : { upstreamIdleMs }),
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
