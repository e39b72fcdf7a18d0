// runServe in this process against the real core on a temp home (port 0).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import type { EventName } from '../common/api.ts';
import { ReinError } from '../common/errors.ts';
import { createHttpClient } from './client.ts';
import { readOrCreateToken, resolveHome } from './home.ts';
import type { ReinHome } from './home.ts';
import { readServerInfo } from './capture-server/info.ts';
import { runServe } from './headless.ts';
import type { Serving } from './headless.ts';

let home: ReinHome;
let serving: Serving | null;
const quiet = () => {};

beforeEach(() => {
  home = resolveHome({ REIN_HOME: mkdtempSync(path.join(tmpdir(), 'rein-serve-')) });
  serving = null;
});
afterEach(async () => {
  await serving?.close();
  rmSync(home.dir, { recursive: true, force: true });
});

it('writes server.json (0600) and the lock, answers over HTTP with the token, and removes both on close', async () => {
  serving = await runServe({ home, port: 0, log: quiet, handleSignals: false, rendererDir: null });
  const info = readServerInfo(home);
  expect(info).toEqual({ pid: process.pid, port: serving.port, url: `http://127.0.0.1:${serving.port}/`, startedAt: expect.any(Number) });
  expect(statSync(home.serverInfoPath).mode & 0o777).toBe(0o600);
  expect(readFileSync(home.lockPath, 'utf8').trim()).toBe(String(process.pid));
  expect(serving.openUrl).toBe(`${serving.url}#token=${readOrCreateToken(home)}`);

  const client = createHttpClient({ url: serving.url, token: readOrCreateToken(home) });
  expect(await client.health()).toEqual({ ok: true, version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
  const cap = await client.call('captureTurn', { source: 'api', eventId: 'e1', prompt: 'p', response: 'r' });
  expect(cap.created).toBe(true);
  const rated = await client.call('rate', { value: 'good' });
  expect(rated.rating.turnId).toBe(cap.turn!.id);
  expect(rated.status.ratings.good).toBe(1);

  await serving.close();
  await serving.closed;
  expect(existsSync(home.serverInfoPath)).toBe(false);
  expect(existsSync(home.lockPath)).toBe(false);
  await expect(client.health()).rejects.toMatchObject({ name: 'ConnectionError' });
  serving = null;
});

it('refuses a second serve on the same home with a locked error, and leaves the first one running', async () => {
  serving = await runServe({ home, port: 0, log: quiet, handleSignals: false, rendererDir: null });
  const second = runServe({ home, port: 0, log: quiet, handleSignals: false, rendererDir: null });
  await expect(second).rejects.toBeInstanceOf(ReinError);
  await expect(second).rejects.toMatchObject({ code: 'locked' });
  expect(readServerInfo(home)?.port).toBe(serving.port);
  const client = createHttpClient({ url: serving.url, token: readOrCreateToken(home) });
  expect((await client.call('status', {})).turns.total).toBe(0);
});

it('takes over a stale lock left by a dead process', async () => {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  writeFileSync(home.lockPath, `${r.stdout}\n`);
  writeFileSync(home.serverInfoPath, JSON.stringify({ pid: Number(r.stdout), port: 1234, url: 'http://127.0.0.1:1234/', startedAt: 1 }));
  expect(readServerInfo(home)).toBeNull();
  serving = await runServe({ home, port: 0, log: quiet, handleSignals: false, rendererDir: null });
  expect(readFileSync(home.lockPath, 'utf8').trim()).toBe(String(process.pid));
  expect(readServerInfo(home)?.port).toBe(serving.port);
});

it('streams the real core\'s events over SSE and disposes the listeners when the client goes', async () => {
  serving = await runServe({ home, port: 0, log: quiet, handleSignals: false, rendererDir: null });
  const client = createHttpClient({ url: serving.url, token: readOrCreateToken(home) });
  const before = serving.core.listenerCount();
  const seen: { name: EventName; payload: unknown }[] = [];
  const ctrl = new AbortController();
  const reading = client.events((name, payload) => seen.push({ name, payload }), ctrl.signal);
  await vi.waitFor(() => expect(serving!.server.sseClients()).toBe(1));
  await client.call('captureTurn', { source: 'api', eventId: 'ev', prompt: 'p', response: 'r' });
  await client.call('rate', { value: 3 });
  await client.call('setSettings', { values: { 'training.threshold': 5 } });
  await vi.waitFor(() => expect(seen.map((s) => s.name)).toEqual(expect.arrayContaining(['turnCaptured', 'ratingAdded', 'settingsChanged'])));
  const added = seen.find((s) => s.name === 'ratingAdded')!.payload as { rating: { kind: string; scale: number } };
  expect(added.rating).toMatchObject({ kind: 'scale', scale: 3 });
  ctrl.abort();
  await reading;
  await vi.waitFor(() => expect(serving!.server.sseClients()).toBe(0));
  expect(serving.core.listenerCount()).toBe(before);
});

it('applies a rate-limit setting changed while running', async () => {
  serving = await runServe({ home, port: 0, log: quiet, handleSignals: false, rendererDir: null });
  const client = createHttpClient({ url: serving.url, token: readOrCreateToken(home) });
  await client.call('setSettings', { values: { 'server.rateLimitPerMinute': 10 } });
  const results = await Promise.allSettled(Array.from({ length: 12 }, () => client.call('status', {})));
  const limited = results.filter((r) => r.status === 'rejected' && (r.reason as ReinError).code === 'rate_limited');
  expect(limited.length).toBeGreaterThanOrEqual(2);
});
