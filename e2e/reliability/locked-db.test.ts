// Issue #21 item 4: while another process holds rein.db's write lock, a hook capture must never be answered 2xx
// unless it is stored (at the latest once the lock is released), and the server must stay responsive. It used to
// answer 200 `{}` after a 5 s synchronous busy wait on the one HTTP thread, with nothing stored.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { ROOT, startServe } from '../harness.ts';
import type { ServeChild } from '../harness.ts';

/** How long the second process holds the write lock: longer than the 5 s busy timeout, as in the probe. */
const HOLD_MS = 8_000;
const PER_KIND = 8;

let serve: ServeChild | undefined;
let holder: ChildProcess | undefined;
afterEach(async () => {
  holder?.kill('SIGKILL');
  holder = undefined;
  await serve?.stop();
  serve = undefined;
});

/**
 * A second process with its own better-sqlite3 connection that takes the write lock (BEGIN IMMEDIATE), says so,
 * holds it for `ms` and commits. Resolves once the lock is held; `released` once it is committed.
 */
async function holdWriteLock(db: string, ms: number): Promise<{ child: ChildProcess; released: Promise<void> }> {
  const script = `
    const Database = require(${JSON.stringify(path.join(ROOT, 'node_modules/better-sqlite3'))});
    const db = new Database(${JSON.stringify(db)}, { timeout: 10000 });
    db.exec('BEGIN IMMEDIATE');
    db.prepare("INSERT INTO audit (at, actor, action, target, detail) VALUES (?, 'test', 'hold', NULL, '{}')").run(Date.now());
    process.stdout.write('locked\\n');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ${ms});
    db.exec('COMMIT');
    db.close();
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const released = new Promise<void>((resolve, reject) =>
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`the lock holder exited with ${code}: ${err}`)))),
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
    released.then(() => reject(new Error('the lock holder exited before taking the lock')), reject);
  });
  return { child, released };
}

interface Capture {
  kind: string;
  eventId: string;
  status: number;
}

/** Posts one hook capture (with its prompt first where the hook needs it) and returns the capture's status. */
async function sendCaptures(s: ServeChild): Promise<Capture[]> {
  const sends: Promise<Capture>[] = [];
  for (let i = 0; i < PER_KIND; i++) {
    sends.push(
      (async () => {
        const session = `claude-s${i}`;
        const prompt = { hook_event_name: 'UserPromptSubmit', session_id: session, prompt_id: `p${i}`, prompt: `claude prompt ${i}` };
        expect((await s.post('/hooks/claude', prompt)).status).toBe(200);
        const stop = { hook_event_name: 'Stop', session_id: session, prompt_id: `p${i}`, last_assistant_message: `claude answer ${i}` };
        return { kind: 'claude Stop', eventId: `${session}:p${i}`, status: (await s.post('/hooks/claude', stop)).status };
      })(),
      (async () => {
        const notify = {
          type: 'agent-turn-complete',
          'thread-id': `codex-t${i}`,
          'turn-id': `n${i}`,
          'input-messages': [`codex prompt ${i}`],
          'last-assistant-message': `codex answer ${i}`,
        };
        return { kind: 'codex notify', eventId: `codex-t${i}:n${i}`, status: (await s.post('/hooks/codex', notify)).status };
      })(),
      (async () => {
        const session = `codex-h${i}`;
        const prompt = { hook_event_name: 'UserPromptSubmit', session_id: session, turn_id: `u${i}`, prompt: `codex hook prompt ${i}` };
        expect((await s.post('/hooks/codex', prompt)).status).toBe(200);
        const stop = { hook_event_name: 'Stop', session_id: session, turn_id: `u${i}`, last_assistant_message: `codex hook answer ${i}` };
        return { kind: 'codex Stop', eventId: `${session}:u${i}`, status: (await s.post('/hooks/codex', stop)).status };
      })(),
    );
  }
  return Promise.all(sends);
}

/** GET /api/health every 25 ms until `until` settles; the latency of each. */
async function pollHealth(s: ServeChild, until: Promise<unknown>): Promise<number[]> {
  let done = false;
  void until.finally(() => (done = true));
  const ms: number[] = [];
  while (!done) {
    const t0 = performance.now();
    const r = await fetch(new URL('/api/health', s.url));
    await r.arrayBuffer();
    ms.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 25));
  }
  return ms;
}

async function storedEventIds(s: ServeChild): Promise<string[]> {
  const ids: string[] = [];
  for (const source of ['claude-code', 'codex']) {
    const page = await s.call('listTurns', { source, limit: 1000 });
    for (const t of page.items) ids.push(t.eventId);
  }
  return ids;
}

test('a locked database never turns a hook capture into a 2xx with nothing stored, and /api/health stays fast', async () => {
  serve = await startServe();
  const s = serve;
  const lock = await holdWriteLock(path.join(s.home, 'rein.db'), HOLD_MS);
  holder = lock.child;
  const lockedAt = performance.now();
  const health = pollHealth(s, lock.released);
  const captures = await sendCaptures(s);
  const answeredMs = performance.now() - lockedAt;
  await lock.released;
  const latencies = await health;
  holder = undefined;

  const acked = captures.filter((c) => c.status >= 200 && c.status < 300);
  // Stored at the latest once the lock is released: give the server's replay a few seconds.
  let stored: string[] = [];
  for (let t0 = Date.now(); Date.now() - t0 < 10_000; await new Promise((r) => setTimeout(r, 100))) {
    stored = await storedEventIds(s);
    if (acked.every((c) => stored.includes(c.eventId))) break;
  }
  const lost = acked.filter((c) => !stored.includes(c.eventId));
  const sorted = [...latencies].sort((a, b) => a - b);
  const p50 = sorted[Math.floor(sorted.length / 2)] ?? NaN;
  const max = sorted.at(-1) ?? NaN;
  console.log(
    `write lock held ${HOLD_MS} ms by another process: ${captures.length} hook captures answered in ${answeredMs.toFixed(0)} ms, ` +
      `${acked.length} acked 2xx, ${stored.length} stored after release, ${lost.length} acked but lost ` +
      `(${lost.map((c) => `${c.kind} ${c.eventId}`).join(', ') || 'none'}); ` +
      `/api/health during the lock: ${latencies.length} probes, p50 ${p50.toFixed(1)} ms, max ${max.toFixed(1)} ms; ` +
      `statuses ${JSON.stringify(Object.fromEntries(['claude Stop', 'codex notify', 'codex Stop'].map((k) => [k, captures.filter((c) => c.kind === k).map((c) => c.status)])))}`,
  );
  expect(lost).toEqual([]);
  // No capture answered twice into two turns.
  expect(new Set(stored).size).toBe(stored.length);
  // Nothing lost: the server spools what it cannot store yet, so every capture is acknowledged and stored.
  expect(acked.length).toBe(captures.length);
  expect(stored.length).toBe(captures.length);
  expect(max).toBeLessThan(1_000);
});

test('turns spooled while the lock is held survive a shutdown during the lock, and are stored once by the next start', async () => {
  serve = await startServe();
  const home = serve.home;
  // Long enough to outlast the captures and the shutdown's own wait for the lock (the 5 s busy timeout).
  const lock = await holdWriteLock(path.join(home, 'rein.db'), 12_000);
  holder = lock.child;
  const captures = await sendCaptures(serve);
  // The same Stop again (Claude retries a hook): still one turn.
  const again = { hook_event_name: 'Stop', session_id: 'claude-s0', prompt_id: 'p0', last_assistant_message: 'claude answer 0' };
  const againStatus = (await serve.post('/hooks/claude', again)).status;
  expect(await serve.stop({ keepHome: true })).toBe(0);
  serve = undefined;
  const spoolFile = path.join(home, 'spool', 'captures.jsonl');
  const spooled = readFileSync(spoolFile, 'utf8').trim().split('\n').length;
  await lock.released;
  holder = undefined;

  serve = await startServe({ home });
  const s = serve;
  for (let t0 = Date.now(); Date.now() - t0 < 10_000 && existsSync(spoolFile); await new Promise((r) => setTimeout(r, 100)));
  const stored = await storedEventIds(s);
  console.log(
    `shutdown during the lock: ${captures.filter((c) => c.status < 300).length + (againStatus < 300 ? 1 : 0)}/${captures.length + 1} captures acked, ` +
      `${spooled} lines in the spool at exit; after the restart ${stored.length} turns stored (${new Set(stored).size} distinct), spool ${existsSync(spoolFile) ? 'left' : 'emptied'}`,
  );
  expect(captures.every((c) => c.status === 200) && againStatus === 200).toBe(true);
  expect(spooled).toBe(captures.length + 1);
  expect(existsSync(spoolFile)).toBe(false);
  expect(stored.sort()).toEqual(captures.map((c) => c.eventId).sort());
});

test('a capture the server can neither store nor spool is answered non-2xx, and the Codex hook entry spools and resends it', async () => {
  serve = await startServe();
  const s = serve;
  // The server's spool cannot be written: a directory stands where its file goes.
  mkdirSync(path.join(s.home, 'spool', 'captures.jsonl'), { recursive: true });
  const lock = await holdWriteLock(path.join(s.home, 'rein.db'), 3_000);
  holder = lock.child;
  await s.post('/hooks/claude', { hook_event_name: 'UserPromptSubmit', session_id: 'c', prompt_id: 'p', prompt: 'claude prompt' });
  const claude = await s.post('/hooks/claude', { hook_event_name: 'Stop', session_id: 'c', prompt_id: 'p', last_assistant_message: 'claude answer' });
  const notify = (turn: string) => ({
    type: 'agent-turn-complete',
    'thread-id': 'x',
    'turn-id': turn,
    'input-messages': [`codex prompt ${turn}`],
    'last-assistant-message': `codex answer ${turn}`,
  });
  const codex = await s.post('/hooks/codex', notify('direct'));
  // The real notify process Codex starts: it is answered non-2xx and keeps the payload in its own spool.
  const entry = path.join(ROOT, 'src-main/node/integrations/codex/hook-entry.mjs');
  const env = { ...process.env, REIN_HOME: s.home };
  spawnSync(process.execPath, [entry, 'codex-notify', JSON.stringify(notify('t1'))], { env, stdio: 'ignore' });
  const clientSpool = path.join(s.home, 'spool', 'codex.jsonl');
  const clientSpooled = existsSync(clientSpool) ? readFileSync(clientSpool, 'utf8').trim().split('\n').length : 0;
  await lock.released;
  holder = undefined;
  // The next turn's notify gets through and delivers the spooled one.
  spawnSync(process.execPath, [entry, 'codex-notify', JSON.stringify(notify('t2'))], { env, stdio: 'ignore' });
  const stored = await storedEventIds(s);
  console.log(
    `spool unwritable and the database locked: Claude Stop got ${claude.status}, Codex post got ${codex.status}; ` +
      `the Codex notify process spooled ${clientSpooled} payloads and after the release ${stored.length} turns are stored (${stored.join(', ')})`,
  );
  expect(claude.status).toBe(503);
  expect(codex.status).toBe(503);
  expect(clientSpooled).toBe(1);
  expect(stored.sort()).toEqual(['x:t1', 'x:t2']);
});
