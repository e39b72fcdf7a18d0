// The capture server against a small in-test Core (the store's own tests cover the real one; the CLI and the
// end-to-end tests in this folder's siblings use the real core). Real sockets on 127.0.0.1, port 0.
import type * as NodeCrypto from 'node:crypto';
import http from 'node:http';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Actor, CaptureResult, EventName, Events, VerbName, VerbOutput } from '../../common/api.ts';
import { CaptureTurnInput } from '../../common/api.ts';
import { NotAvailableError } from '../../common/errors.ts';
import type { TurnSummary } from '../../common/domain.ts';
import type { Core } from '../core/types.ts';
import { resolveHome } from '../home.ts';
import { startCaptureServer } from './server.ts';
import type { CaptureServer } from './server.ts';
import { RateLimiter } from './guards.ts';

vi.mock('node:crypto', async (importOriginal) => {
  const orig = await importOriginal<typeof NodeCrypto>();
  return { ...orig, timingSafeEqual: vi.fn(orig.timingSafeEqual) };
});
const crypto = await import('node:crypto');

/** Enough of a core to exercise the transport: captureTurn with dedup, events, listener accounting. */
class TinyCore implements Core {
  readonly home = resolveHome({ REIN_HOME: path.join(tmpdir(), 'rein-tiny-core-unused') });
  readonly turns = new Map<string, TurnSummary>();
  readonly calls: { verb: VerbName; input: unknown; actor: Actor }[] = [];
  private readonly listeners = new Map<EventName, Set<(p: never) => void>>();

  async call<V extends VerbName>(verb: V, input: unknown, actor: Actor): Promise<VerbOutput<V>> {
    this.calls.push({ verb, input, actor });
    if (verb !== 'captureTurn') throw new NotAvailableError(verb, 'not part of the test core');
    const t = CaptureTurnInput.parse(input);
    const key = `${t.source}\0${t.eventId}`;
    const old = this.turns.get(key);
    if (old) return { turn: old, created: false } satisfies CaptureResult as VerbOutput<V>;
    const turn: TurnSummary = {
      id: this.turns.size + 1,
      source: t.source,
      session: t.session ?? null,
      eventId: t.eventId,
      createdAt: Date.now(),
      model: t.model ?? null,
      promptPreview: t.prompt.slice(0, 100),
      responsePreview: t.response.slice(0, 100),
      state: 'unrated',
      rating: null,
      onPolicy: t.tokens !== undefined,
    };
    this.turns.set(key, turn);
    this.emit('turnCaptured', turn);
    return { turn, created: true } satisfies CaptureResult as VerbOutput<V>;
  }
  emit<E extends EventName>(event: E, payload: Events[E]): void {
    for (const fn of this.listeners.get(event) ?? []) (fn as (p: Events[E]) => void)(payload);
  }
  on<E extends EventName>(event: E, fn: (payload: Events[E]) => void): () => void {
    const set = this.listeners.get(event) ?? new Set();
    this.listeners.set(event, set);
    set.add(fn as (p: never) => void);
    return () => void set.delete(fn as (p: never) => void);
  }
  listenerCount(): number {
    let n = 0;
    for (const s of this.listeners.values()) n += s.size;
    return n;
  }
  close(): void {}
}

const TOKEN = 'a'.repeat(64);
const turnBody = (eventId = 'e1') => ({ source: 'api', eventId, prompt: 'hi', response: 'hello' });

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: () => { error?: { code: string; message: string; field?: string } } & Record<string, unknown>;
}

function request(port: number, opts: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method: opts.method ?? 'GET', path: opts.path, headers: opts.headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) });
        });
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

let core: TinyCore;
let server: CaptureServer;
let logs: string[];
let rendererDir: string;

async function start(extra: Partial<Parameters<typeof startCaptureServer>[0]> = {}) {
  server = await startCaptureServer({
    core,
    token: TOKEN,
    port: 0,
    rateLimitPerMinute: 10_000,
    version: '9.9.9-test',
    rendererDir,
    log: (l) => logs.push(l),
    ...extra,
  });
}

function post(p: string, body: unknown, headers: Record<string, string> = {}) {
  return request(server.port, {
    method: 'POST',
    path: p,
    headers: { host: `127.0.0.1:${server.port}`, 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

beforeEach(() => {
  core = new TinyCore();
  logs = [];
  rendererDir = mkdtempSync(path.join(tmpdir(), 'rein-renderer-'));
  writeFileSync(path.join(rendererDir, 'index.html'), '<!doctype html><title>Rein</title><script src="./assets/app.js"></script>');
  mkdirSync(path.join(rendererDir, 'assets'));
  writeFileSync(path.join(rendererDir, 'assets', 'app.js'), 'console.log(1)');
});
afterEach(async () => {
  await server?.close();
  rmSync(rendererDir, { recursive: true, force: true });
});

describe('token', () => {
  it('refuses a request without a token, with a wrong one, or with a prefix of the right one, and nothing is stored', async () => {
    await start();
    const spy = vi.mocked(crypto.timingSafeEqual);
    spy.mockClear();
    const none = await post('/v1/turns', turnBody(), { authorization: '' });
    expect(none.status).toBe(401);
    expect(none.json().error?.code).toBe('unauthorized');
    expect(none.headers['www-authenticate']).toMatch(/Bearer/);
    const wrong = await post('/v1/turns', turnBody(), { authorization: `Bearer ${'b'.repeat(64)}` });
    expect(wrong.status).toBe(401);
    // A shorter token must be refused without throwing (timingSafeEqual throws on unequal lengths).
    const prefix = await post('/v1/turns', turnBody(), { authorization: `Bearer ${TOKEN.slice(0, 10)}` });
    expect(prefix.status).toBe(401);
    expect(spy).toHaveBeenCalled();
    expect(core.calls).toHaveLength(0);
    expect(logs.filter((l) => l.includes('401'))).toHaveLength(3);
  });

  it('accepts the right token as Bearer or as X-Rein-Token; 201 on create, 200 on a duplicate', async () => {
    await start();
    const a = await post('/v1/turns', turnBody('x'));
    expect(a.status).toBe(201);
    expect(a.json()).toMatchObject({ created: true, turn: { eventId: 'x', source: 'api' } });
    const b = await post('/v1/turns', turnBody('x'), { authorization: '', 'x-rein-token': TOKEN });
    expect(b.status).toBe(200);
    expect(b.json()).toMatchObject({ created: false });
    expect(core.turns.size).toBe(1);
    expect(core.calls.every((c) => c.actor === 'http')).toBe(true);
  });

  it('answers /api/health without a token, and only {ok, version}', async () => {
    await start();
    const r = await request(server.port, { path: '/api/health', headers: { host: `localhost:${server.port}` } });
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({ ok: true, version: '9.9.9-test' });
  });
});

describe('DNS rebinding defence', () => {
  it('refuses a Host that is not this loopback server', async () => {
    await start();
    for (const host of ['evil.example:' + server.port, `127.0.0.1:${server.port + 1}`, '127.0.0.1', 'localhost']) {
      const r = await post('/v1/turns', turnBody(), { host });
      expect(r.status, host).toBe(403);
      expect(r.json().error).toMatchObject({ code: 'forbidden', field: 'host' });
    }
    for (const host of [`localhost:${server.port}`, `[::1]:${server.port}`, `127.0.0.1:${server.port}`]) {
      const r = await request(server.port, { path: '/api/health', headers: { host } });
      expect(r.status, host).toBe(200);
    }
    expect(core.calls).toHaveLength(0);
  });

  it('refuses a foreign Origin and accepts this server as origin', async () => {
    await start();
    for (const origin of ['http://evil.example', `https://127.0.0.1:${server.port}`, 'null', `http://127.0.0.1:${server.port + 1}`]) {
      const r = await post('/v1/turns', turnBody(), { origin });
      expect(r.status, origin).toBe(403);
      expect(r.json().error?.field).toBe('origin');
    }
    const ok = await post('/v1/turns', turnBody(), { origin: `http://localhost:${server.port}` });
    expect(ok.status).toBe(201);
    expect(core.calls).toHaveLength(1);
  });
});

describe('body limits and validation', () => {
  it('answers 413 from Content-Length alone, before the body is sent', async () => {
    await start({ maxBodyBytes: 1024 });
    const r = await new Promise<{ status: number; connection?: string; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: server.port,
          method: 'POST',
          path: '/v1/turns',
          agent: false,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, 'content-length': String(10 * 1024 * 1024) },
        },
        (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body }));
        },
      );
      req.on('error', reject);
      // Send only the headers and a few bytes: the reply must not wait for the other ~10 MiB.
      req.write('{"source":');
    });
    expect(r.status).toBe(413);
    expect(r.connection).toBe('close');
    expect(JSON.parse(r.body).error.code).toBe('too_large');
    expect(core.calls).toHaveLength(0);
  });

  it('answers 413 to a chunked body once it passes the limit', async () => {
    await start({ maxBodyBytes: 1024 });
    const r = await post('/v1/turns', { ...turnBody(), prompt: 'x'.repeat(5000) }, { 'transfer-encoding': 'chunked' });
    expect(r.status).toBe(413);
    expect(core.calls).toHaveLength(0);
  });

  it('answers 415 to a body that is not JSON and 400 to broken JSON', async () => {
    await start();
    const form = await post('/v1/turns', 'source=api', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(415);
    expect(form.json().error?.field).toBe('content-type');
    const text = await post('/v1/turns', JSON.stringify(turnBody()), { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    const broken = await post('/v1/turns', '{"source": "api",');
    expect(broken.status).toBe(400);
    expect(broken.json().error?.code).toBe('bad_input');
    expect(broken.json().error?.message).toMatch(/not valid JSON/);
    expect(core.calls).toHaveLength(0);
    expect(logs.some((l) => l.includes('415') && l.includes('Content-Type'))).toBe(true);
  });

  it('names the offending field of a body the schema rejects', async () => {
    await start();
    const noEvent = await post('/v1/turns', { source: 'api', prompt: 'p', response: 'r' });
    expect(noEvent.status).toBe(400);
    expect(noEvent.json().error).toMatchObject({ code: 'bad_input', field: 'eventId' });
    const badRole = await post('/v1/turns', { ...turnBody(), context: [{ role: 'user', content: 'a' }, { role: '', content: 'b' }] });
    expect(badRole.json().error?.field).toBe('context.1.role');
    const extra = await post('/v1/turns', { ...turnBody(), surprise: 1 });
    expect(extra.json().error?.field).toBe('surprise');
    const badRate = await post('/api/rate', { value: 7 });
    expect(badRate.status).toBe(400);
    expect(badRate.json().error?.field).toBe('value');
    expect(core.calls).toHaveLength(0);
  });

  it('maps a core error to its status and an unknown verb to 404', async () => {
    await start();
    const na = await post('/api/startTraining', {});
    expect(na.status).toBe(409);
    expect(na.json().error?.code).toBe('not_available');
    const unknown = await post('/api/constructor', {});
    expect(unknown.status).toBe(404);
    const get = await request(server.port, { path: '/api/status', headers: { host: `127.0.0.1:${server.port}`, authorization: `Bearer ${TOKEN}` } });
    expect(get.status).toBe(404);
  });
});

describe('rate limit', () => {
  it('answers 429 with Retry-After once the minute allowance is spent', async () => {
    await start({ rateLimitPerMinute: 10 });
    const statuses: number[] = [];
    let retryAfter: string | undefined;
    for (let i = 0; i < 12; i++) {
      const r = await post('/v1/turns', turnBody(`r${i}`));
      statuses.push(r.status);
      if (r.status === 429) retryAfter = r.headers['retry-after'] as string;
    }
    expect(statuses.slice(0, 10).every((s) => s === 201)).toBe(true);
    expect(statuses.slice(10)).toEqual([429, 429]);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(core.turns.size).toBe(10);
  });

  it('refills at perMinute/60 per second and follows a settings change', async () => {
    let t = 0;
    const rl = new RateLimiter(60, () => t);
    for (let i = 0; i < 60; i++) expect(rl.take()).toBe(0);
    expect(rl.take()).toBe(1);
    t += 1000;
    expect(rl.take()).toBe(0);
    expect(rl.take()).toBeGreaterThan(0);
    rl.setLimit(6);
    t += 10_000;
    expect(rl.take()).toBe(0);
    expect(rl.take()).toBe(10);

    await start({ rateLimitPerMinute: 10 });
    core.emit('settingsChanged', { 'server.rateLimitPerMinute': 11 });
    let ok = 0;
    for (let i = 0; i < 12; i++) if ((await post('/v1/turns', turnBody(`s${i}`))).status === 201) ok++;
    expect(ok).toBe(10);
  });
});

describe('events', () => {
  it('streams every core event as SSE and disposes its listeners when the client goes', async () => {
    await start({ heartbeatMs: 50 });
    const before = core.listenerCount();
    const received: string[] = [];
    const req = http.request({
      host: '127.0.0.1',
      port: server.port,
      path: '/api/events',
      agent: false,
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      req.on('response', resolve);
      req.on('error', reject);
      req.end();
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    res.setEncoding('utf8');
    res.on('data', (c: string) => received.push(c));
    await vi.waitFor(() => expect(server.sseClients()).toBe(1));
    expect(core.listenerCount()).toBe(before + 9);

    await post('/v1/turns', turnBody('sse1'));
    core.emit('trainingProgress', { runId: 3, phase: 'training', step: 1, steps: 10, loss: 0.5, kl: null, clipFraction: null, tokensPerSecond: null, etaSeconds: null });
    await vi.waitFor(() => expect(received.join('')).toContain('event: trainingProgress'));
    const text = received.join('');
    const frames = text.split('\n\n').filter((f) => f.startsWith('event: '));
    expect(frames[0].split('\n')[0]).toBe('event: turnCaptured');
    expect(JSON.parse(frames[0].split('\n')[1].slice('data: '.length))).toMatchObject({ eventId: 'sse1' });
    expect(JSON.parse(frames[1].split('\n')[1].slice('data: '.length))).toMatchObject({ runId: 3, step: 1 });
    await vi.waitFor(() => expect(received.join('')).toContain(': heartbeat'));

    res.destroy();
    req.destroy();
    await vi.waitFor(() => expect(server.sseClients()).toBe(0));
    expect(core.listenerCount()).toBe(before);
  });

  it('refuses the event stream without a token', async () => {
    await start();
    const r = await request(server.port, { path: '/api/events' });
    expect(r.status).toBe(401);
    expect(server.sseClients()).toBe(0);
  });

  it('ends event streams when the server closes', async () => {
    await start();
    const req = http.get({ host: '127.0.0.1', port: server.port, path: '/api/events', agent: false, headers: { 'x-rein-token': TOKEN } });
    const res = await new Promise<http.IncomingMessage>((resolve) => req.on('response', resolve));
    const ended = new Promise<void>((resolve) => res.on('close', () => resolve()));
    res.resume();
    await vi.waitFor(() => expect(server.sseClients()).toBe(1));
    const before = Date.now();
    await server.close();
    await ended;
    expect(Date.now() - before).toBeLessThan(1500);
    expect(core.listenerCount()).toBe(0);
  });
});

describe('static renderer', () => {
  it('serves the built renderer with a strict CSP, without a token', async () => {
    await start();
    const host = { host: `127.0.0.1:${server.port}` };
    const index = await request(server.port, { path: '/', headers: host });
    expect(index.status).toBe(200);
    expect(index.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(index.text).toContain('<title>Rein</title>');
    const csp = String(index.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(index.headers['x-content-type-options']).toBe('nosniff');
    const js = await request(server.port, { path: '/assets/app.js', headers: host });
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toMatch(/^text\/javascript/);
    expect(js.text).toBe('console.log(1)');
    const route = await request(server.port, { path: '/dashboard', headers: host });
    expect(route.text).toContain('<title>Rein</title>');
    expect((await request(server.port, { path: '/assets/missing.js', headers: host })).status).toBe(404);
  });

  it('does not serve files outside the renderer directory', async () => {
    const outside = path.join(path.dirname(rendererDir), `secret-${path.basename(rendererDir)}.txt`);
    writeFileSync(outside, 'TOP-SECRET-CONTENT');
    symlinkSync(outside, path.join(rendererDir, 'link.txt'));
    try {
      await start();
      const host = { host: `127.0.0.1:${server.port}` };
      for (const p of ['/../' + path.basename(outside), '/%2e%2e/' + path.basename(outside), '/assets/..%2f..%2f' + path.basename(outside), '/link.txt']) {
        const r = await request(server.port, { path: p, headers: host });
        expect(r.text, p).not.toContain('TOP-SECRET-CONTENT');
        expect(r.status, p).toBe(404);
      }
    } finally {
      rmSync(outside, { force: true });
    }
  });

  it('answers 404 at / when no renderer directory is given', async () => {
    await start({ rendererDir: null });
    const r = await request(server.port, { path: '/', headers: { host: `127.0.0.1:${server.port}` } });
    expect(r.status).toBe(404);
  });
});
