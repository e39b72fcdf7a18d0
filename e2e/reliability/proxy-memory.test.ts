// The proxy's memory while it relays a long reply on the agent routes (`/v1/messages`, `/v1/responses`), measured on
// the real `rein serve-model` child (its RSS from /proc): what it keeps of a reply to store its turn is capped as on
// the chat route (its bytes, at most COPY_MAX_BYTES, read once the reply has ended: upstream-limit.ts CaptureBudget),
// so relaying tens of MB of a streamed reply with logprobs grows its memory by far less than the reply, and the turn
// is still stored.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { REIN_BIN } from '../../src-main/cli/test-utils/rein.ts';
import { createCore } from '../../src-main/node/core/core.ts';
import { readOrCreateToken, resolveHome } from '../../src-main/node/home.ts';
import { figure } from './figures.ts';

const MB = 1024 ** 2;
// Each route relays this many bytes of upstream SSE (CI-sized; the cap the fix brings is 32 MiB of it).
const RELAY = 96 * MB;
const home = mkdtempSync(path.join(tmpdir(), 'rein-proxy-mem-'));
let upstream: Server;
let child: ChildProcess;
let proxyUrl = '';
let token = '';
let childLog = '';

/** A chat chunk of 64 four-character tokens, each with its logprob, as an upstream asked for logprobs sends it. */
const piece = (() => {
  const toks = Array.from({ length: 64 }, (_, i) => `t${String(i).padStart(2, '0')} `.slice(0, 4));
  const ev = { id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { content: toks.join('') }, logprobs: { content: toks.map((t) => ({ token: t, logprob: -0.125, bytes: [...Buffer.from(t)], top_logprobs: [] })) }, finish_reason: null }] };
  return Buffer.from(`data: ${JSON.stringify(ev)}\n\n`);
})();

beforeAll(async () => {
  upstream = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let sent = 0;
    const pump = (): void => {
      while (sent < RELAY) {
        sent += piece.length;
        if (!res.write(piece)) return void res.once('drain', pump);
      }
      res.end(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1 } })}\n\ndata: [DONE]\n\n`);
    };
    pump();
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const up = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
  const core = createCore({ home: resolveHome({ REIN_HOME: home }) });
  await core.call('setSettings', { values: { 'proxy.upstreamKind': 'openai' } }, 'test');
  core.close();
  token = readOrCreateToken(resolveHome({ REIN_HOME: home }));
  child = spawn(process.execPath, [REIN_BIN, 'serve-model', '--port', '0', '--upstream', up], { env: { ...process.env, REIN_HOME: home, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  proxyUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`rein serve-model printed no address:\n${childLog}`)), 30_000);
    const on = (d: Buffer) => {
      childLog += d.toString();
      const m = /http:\/\/127\.0\.0\.1:\d+(\/v1)?/.exec(childLog);
      if (m) {
        clearTimeout(timer);
        resolve(m[0].endsWith('/v1') ? m[0] : `${m[0]}/v1`);
      }
    };
    child.stdout!.on('data', on);
    child.stderr!.on('data', on);
  });
}, 60_000);
afterAll(async () => {
  child?.kill('SIGTERM');
  await new Promise((r) => (child?.exitCode !== null ? r(null) : child.once('exit', r)));
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
  rmSync(home, { recursive: true, force: true });
});

const rss = (): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) * 1024;

/** Relays one reply; the child's RSS before, at its peak while relaying, at its peak while storing the turn, and after. */
async function relay(route: string, body: unknown): Promise<{ got: number; base: number; relayPeak: number; capturePeak: number; after: number }> {
  const base = rss();
  let peak = base;
  const sampler = setInterval(() => (peak = Math.max(peak, rss())), 25);
  const r = await fetch(`${proxyUrl}${route}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'x-api-key': token, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  let got = 0;
  for await (const c of r.body!) got += (c as Uint8Array).length;
  const relayPeak = Math.max(peak, rss());
  // The turn is stored once the proxy is quiet (proxy.ts QUIET_MS), from what was kept of the reply.
  await new Promise((res) => setTimeout(res, 3000));
  clearInterval(sampler);
  return { got, base, relayPeak, capturePeak: Math.max(peak, rss()), after: rss() };
}

test('relaying tens of MB on /v1/messages and /v1/responses grows the proxy\'s memory by far less than the reply', { timeout: 180_000 }, async () => {
  const lines: string[] = [];
  const grew: number[] = [];
  const routes: [string, unknown][] = [
    ['/messages', { model: 'm', max_tokens: 100_000, stream: true, messages: [{ role: 'user', content: 'write at length' }] }],
    ['/responses', { model: 'm', stream: true, input: 'write at length' }],
  ];
  for (const [route, body] of routes) {
    const m = await relay(route, body);
    grew.push(m.relayPeak - m.base, m.capturePeak - m.base);
    const f = (n: number) => (n / MB).toFixed(0);
    lines.push(`${route}: ${f(RELAY)} MB of upstream SSE relayed as ${f(m.got)} MB; RSS ${f(m.base)} MB → peak ${f(m.relayPeak)} relaying, ${f(m.capturePeak)} storing the turn → ${f(m.after)} MB 3 s after`);
  }
  const core = createCore({ home: resolveHome({ REIN_HOME: home }) });
  const turns = await core.call('listTurns', {}, 'test');
  core.close();
  console.log(`${lines.join('\n')}\nstored turns: ${turns.items.map((t) => `${t.source} ${t.responsePreview.length} chars`).join(', ')}`);
  expect(turns.items.map((t) => t.source).sort()).toEqual(['claude-code', 'codex']);
  // While relaying, the proxy holds the kept bytes (at most 32 MiB) and what one chunk's translation needs; storing
  // the turn reads those bytes once (its text and logprobs), as the chat route does. Neither grows with the reply.
  // (Before, /v1/messages held the reply's text and logprobs as it read them: +340 MB for this relay.) /v1/responses
  // must also send the whole text again in its closing events (output_text.done, content_part.done, output_item.done,
  // response.completed): they are written one at a time, each waiting for the client to drain the one before, so at
  // most one of them is held (before, the four went out as one string of ~20 M characters: +175 to +181 MB for this relay).
  const [messagesRelay, messagesCapture, responsesRelay, responsesCapture] = grew;
  expect(messagesRelay).toBeLessThan(160 * MB);
  expect(messagesCapture).toBeLessThan(256 * MB);
  expect(responsesRelay).toBeLessThan(160 * MB);
  expect(responsesCapture).toBeLessThan(256 * MB);
  figure(`proxy memory on the agent routes: ${lines.join('; ')}`);
});
