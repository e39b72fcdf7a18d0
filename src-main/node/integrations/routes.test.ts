// The hook routes mounted on the real capture server over the real SQLite core: auth, size and shape guards,
// and the pending-turn model (`/rl good` rates the newest unrated turn of that session).
import Database from 'better-sqlite3';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCore } from '../core/core.ts';
import type { ReinCore } from '../core/core.ts';
import { resolveHome } from '../home.ts';
import { startCaptureServer } from '../capture-server/server.ts';
import type { CaptureServer } from '../capture-server/server.ts';
import { createHookRoutes } from './index.ts';
import { memoryLog } from './shared/log.ts';

const TOKEN = 'ef'.repeat(32);
let core: ReinCore;
let server: CaptureServer;
const serverLog: string[] = [];
const hookLog = memoryLog();

beforeAll(async () => {
  core = createCore({ home: resolveHome({ REIN_HOME: mkdtempSync(path.join(tmpdir(), 'rein-routes-')) }) });
  server = await startCaptureServer({ core, token: TOKEN, port: 0, rateLimitPerMinute: 10_000, version: 't', maxBodyBytes: 64 * 1024, log: (l) => serverLog.push(l), hooks: createHookRoutes(core, hookLog) });
});
afterAll(async () => {
  await server.close();
  core.close();
});

const post = (route: string, body: unknown, token: string | null = TOKEN) =>
  fetch(`${server.url}hooks/${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('hook routes on the capture server', () => {
  it('unauthenticated, oversized and unknown posts are rejected with a logged reason and store nothing', async () => {
    const stop = { hook_event_name: 'Stop', session_id: 's0', prompt_id: 'p', last_assistant_message: 'a' };
    expect((await post('claude', stop, null)).status).toBe(401);
    expect((await post('claude', stop, 'x'.repeat(64))).status).toBe(401);
    expect((await post('claude', { ...stop, pad: 'x'.repeat(70 * 1024) })).status).toBe(413);
    expect((await post('nope', stop)).status).toBe(404);
    const bad = await post('claude', '{"hook_event_name": ');
    expect(bad.status).toBe(400);
    expect(serverLog.filter((l) => l.includes('rejected'))).toHaveLength(5);
    expect(core.status().turns.total).toBe(0);
  });

  it('a schema-invalid hook body is a 200 {} (never blocks the agent), logged', async () => {
    const r = await post('claude', { hook_event_name: 'Stop' });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({});
    expect(hookLog.lines.at(-1)!.message).toMatch(/does not match/);
  });

  it('/rl good rates the newest unrated turn of that session in the real store', async () => {
    for (const [s, id, text] of [['A', 'p1', 'first'], ['A', 'p2', 'second'], ['B', 'p3', 'other session']] as const) {
      await post('claude', { hook_event_name: 'UserPromptSubmit', session_id: s, prompt_id: id, prompt: `q ${text}` });
      expect((await post('claude', { hook_event_name: 'Stop', session_id: s, prompt_id: id, last_assistant_message: `a ${text}` })).status).toBe(200);
    }
    const rate = async (id: string) => (await (await post('claude', { hook_event_name: 'UserPromptSubmit', session_id: 'A', prompt_id: id, prompt: '/rl good' })).json()) as { reason: string };
    expect((await rate('r1')).reason).toBe('Rated 👍 · 1 pending · next training at 32');
    expect((await rate('r2')).reason).toBe('Rated 👍 · 2 pending · next training at 32');
    expect((await rate('r3')).reason).toMatch(/^Nothing to rate in this session yet/);
    const turns = await core.call('listTurns', { session: 'A' }, 'test');
    expect(turns.items.map((t) => [t.promptPreview, t.state])).toEqual([
      ['q second', 'rated'],
      ['q first', 'rated'],
    ]);
    const b = await core.call('listTurns', { session: 'B' }, 'test');
    expect(b.items[0]!.state).toBe('unrated');
  });
});

describe('one-shot /rl on the local model, where the proxy stores the turns and no Stop or notify hook runs', () => {
  // `rein setup claude|codex --local-model` keeps only the prompt hooks; `rein serve-model` stores each turn under
  // the agent's own session id (agent-proxy.ts). `claude -p "/rl good"` and `codex exec "/rl good"` are new sessions.
  const proxyTurn = (source: string, session: string, eventId: string, prompt: string) =>
    core.call('captureTurn', { source, session, eventId, prompt, response: `answer to ${prompt}`, model: 'rein-local' }, 'proxy');

  it('Claude: the newest proxy turn of a session prompted in the same directory is rated, not one of another directory', async () => {
    const cwd = '/home/dev/local-claude';
    await post('claude', { hook_event_name: 'UserPromptSubmit', session_id: 'lc-1', cwd, prompt_id: 'x1', prompt: 'first question' });
    const first = await proxyTurn('claude-code', 'lc-1', 'proxy-agent-lc1', 'first question');
    await post('claude', { hook_event_name: 'UserPromptSubmit', session_id: 'lc-other', cwd: '/elsewhere', prompt_id: 'x2', prompt: 'elsewhere' });
    const elsewhere = await proxyTurn('claude-code', 'lc-other', 'proxy-agent-lc-other', 'elsewhere');
    const r = (await (await post('claude', { hook_event_name: 'UserPromptSubmit', session_id: 'lc-2', cwd, prompt_id: 'x3', prompt: '/rl good' })).json()) as { decision: string; reason: string };
    expect(r.decision).toBe('block');
    expect(r.reason).toMatch(/^Rated 👍/);
    expect((await core.call('getTurn', { turnId: first.turn!.id }, 'test')).state).toBe('rated');
    expect((await core.call('getTurn', { turnId: elsewhere.turn!.id }, 'test')).state).toBe('unrated');
    // Rated already: the next one-shot finds nothing in that directory.
    const again = (await (await post('claude', { hook_event_name: 'UserPromptSubmit', session_id: 'lc-3', cwd, prompt_id: 'x4', prompt: '/rl bad' })).json()) as { reason: string };
    expect(again.reason).toMatch(/^Nothing to rate/);
  });

  it('Codex: `codex exec "/rl bad"` rates the proxy turn of the previous `codex exec` in that directory', async () => {
    const cwd = '/home/dev/local-codex';
    await post('codex', { hook_event_name: 'UserPromptSubmit', session_id: 'cx-1', turn_id: 't1', cwd, model: 'rein-local', prompt: 'say hi' });
    const turn = await proxyTurn('codex', 'cx-1', 'proxy-agent-cx1', 'say hi');
    const r = (await (await post('codex', { hook_event_name: 'UserPromptSubmit', session_id: 'cx-2', turn_id: 't2', cwd, model: 'rein-local', prompt: '/rl bad' })).json()) as { decision: string; reason: string };
    expect(r).toEqual({ decision: 'block', reason: expect.stringMatching(/^Rated 👎/) as unknown as string });
    expect((await core.call('getTurn', { turnId: turn.turn!.id }, 'test')).state).toBe('rated');
  });
});

describe('hook captures that are not stored (issue #21 item 4)', () => {
  it('a turn neither stored nor spooled is answered 503 by both hooks; one refused by the settings is a final 200 {}', async () => {
    const home = resolveHome({ REIN_HOME: mkdtempSync(path.join(tmpdir(), 'rein-routes-busy-')) });
    const busyCore = createCore({ home, spoolCaptures: true });
    const busyServer = await startCaptureServer({ core: busyCore, token: TOKEN, port: 0, rateLimitPerMinute: 10_000, version: 't', log: () => {}, hooks: createHookRoutes(busyCore, memoryLog()) });
    const other = new Database(home.dbPath);
    try {
      const send = (route: string, body: unknown) =>
        fetch(`${busyServer.url}hooks/${route}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify(body) });
      const stop = { hook_event_name: 'Stop', session_id: 'busy', prompt_id: 'p', last_assistant_message: 'a' };
      const notify = { type: 'agent-turn-complete', 'thread-id': 't', 'turn-id': 'u', 'input-messages': ['q'], 'last-assistant-message': 'a' };
      await send('claude', { hook_event_name: 'UserPromptSubmit', session_id: 'busy', prompt_id: 'p', prompt: 'q' });
      // Another connection holds the write lock, and a directory stands where the spool file goes.
      mkdirSync(home.captureSpoolPath, { recursive: true });
      other.exec('BEGIN IMMEDIATE');
      expect((await send('claude', stop)).status).toBe(503);
      expect((await send('codex', notify)).status).toBe(503);
      other.exec('ROLLBACK');
      expect(busyCore.status().turns.total).toBe(0);
      // Paused by the user: a retry must not store it later, so the answer is final.
      await busyCore.call('setSettings', { values: { 'capture.paused': true } }, 'test');
      for (const [route, body] of [['claude', stop], ['codex', notify]] as const) {
        const r = await send(route, body);
        expect([r.status, await r.json()]).toEqual([200, {}]);
      }
      expect(busyCore.status().turns.total).toBe(0);
    } finally {
      other.close();
      await busyServer.close();
      busyCore.close();
    }
  });
});
