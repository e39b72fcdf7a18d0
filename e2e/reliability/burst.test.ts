// Issue #19 item 1: kill -9 of `rein serve` during a burst from 10 concurrent client processes (the API, Claude and
// Codex hooks, and the CLI's `rein rate --stdin`), and 10 concurrent writers with no fault. Each client reports every
// write the moment it is acknowledged (2xx); after the restart every acknowledged turn and rating must be stored,
// whole (its text as sent), and the database must pass integrity_check and foreign_key_check.
//   CI size: 2 kills in a 4 s burst each, and 5 s of writers.
//   Bench:   REIN_BURST_SECONDS=20 REIN_BURST_ROUNDS=5 REIN_WRITER_SECONDS=60 npx vitest run --config e2e/reliability/vitest.config.ts burst
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, expect, test } from 'vitest';
import { ROOT, startServe } from '../harness.ts';
import type { ServeChild } from '../harness.ts';
import { figure } from './figures.ts';

const BURST_SECONDS = Number(process.env.REIN_BURST_SECONDS ?? 4);
const ROUNDS = Number(process.env.REIN_BURST_ROUNDS ?? 2);
const WRITER_SECONDS = Number(process.env.REIN_WRITER_SECONDS ?? 5);
const CLIENT = path.join(import.meta.dirname, 'burst-client.mjs');
/** 9 HTTP clients and the CLI make 10. */
const MODES = ['api', 'api', 'api', 'claude', 'claude', 'claude', 'codex', 'codex', 'codex'] as const;

interface Ack {
  ack?: 'turn' | 'rating';
  source?: string;
  eventId?: string;
  id?: number;
  turnId?: number;
  comment?: string;
  err?: string;
  done?: boolean;
  errors?: number;
  latencies?: number[];
}

interface Client {
  child: ChildProcess;
  lines: Ack[];
  exited: Promise<void>;
}

let serve: ServeChild | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  await serve?.stop();
  serve = undefined;
});

function collect(child: ChildProcess): Client {
  const lines: Ack[] = [];
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (line.startsWith('{')) lines.push(JSON.parse(line) as Ack);
    }
  });
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  children.push(child);
  return { child, lines, exited };
}

function startClient(s: ServeChild, id: string, mode: string, seconds: number): Client {
  return collect(spawn(process.execPath, [CLIENT, s.url, s.token, id, mode, String(seconds)], { stdio: ['pipe', 'pipe', 'inherit'] }));
}

/** `rein rate --stdin --json`, started and warmed up (one rating of `turnIds[0]` answered); its JSON lines are ratings. */
async function startCli(home: string, turnIds: number[]): Promise<Client> {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/rein.mjs'), 'rate', '--stdin', '--json'], {
    cwd: ROOT,
    env: { ...process.env, REIN_HOME: home, NO_COLOR: '1' },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const c = collect(child);
  child.stdin!.write(JSON.stringify({ turnId: turnIds[0], value: 'good', comment: `cli ${turnIds[0]}` }) + '\n');
  for (let t0 = Date.now(); c.lines.length === 0 && Date.now() - t0 < 60_000; await new Promise((r) => setTimeout(r, 20)));
  return c;
}

/** Feeds the CLI one rating line every `everyMs` for `seconds`, then closes its stdin. */
function feedCli(cli: Client, turnIds: number[], seconds: number, everyMs: number): void {
  const until = Date.now() + seconds * 1000;
  let i = 1;
  const timer = setInterval(() => {
    if (Date.now() >= until || i >= turnIds.length) {
      clearInterval(timer);
      cli.child.stdin!.end();
      return;
    }
    const turnId = turnIds[i++]!;
    cli.child.stdin!.write(JSON.stringify({ turnId, value: 'good', comment: `cli ${turnId}` }) + '\n');
  }, everyMs);
}

/** The CLI prints each stored rating as JSON ({id, turnId, comment, …}): read as rating acks. */
function acksOf(c: Client): Ack[] {
  return c.lines.map((l) => (l.ack === undefined && l.id !== undefined && l.turnId !== undefined ? { ack: 'rating' as const, id: l.id, turnId: l.turnId, ...(l.comment ? { comment: l.comment } : {}) } : l));
}

/** Starts the 9 HTTP clients and the CLI, waits until all are up, then lets them go at once. */
async function startBurst(s: ServeChild, tag: string, seconds: number, cliTurns: number[], cliEveryMs: number): Promise<{ http: Client[]; cli: Client }> {
  const http = MODES.map((mode, i) => startClient(s, `${tag}c${i}`, mode, seconds));
  const cli = await startCli(s.home, cliTurns);
  for (let t0 = Date.now(); !http.every((c) => c.lines.some((l) => (l as { ready?: boolean }).ready)) && Date.now() - t0 < 60_000; await new Promise((r) => setTimeout(r, 20)));
  for (const c of http) c.child.stdin!.end('go\n');
  feedCli(cli, cliTurns, seconds, cliEveryMs);
  return { http, cli };
}

/** Every stored turn and rating, read from the database file itself (a second connection, as another process would). */
function stored(home: string) {
  const db = new Database(path.join(home, 'rein.db'), { readonly: true });
  try {
    const turns = new Map<string, { prompt: string; response: string }>();
    for (const t of db.prepare('SELECT source, event_id, prompt, response FROM turns').all() as { source: string; event_id: string; prompt: string; response: string }[]) {
      turns.set(`${t.source}|${t.event_id}`, { prompt: t.prompt, response: t.response });
    }
    const ratings = new Map<number, { turnId: number; comment: string | null }>();
    for (const r of db.prepare('SELECT id, turn_id, comment FROM ratings').all() as { id: number; turn_id: number; comment: string | null }[]) {
      ratings.set(r.id, { turnId: r.turn_id, comment: r.comment });
    }
    const integrity = db.pragma('integrity_check', { simple: true }) as string;
    const fk = (db.pragma('foreign_key_check') as unknown[]).length;
    return { turns, ratings, integrity, fk };
  } finally {
    db.close();
  }
}

interface Verdict {
  turnsAcked: number;
  turnsLost: string[];
  ratingsAcked: number;
  ratingsLost: number[];
  /** Stored, but not as sent: a prompt or answer cut short, a rating on another turn. */
  halfPresent: string[];
}

function verify(home: string, acks: Ack[]): Verdict & { integrity: string; fk: number } {
  const db = stored(home);
  const v: Verdict = { turnsAcked: 0, turnsLost: [], ratingsAcked: 0, ratingsLost: [], halfPresent: [] };
  for (const a of acks) {
    if (a.ack === 'turn') {
      v.turnsAcked++;
      const t = db.turns.get(`${a.source}|${a.eventId}`);
      if (!t) v.turnsLost.push(`${a.source} ${a.eventId}`);
      else {
        const e = a.source === 'api' ? a.eventId! : a.eventId!.replace(/:[pt](\d+)$/, '-$1');
        if (t.response !== `answer ${e}` || (a.source !== 'claude-code' && t.prompt !== `prompt ${e}`)) v.halfPresent.push(`${a.source} ${a.eventId}: ${JSON.stringify(t).slice(0, 120)}`);
      }
    } else if (a.ack === 'rating') {
      v.ratingsAcked++;
      const r = db.ratings.get(a.id!);
      if (!r) v.ratingsLost.push(a.id!);
      else if (r.turnId !== a.turnId || (a.comment !== undefined && r.comment !== a.comment)) v.halfPresent.push(`rating ${a.id}: ${JSON.stringify(r)}`);
    }
  }
  return { ...v, integrity: db.integrity, fk: db.fk };
}

function p99(latencies: number[]): { p50: number; p99: number; max: number; n: number } {
  const s = [...latencies].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.floor(s.length * p))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99), max: s.at(-1) ?? NaN, n: s.length };
}

/** Captures `n` turns for the CLI to rate, through the API. */
async function seedTurns(s: ServeChild, n: number, tag: string): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await s.call('captureTurn', { source: 'api', eventId: `${tag}-seed-${i}`, prompt: `prompt ${tag}-seed-${i}`, response: `answer ${tag}-seed-${i}` });
    if (r.turn) ids.push(r.turn.id);
  }
  return ids;
}

test(`kill -9 of rein serve during a ${BURST_SECONDS} s burst from 10 client processes, ${ROUNDS} times: every acknowledged write stored, whole`, { timeout: 120_000 + ROUNDS * BURST_SECONDS * 3000 }, async () => {
  serve = await startServe();
  const home = serve.home;
  const port = serve.port;
  const all: Ack[] = [];
  const rounds: string[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const s = serve!;
    const cliTurns = await seedTurns(s, 60, `r${round}`);
    const burst = await startBurst(s, `r${round}`, BURST_SECONDS, cliTurns, 50);
    const clients = [...burst.http, burst.cli];
    // The kill lands somewhere in the middle of the burst, after the HTTP clients' first acknowledged writes (on a
    // loaded machine their first requests take a while), and before the clients stop.
    const goAt = performance.now();
    const killAfter = BURST_SECONDS * 1000 * (0.3 + 0.4 * Math.random());
    const httpAcks = () => burst.http.reduce((n, c) => n + c.lines.filter((l) => l.ack).length, 0);
    const since = () => performance.now() - goAt;
    while ((since() < killAfter || httpAcks() < 3) && since() < BURST_SECONDS * 900) await new Promise((r) => setTimeout(r, 10));
    const killAt = performance.now() - goAt;
    const ackedBefore = clients.reduce((n, c) => n + acksOf(c).filter((l) => l.ack).length, 0);
    await s.kill9();
    // The clients go on against a dead port for a moment (refused, not acknowledged; the CLI falls back to the
    // database), then against the restarted server on the same port.
    await new Promise((r) => setTimeout(r, 300));
    serve = await startServe({ home, port });
    await Promise.all(clients.map((c) => c.exited));
    const acks = clients.flatMap(acksOf);
    // Spooled captures are stored once the database is free: give the new server a moment.
    let v = verify(home, acks);
    for (let t0 = Date.now(); Date.now() - t0 < 10_000 && v.turnsLost.length > 0; await new Promise((r) => setTimeout(r, 200))) v = verify(home, acks);
    all.push(...acks);
    const errors = acks.filter((a) => a.err).length;
    rounds.push(
      `round ${round}: killed at ${(killAt / 1000).toFixed(1)} s with ${ackedBefore} acks in; acknowledged ${v.turnsAcked} turns and ${v.ratingsAcked} ratings, ` +
        `stored ${v.turnsAcked - v.turnsLost.length} and ${v.ratingsAcked - v.ratingsLost.length}; half-present ${v.halfPresent.length}; refused or cut while down ${errors}; ` +
        `integrity ${v.integrity}, foreign key errors ${v.fk}` +
        (v.turnsLost.length + v.ratingsLost.length + v.halfPresent.length > 0 ? `\n    lost turns ${v.turnsLost.slice(0, 5).join(', ')}; lost ratings ${v.ratingsLost.slice(0, 5).join(', ')}; half ${v.halfPresent.slice(0, 3).join(' | ')}` : ''),
    );
  }
  const v = verify(home, all);
  console.log(
    `kill -9 during a burst (10 clients: 3 API, 3 Claude hooks, 3 Codex notify, 1 CLI; ${BURST_SECONDS} s, ${ROUNDS} rounds): ` +
      `acknowledged ${v.turnsAcked} turns + ${v.ratingsAcked} ratings, stored ${v.turnsAcked - v.turnsLost.length} + ${v.ratingsAcked - v.ratingsLost.length}, half-present ${v.halfPresent.length}\n  ${rounds.join('\n  ')}`,
  );
  figure(`kill -9 during a burst (10 clients, ${BURST_SECONDS} s, ${ROUNDS} kills): acknowledged ${v.turnsAcked + v.ratingsAcked} (${v.turnsAcked} turns, ${v.ratingsAcked} ratings), stored ${v.turnsAcked - v.turnsLost.length + v.ratingsAcked - v.ratingsLost.length}, half-present ${v.halfPresent.length}, integrity ${v.integrity}`);
  expect(v.turnsAcked).toBeGreaterThan(0);
  expect(v.ratingsAcked).toBeGreaterThan(0);
  expect(v.turnsLost).toEqual([]);
  expect(v.ratingsLost).toEqual([]);
  expect(v.halfPresent).toEqual([]);
  expect(v.integrity).toBe('ok');
  expect(v.fk).toBe(0);
});

test(`10 concurrent writers for ${WRITER_SECONDS} s: 0 errors, 0 losses, p99 latency printed`, { timeout: 60_000 + WRITER_SECONDS * 3000 }, async () => {
  serve = await startServe();
  const s = serve;
  const cliTurns = await seedTurns(s, 400, 'w');
  const t0 = performance.now();
  const { http: clients, cli } = await startBurst(s, 'w', WRITER_SECONDS, cliTurns, 25);
  const started = performance.now();
  await Promise.all([...clients, cli].map((c) => c.exited));
  const seconds = (performance.now() - started) / 1000;
  const startup = (started - t0) / 1000;
  const acks = [...clients, cli].flatMap(acksOf);
  const v = verify(s.home, acks);
  const errors = acks.filter((a) => a.err);
  const lat = p99(clients.flatMap((c) => c.lines.find((l) => l.done)?.latencies ?? []));
  const cliRatings = acksOf(cli).filter((l) => l.ack === 'rating').length;
  console.log(
    `10 concurrent writers (3 API capture+rate, 3 Claude hooks, 3 Codex notify, 1 CLI rate --stdin) for ${seconds.toFixed(1)} s after ${startup.toFixed(1)} s to start them: ` +
      `${v.turnsAcked} turns + ${v.ratingsAcked} ratings acknowledged (${cliRatings} by the CLI), ${(v.turnsAcked + v.ratingsAcked) / seconds | 0} writes/s; ` +
      `errors ${errors.length}, lost ${v.turnsLost.length + v.ratingsLost.length}, half-present ${v.halfPresent.length}; ` +
      `HTTP latency over ${lat.n} requests: p50 ${lat.p50.toFixed(1)} ms, p99 ${lat.p99.toFixed(1)} ms, max ${lat.max.toFixed(1)} ms` +
      (errors.length ? `\n  ${errors.slice(0, 5).map((e) => e.err).join('\n  ')}` : ''),
  );
  figure(`10 concurrent writers for ${seconds.toFixed(1)} s: ${v.turnsAcked + v.ratingsAcked} writes, errors ${errors.length}, lost ${v.turnsLost.length + v.ratingsLost.length}; p50 ${lat.p50.toFixed(1)} ms, p99 ${lat.p99.toFixed(1)} ms`);
  expect(errors).toEqual([]);
  expect(v.turnsLost).toEqual([]);
  expect(v.ratingsLost).toEqual([]);
  expect(v.halfPresent).toEqual([]);
  expect(cliRatings).toBeGreaterThan(0);
  expect(v.integrity).toBe('ok');
});
