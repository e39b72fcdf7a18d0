// The capture spool (issue #21 item 4) over the real SQLite core, with a second real connection holding the write
// lock the way another process does: a capture is spooled after a short wait instead of sleeping out the 5 s busy
// timeout, is stored in arrival order once the lock is free, and a replay repeated after a crash stores nothing twice.
import Database from 'better-sqlite3';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { CaptureTurnInput } from '../../common/api.ts';
import type { TurnSummary } from '../../common/domain.ts';
import { resolveHome } from '../home.ts';
import { createCore } from './core.ts';
import type { ReinCore } from './core.ts';
import { newCipher } from '../store/keyring.ts';
import { CAPTURE_WAIT_MS, CaptureSpool, spoolLine, unsealSpoolFile } from './spool.ts';

const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const f of cleanup.splice(0).reverse()) f();
});

function open(dir?: string): { core: ReinCore; dir: string; captured: TurnSummary[] } {
  const home = dir ?? mkdtempSync(path.join(tmpdir(), 'rein-spool-'));
  const core = createCore({ home: resolveHome({ REIN_HOME: home }), spoolCaptures: true });
  const captured: TurnSummary[] = [];
  const off = core.on('turnCaptured', (t) => captured.push(t));
  cleanup.push(() => {
    off();
    core.close();
    if (dir === undefined) rmSync(home, { recursive: true, force: true });
  });
  return { core, dir: home, captured };
}

/** Another connection (as another process has) that holds the write lock until `release()`. */
function holdWriteLock(dbPath: string): { release: () => void } {
  const other = new Database(dbPath);
  other.exec('BEGIN IMMEDIATE');
  let held = true;
  const release = () => {
    if (held) other.exec('COMMIT');
    held = false;
    if (other.open) other.close();
  };
  cleanup.push(release);
  return { release };
}

const turn = (eventId: string): CaptureTurnInput => ({ source: 'api', session: 's', eventId, prompt: `prompt ${eventId}`, response: `answer ${eventId}` });

async function until(cond: () => boolean, ms = 5_000): Promise<void> {
  for (const t0 = Date.now(); !cond(); await new Promise((r) => setTimeout(r, 20))) {
    if (Date.now() - t0 > ms) throw new Error(`not within ${ms} ms`);
  }
}

it('a capture that meets a held write lock is spooled after a short wait and stored in order once the lock is free', async () => {
  const { core, captured } = open();
  const lock = holdWriteLock(core.home.dbPath);
  const t0 = performance.now();
  const a = await core.call('captureTurn', turn('a'), 'hook');
  const waitA = performance.now() - t0;
  const t1 = performance.now();
  const b = await core.call('captureTurn', { ...turn('b'), prompt: 'my password=hunter2 is here' }, 'hook');
  const waitB = performance.now() - t1;
  console.log(`spooled behind a held lock: first capture answered in ${waitA.toFixed(0)} ms, second in ${waitB.toFixed(0)} ms (short wait ${CAPTURE_WAIT_MS} ms)`);
  expect(a).toEqual({ turn: null, created: false, spooled: true });
  expect(b).toEqual({ turn: null, created: false, spooled: true });
  // Not the 5 s busy timeout; the second queues behind the first without waiting for the lock at all.
  expect(waitA).toBeLessThan(1_000);
  expect(waitB).toBeLessThan(1_000);
  const file = core.home.captureSpoolPath;
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  expect(lines).toHaveLength(2);
  expect(statSync(file).mode & 0o777).toBe(0o600);
  // What is spooled is what would be stored: already redacted by the core.
  expect(lines[1]).not.toContain('hunter2');
  expect(core.status().turns.total).toBe(0);

  lock.release();
  await until(() => core.status().turns.total === 2);
  const stored = (await core.call('listTurns', {}, 'test')).items.sort((x, y) => x.id - y.id);
  expect(stored.map((t) => t.eventId)).toEqual(['a', 'b']);
  expect(captured.map((t) => t.eventId)).toEqual(['a', 'b']);
  expect(existsSync(file)).toBe(false);
  // The lock is free and nothing waits: the next capture is stored at once.
  const c = await core.call('captureTurn', turn('c'), 'hook');
  expect(c.created).toBe(true);
  expect(c.turn?.eventId).toBe('c');
});

it('a replay repeated after a crash (the batch committed, the spool not yet rewritten) stores nothing twice', async () => {
  const first = open();
  const lock = holdWriteLock(first.core.home.dbPath);
  for (const id of ['a', 'b', 'c']) expect((await first.core.call('captureTurn', turn(id), 'hook')).spooled).toBe(true);
  const spooled = readFileSync(first.core.home.captureSpoolPath, 'utf8');
  lock.release();
  await until(() => first.core.status().turns.total === 3);
  // The crash: the spool is back as it was before its batch was committed.
  writeFileSync(first.core.home.captureSpoolPath, spooled, { mode: 0o600 });
  first.core.close();
  const again = open(first.dir);
  await until(() => !existsSync(again.core.home.captureSpoolPath));
  expect(again.core.status().turns.total).toBe(3);
  expect(again.captured).toEqual([]);
});

it('a line torn by a crash is set aside, and the rest of the spool is stored', async () => {
  const { core } = open();
  const file = path.join(core.home.dir, 'spool', 'other.jsonl');
  const stored: string[] = [];
  const t = { source: 'api', session: null, eventId: 'whole', createdAt: 1, prompt: 'p', context: [], response: 'r', model: null, tokens: Buffer.from([1, 2, 3, 4]), logprobs: null, adapterVersion: null, policy: null, truncated: false };
  const whole = spoolLine(t, 'hook');
  // A crash while the next line was written: its first 40 bytes, no newline.
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, whole + whole.slice(0, 40), { mode: 0o600 });

  const logged: string[] = [];
  const reader = new CaptureSpool({ store: core.store, file, stored: (r) => stored.push(r.turn.eventId), log: (l) => logged.push(l) });
  expect(reader.pending).toBe(1);
  expect(readFileSync(`${file}.rejected`, 'utf8')).toBe(whole.slice(0, 40) + '\n');
  expect(readFileSync(file, 'utf8')).toBe(whole);
  expect(logged.join('\n')).toMatch(/1 lines of the capture spool do not decode/);
  expect(reader.replay()).toBe(0);
  reader.close();
  expect(stored).toEqual(['whole']);
  // The byte columns survive the spool.
  const row = core.store.db.prepare(`SELECT tokens FROM turns WHERE event_id = 'whole'`).get() as { tokens: Buffer };
  expect([...row.tokens]).toEqual([1, 2, 3, 4]);
});

it('with encryption at rest on, a spooled capture is sealed on disk and stored (sealed) from the spool', () => {
  const { core } = open();
  core.store.cipher = newCipher();
  const file = path.join(core.home.dir, 'spool', 'sealed.jsonl');
  const t = { source: 'api', session: null, eventId: 'sealed', createdAt: 1, prompt: 'a secret prompt', context: [], response: 'a secret answer', model: null, tokens: null, logprobs: null, adapterVersion: null, policy: null, truncated: false };
  const line = spoolLine(t, 'hook', core.store.cipher);
  expect(line).not.toContain('secret');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, line, { mode: 0o600 });
  const stored: string[] = [];
  const reader = new CaptureSpool({ store: core.store, file, stored: (r) => stored.push(r.turn.eventId) });
  expect(reader.replay()).toBe(0);
  reader.close();
  expect(stored).toEqual(['sealed']);
  const row = core.store.db.prepare(`SELECT prompt FROM turns WHERE event_id = 'sealed'`).get() as { prompt: unknown };
  expect(Buffer.isBuffer(row.prompt)).toBe(true);
  expect(core.store.stmt<{ prompt: string }>(`SELECT prompt FROM turns WHERE event_id = 'sealed'`).get()!.prompt).toBe('a secret prompt');
});

it('rein encryption disable opens the sealed spool lines into the clear, keeps a torn line as it is, and they store with no key', () => {
  const { core } = open();
  const cipher = newCipher();
  const file = path.join(core.home.dir, 'spool', 'unseal.jsonl');
  const t = (eventId: string) => ({ source: 'api', session: null, eventId, createdAt: 1, prompt: `prompt ${eventId}`, context: [], response: 'a secret answer', model: null, tokens: null, logprobs: null, adapterVersion: null, policy: null, truncated: false });
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, spoolLine(t('one'), 'hook', cipher) + spoolLine(t('plain'), 'hook', null) + '{"sealed":"AAAA"}\n{"v":1,"act\n' + spoolLine(t('two'), 'hook', cipher), { mode: 0o600 });
  expect(unsealSpoolFile(file, cipher)).toBe(2);
  const text = readFileSync(file, 'utf8');
  expect(text.split('\n').filter((l) => l.includes('a secret answer'))).toHaveLength(3);
  expect(text).toContain('{"sealed":"AAAA"}\n{"v":1,"act\n');
  expect(statSync(file).mode & 0o777).toBe(0o600);
  const stored: string[] = [];
  const reader = new CaptureSpool({ store: core.store, file, stored: (r) => stored.push(r.turn.eventId), log: () => {} });
  expect(reader.replay()).toBe(0);
  reader.close();
  expect(stored).toEqual(['one', 'plain', 'two']);
  expect(unsealSpoolFile(path.join(core.home.dir, 'spool', 'none.jsonl'), cipher)).toBe(0);
});
