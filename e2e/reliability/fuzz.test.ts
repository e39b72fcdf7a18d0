// Issue #19 item 1, the fuzzer: a bounded stream of hostile requests against the real `rein serve` (a child process,
// so a crash ends it and is counted) on every route that takes a body: /v1/turns, /hooks/claude, /hooks/codex,
// /hooks/openclaw and every /api/<verb> of VERBS, plus names that are not routes (/api/constructor). Bodies are
// malformed JSON, huge or deeply nested values, wrong types, unicode with NUL bytes and lone surrogates, invalid
// UTF-8, negative and huge ids, and `__proto__`/`constructor` keys; headers are wrong now and then (no token, another
// content type, another method). Counted and required to be 0: crashes, 5xx, hangs, and writes while only refused
// requests were in flight (the database's data_version and row counts, read by a second connection between
// batches). The server must answer /api/health after, and a polluted prototype must show nowhere.
//   CI size: 10,000 requests. Bench: REIN_FUZZ_REQUESTS=200000 npx vitest run --config e2e/reliability/vitest.config.ts fuzz
//   A failing run prints its seed; REIN_FUZZ_SEED=<seed> replays it.
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, expect, test } from 'vitest';
import { VERB_NAMES } from '../../src-main/common/api.ts';
import { composeCore } from '../../src-main/node/compose.ts';
import { resolveHome } from '../../src-main/node/home.ts';
import { startProxyServer } from '../../src-main/node/serving/proxy.ts';
import { startServe } from '../harness.ts';
import type { ServeChild } from '../harness.ts';
import { figure } from './figures.ts';

const REQUESTS = Number(process.env.REIN_FUZZ_REQUESTS ?? 10_000);
const SEED = Number(process.env.REIN_FUZZ_SEED ?? Date.now() % 2 ** 31);
/** Requests in flight at once. A batch of hostile requests is smaller, so that more batches are all refused and
 *  checked for writes (a write from a refused request is caught only in a batch with no 2xx). */
const BATCH = 8;
const HOSTILE_BATCH = 4;
/** After an all-refused batch, how long a write the refusal started in the background has to show. */
const SETTLE_MS = 3;
/** A request unanswered this long is a hang. */
const HANG_MS = 15_000;
const MARK = 'reinFuzzPolluted';

/** mulberry32: a small seeded PRNG, so that a failing run can be replayed from its seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = prng(SEED);
const int = (n: number) => Math.floor(rand() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;

const ROUTES = [
  '/v1/turns',
  '/hooks/claude',
  '/hooks/codex',
  '/hooks/openclaw',
  ...VERB_NAMES.map((v) => `/api/${v}`),
];
const NOT_ROUTES = ['/api/constructor', '/api/__proto__', '/api/toString', '/hooks/__proto__', '/hooks/constructor', '/api/', '/v1/turns/..', '/api/status%00'];
/** Verbs whose valid input starts slow or spreading work (a model copy, a training round, a scan of the disk): they
 *  get only the hostile bodies, which must all be refused. */
const NO_VALID = new Set(['useDemoModel', 'startTraining', 'sendTestTurn', 'detectHardware', 'discoverModels', 'connectAgent', 'reset', 'useModel', 'exportData', 'importData', 'testRewardMapper']);

let turnCounter = 0;
/** A valid body for `route`, the mutations' starting point. */
function seed(route: string): Record<string, unknown> {
  const n = ++turnCounter;
  switch (route) {
    case '/v1/turns':
    case '/api/captureTurn':
      return { source: 'api', session: `s${n % 7}`, eventId: `e${n}`, prompt: `prompt ${n}`, response: `answer ${n}`, context: [{ role: 'user', content: 'c' }] };
    case '/hooks/claude':
      return rand() < 0.5
        ? { hook_event_name: 'UserPromptSubmit', session_id: `c${n % 5}`, prompt_id: `p${n}`, prompt: `claude prompt ${n}` }
        : { hook_event_name: 'Stop', session_id: `c${n % 5}`, prompt_id: `p${n}`, last_assistant_message: `claude answer ${n}` };
    case '/hooks/codex':
      return { type: 'agent-turn-complete', 'thread-id': `x${n % 5}`, 'turn-id': `t${n}`, 'input-messages': [`codex prompt ${n}`], 'last-assistant-message': `codex answer ${n}` };
    case '/hooks/openclaw':
      return rand() < 0.6
        ? { kind: 'turn', sessionKey: `o${n % 5}`, runId: `r${n}`, prompt: `openclaw prompt ${n}`, response: `openclaw answer ${n}` }
        : { kind: 'rate', turnId: 1 + int(20), value: pick(['good', 'bad']), rater: 'fuzz' };
    case '/api/rate':
      return { turnId: 1 + int(20), value: pick(['good', 'bad', 1, 3, 5]), tags: ['t'], comment: 'c' };
    case '/api/undo':
      return { session: `s${n % 7}` };
    case '/api/getTurn':
    case '/api/ignoreTurn':
    case '/api/deleteTurn':
      return { turnId: 1 + int(40) };
    case '/api/deleteRating':
      return { ratingId: 1 + int(40) };
    case '/api/listTurns':
    case '/api/listRatings':
      return { limit: 10, offset: 0, search: 'answer' };
    case '/api/setSettings':
      return { values: { 'capture.paused': false } };
    case '/api/rollback':
    case '/api/startTraining':
      return { version: 0 };
    case '/api/planAgent':
    case '/api/connectAgent':
      return { agent: pick(['claude-code', 'codex', 'openclaw']) };
    case '/api/exportData':
    case '/api/importData':
    case '/api/useModel':
      return { path: '/nonexistent/rein-fuzz' };
    default:
      return {};
  }
}

const IDS = [-1, 0, -0, 1.5, 2 ** 31, 2 ** 53, 2 ** 63, 1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, '1', '0x10', true, null];
const STRINGS = ['\u0000', 'a\u0000b', '\ud800', '\udfff\ud800', '\u202e\u2066rtl', '😀'.repeat(1000), '\uffff\ufffe', '', ' ', '%00', '../../etc/passwd', '\\', '"', '\n\r\t', 'a'.repeat(70_000)];
const VALUES: unknown[] = [null, true, false, 0, -1, 1e308, '', 'x', [], {}, [1, 'a', null], { a: { b: {} } }, ...IDS, ...STRINGS];

function mutateValue(v: unknown, depth = 0): unknown {
  if (depth < 3 && v !== null && typeof v === 'object' && rand() < 0.6) return mutateObject(v as Record<string, unknown>, depth + 1);
  if (typeof v === 'number') return rand() < 0.7 ? pick(IDS) : pick(VALUES);
  if (typeof v === 'string') return rand() < 0.6 ? pick(STRINGS) : pick(VALUES);
  return pick(VALUES);
}

function mutateObject(o: Record<string, unknown> | unknown[], depth = 0): unknown {
  if (Array.isArray(o)) return rand() < 0.5 ? o.map((x) => mutateValue(x, depth)) : [...o, pick(VALUES)];
  const out: Record<string, unknown> = { ...o };
  const keys = Object.keys(out);
  const r = rand();
  if (r < 0.5 && keys.length > 0) {
    const k = pick(keys);
    out[k] = mutateValue(out[k], depth);
  } else if (r < 0.7 && keys.length > 0) {
    delete out[pick(keys)];
  } else {
    out[pick(['extra', 'turnId', 'value', 'id', 'path', 'hook_event_name', 'kind', ''])] = pick(VALUES);
  }
  return out;
}

/** `{"__proto__": …}` and friends written as text: JSON.parse makes them own keys, which a careless merge copies
 *  onto Object.prototype. The marker must never show in a later answer. */
function protoBody(base: Record<string, unknown>): string {
  const inner = JSON.stringify(base).slice(1, -1);
  const poison = pick([
    `"__proto__":{"${MARK}":true,"isAdmin":true}`,
    `"constructor":{"prototype":{"${MARK}":true}}`,
    `"__proto__":{"__proto__":{"${MARK}":1}}`,
    `"toString":"${MARK}","valueOf":1,"hasOwnProperty":null`,
    `"values":{"__proto__":{"${MARK}":true}}`,
    `"context":[{"role":"user","content":"c","__proto__":{"${MARK}":true}}]`,
  ]);
  return `{${inner}${inner ? ',' : ''}${poison}}`;
}

function nested(depth: number): string {
  return rand() < 0.5 ? '['.repeat(depth) + '1' + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

interface Req {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  /** The body is a valid request (a 2xx is expected and writes are allowed). */
  valid: boolean;
  kind: string;
}

interface Target {
  routes: readonly string[];
  notRoutes: readonly string[];
  seed: (route: string) => Record<string, unknown>;
}
const SERVE: Target = { routes: ROUTES, notRoutes: NOT_ROUTES, seed };

function makeRequest(token: string, validBatch: boolean, target: Target = SERVE): Req {
  const route = rand() < 0.03 ? pick(target.notRoutes) : pick(target.routes);
  const verb = route.startsWith('/api/') ? route.slice(5) : '';
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const base = target.seed(route);
  if (validBatch && !NO_VALID.has(verb) && !target.notRoutes.includes(route)) {
    return { method: 'POST', path: route, headers, body: Buffer.from(JSON.stringify(base)), valid: true, kind: 'valid' };
  }
  let kind: string;
  let body: Buffer;
  const r = rand();
  if (r < 0.15) {
    kind = 'malformed';
    const text = JSON.stringify(base);
    body = Buffer.from(
      pick([
        text.slice(0, int(text.length)),
        text + ',',
        text.replace(/"/g, "'"),
        '{' + text,
        text.replace(':', '::'),
        'NaN',
        'undefined',
        '\ufeff' + text,
        '{"a":1,}',
        '[' + text,
        '',
        ' ',
        'null',
        '"string"',
        '12',
        '{"a":1}{"b":2}',
      ]),
    );
  } else if (r < 0.2) {
    kind = 'invalid-utf8';
    const text = Buffer.from(JSON.stringify(base));
    body = Buffer.concat([text.subarray(0, Math.max(1, text.length - 2)), Buffer.from([0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0x80]), text.subarray(text.length - 2)]);
  } else if (r < 0.3) {
    kind = 'nested';
    const depth = rand() < 0.05 ? 1_000_000 : pick([100, 1_000, 10_000, 100_000]);
    const k = Object.keys(base)[0] ?? 'x';
    body = Buffer.from(rand() < 0.3 ? nested(depth) : JSON.stringify({ ...base, [k]: 0 }).replace(`"${k}":0`, `"${k}":${nested(depth)}`));
  } else if (r < 0.305) {
    kind = 'huge';
    // Under the 8 MB limit (read, parsed, refused or capped by the schema) and over it (413 from Content-Length).
    const size = pick([1, 3, 7.5, 9, 64]) * 1024 * 1024;
    const k = Object.keys(base)[0] ?? 'x';
    if (size > 8 * 1024 * 1024 && rand() < 0.7) {
      // Claim it, send a little: refused from the header before a byte is read.
      headers['content-length'] = String(size);
      body = Buffer.from('{"a":"' + 'x'.repeat(1000));
    } else {
      body = Buffer.from(JSON.stringify({ ...base, [k]: 'x'.repeat(Math.min(size, 9 * 1024 * 1024)) }));
    }
  } else if (r < 0.45) {
    kind = 'proto';
    body = Buffer.from(protoBody(base));
  } else if (r < 0.55) {
    kind = 'ids';
    const o = { ...base };
    for (const k of ['turnId', 'ratingId', 'version', 'limit', 'offset', 'fromVersion', 'createdAt', 'adapterVersion']) {
      if (k in o || rand() < 0.15) o[k] = pick(IDS);
    }
    body = Buffer.from(JSON.stringify(o));
  } else if (r < 0.65) {
    kind = 'unicode';
    const o: Record<string, unknown> = { ...base };
    for (const k of Object.keys(o)) if (typeof o[k] === 'string' && rand() < 0.7) o[k] = pick(STRINGS) + String(o[k]) + pick(STRINGS);
    body = Buffer.from(JSON.stringify(o));
  } else if (r < 0.75) {
    kind = 'headers';
    body = Buffer.from(JSON.stringify(base));
    const h = int(6);
    if (h === 0) delete headers.authorization;
    else if (h === 1) headers.authorization = `Bearer ${token.slice(0, -1)}0`;
    else if (h === 2) headers['content-type'] = pick(['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', 'multipart/form-data; boundary=x', '']);
    else if (h === 3) headers['x-http-method-override'] = 'GET';
    else if (h === 4) headers.authorization = `Basic ${Buffer.from(`rein:${token}`).toString('base64')}`;
    else headers.authorization = `Bearer ${token}\u0000`.replace('\u0000', '%00');
  } else {
    kind = 'types';
    body = Buffer.from(JSON.stringify(rand() < 0.1 ? pick(VALUES) : mutateObject(base)));
  }
  // A mutation can land on a valid body by chance: `{}` is all that useDemoModel or startTraining take, and one got
  // through would copy the demo model and train it for the rest of the run. Those verbs keep a key they refuse.
  if (NO_VALID.has(verb) && body.toString('utf8') === '{}') body = Buffer.from('{"fuzz":{}}');
  const method = kind === 'headers' && rand() < 0.3 ? pick(['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) : 'POST';
  return { method, path: route, headers, body, valid: false, kind };
}

interface Outcome {
  status: number | 'hang' | 'reset';
  text: string;
  ms: number;
}

const agent = new Agent({ keepAlive: true, maxSockets: BATCH });

function send(port: number, q: Req): Promise<Outcome> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    const done = (o: Omit<Outcome, 'ms'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...o, ms: performance.now() - t0 });
    };
    const headers: Record<string, string> = { host: `127.0.0.1:${port}`, ...q.headers };
    headers['content-length'] ??= String(q.body.length);
    const req = request({ host: '127.0.0.1', port, path: q.path, method: q.method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', () => done({ status: res.statusCode ?? 0, text: '' }));
    });
    const timer = setTimeout(() => {
      req.destroy();
      done({ status: 'hang', text: '' });
    }, HANG_MS);
    // A refused body (413, then the server closes) can reset the socket while it is still being sent: the answer
    // may already be in; otherwise it is a reset, counted apart and checked against the request's size.
    req.on('error', (e) => done({ status: 'reset', text: String((e as NodeJS.ErrnoException).code ?? e.message) }));
    req.end(q.body);
  });
}

let serve: ServeChild | undefined;
let scratch: string | undefined;
afterAll(async () => {
  agent.destroy();
  await serve?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

test(`fuzz: ${REQUESTS} hostile requests against rein serve: 0 crashes, 0 5xx, 0 hangs, 0 writes from refused requests`, { timeout: 600_000 }, async () => {
  // HOME and the working directory in a scratch folder: a verb the fuzzer gets through must not touch real files.
  scratch = mkdtempSync(path.join(tmpdir(), 'rein-fuzz-'));
  serve = await startServe({ env: { HOME: scratch, XDG_CONFIG_HOME: path.join(scratch, '.config') }, cwd: scratch });
  const s = serve;
  // The rate limit out of the way of 10,000 requests in a minute or two; no automatic training rounds, whose rows
  // change in the background (a round started by the ratings the valid traffic stores, and failing for want of a
  // model) and would be taken for writes by the refused requests in flight at that moment.
  expect((await s.post('/api/setSettings', { values: { 'server.rateLimitPerMinute': 1_000_000, 'training.auto': false } })).status).toBe(200);
  const db = new Database(path.join(s.home, 'rein.db'), { readonly: true, fileMustExist: true });
  const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as { name: string }[]).map((t) => t.name);
  const rows = (): Record<string, number> => Object.fromEntries(tables.map((t) => [t, (db.prepare(`SELECT count(*) AS n FROM "${t}"`).get() as { n: number }).n]));
  const dataVersion = () => (db.pragma('data_version', { simple: true }) as number);

  const counts = { crashes: 0, status5xx: 0, hangs: 0, resets: 0, resetsSmall: 0, refusedWrites: 0, refusedChecked: 0, accepted: 0, refused: 0 };
  const byStatus = new Map<string, number>();
  const byKind = new Map<string, number>();
  const kindMs = new Map<string, number>();
  const firstFailures: string[] = [];
  const refusedWriteExamples: string[] = [];
  const latencies: number[] = [];
  const t0 = performance.now();
  let sent = 0;
  while (sent < REQUESTS && s.alive()) {
    // One batch in five is valid traffic (turns, hooks, ratings), so the refused ones meet a database with data.
    const validBatch = rand() < 0.2;
    const batch = Array.from({ length: Math.min(validBatch ? BATCH : HOSTILE_BATCH, REQUESTS - sent) }, () => makeRequest(s.token, validBatch));
    const v0 = dataVersion();
    const rows0 = validBatch ? null : rows();
    const outs = await Promise.all(batch.map((q) => send(s.port, q)));
    sent += batch.length;
    let anyAccepted = false;
    outs.forEach((o, i) => {
      const q = batch[i]!;
      latencies.push(o.ms);
      byStatus.set(String(o.status), (byStatus.get(String(o.status)) ?? 0) + 1);
      byKind.set(q.kind, (byKind.get(q.kind) ?? 0) + 1);
      kindMs.set(q.kind, (kindMs.get(q.kind) ?? 0) + o.ms);
      const line = `${q.kind} ${q.method} ${q.path} → ${o.status} ${o.text.slice(0, 200)} | body ${q.body.subarray(0, 160).toString('utf8')}`;
      const smallReset = o.status === 'reset' && q.body.length < 1024 * 1024 && q.headers['content-length'] === undefined;
      if (o.status === 'hang') counts.hangs++;
      else if (o.status === 'reset') {
        counts.resets++;
        // Only a body refused for its size may lose its answer to a reset while it is still being sent.
        if (smallReset) counts.resetsSmall++;
      } else if (o.status >= 500) counts.status5xx++;
      else if (o.status < 300) {
        anyAccepted = true;
        counts.accepted++;
      } else counts.refused++;
      if ((o.status === 'hang' || smallReset || (typeof o.status === 'number' && o.status >= 500)) && firstFailures.length < 10) firstFailures.push(line);
      if (!q.valid && typeof o.status === 'number' && o.status < 300 && o.text.includes(MARK) && firstFailures.length < 10) firstFailures.push(`echoed the pollution marker: ${line}`);
    });
    // Only refused requests were in flight: the database must not have changed (a hook's prompt note lives in memory).
    if (!anyAccepted && rows0 !== null) {
      counts.refusedChecked += batch.length;
      await new Promise((r) => setTimeout(r, SETTLE_MS));
      const rows1 = rows();
      if (dataVersion() !== v0 || JSON.stringify(rows1) !== JSON.stringify(rows0)) {
        counts.refusedWrites++;
        if (refusedWriteExamples.length < 5) {
          // data_version moves on any commit by another connection, an update in place included.
          const diff = tables.filter((t) => rows1[t] !== rows0[t]).map((t) => `${t} ${rows0[t]}→${rows1[t]} rows`).join(', ') || 'rows updated in place (data_version)';
          refusedWriteExamples.push(`${diff}: ${batch.map((q, i) => `${q.kind} ${q.path} → ${outs[i]!.status}`).join('; ')}`);
        }
      }
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  if (!s.alive()) counts.crashes++;

  // After: alive, healthy, answering real calls, and no prototype was polluted (the marker shows in no answer).
  const health = s.alive() ? await fetch(new URL('/api/health', s.url)).then((r) => r.status) : 0;
  const after = s.alive()
    ? await Promise.all(['status', 'getSettings', 'listTurns', 'listRatings'].map((v) => s.post(`/api/${v}`, {})))
    : [];
  const polluted = after.some((r) => JSON.stringify(r.body).includes(MARK) || JSON.stringify(r.body).includes('isAdmin'));
  const finalRows = rows();
  db.close();
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]!.toFixed(1);
  console.log(
    `fuzz (seed ${SEED}): ${sent} requests in ${seconds.toFixed(1)} s (${(sent / seconds).toFixed(0)}/s, p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms); ` +
      `crashes ${counts.crashes}, 5xx ${counts.status5xx}, hangs ${counts.hangs}, writes from refused requests ${counts.refusedWrites} (${counts.refusedChecked} refused requests checked, in batches with no 2xx), ` +
      `resets ${counts.resets} (${counts.resetsSmall} of a small body); accepted ${counts.accepted}, refused ${counts.refused}; ` +
      `health after ${health}, after-calls ${after.map((r) => r.status).join('/')}, prototype polluted ${polluted}\n` +
      `  statuses ${JSON.stringify(Object.fromEntries([...byStatus].sort()))}\n  kinds ${JSON.stringify(Object.fromEntries([...byKind].map(([k, n]) => [k, `${n} (${((kindMs.get(k) ?? 0) / 1000).toFixed(1)} s)`])))}\n  rows after ${JSON.stringify(finalRows)}` +
      (firstFailures.length ? `\n  first failures:\n    ${firstFailures.join('\n    ')}` : '') +
      (refusedWriteExamples.length ? `\n  writes from refused batches:\n    ${refusedWriteExamples.join('\n    ')}` : ''),
  );
  figure(`fuzz rein serve: ${sent} requests (seed ${SEED}) in ${seconds.toFixed(0)} s: crashes ${counts.crashes}, 5xx ${counts.status5xx}, hangs ${counts.hangs}, resets ${counts.resetsSmall}, writes from refused requests ${counts.refusedWrites} (${counts.refusedChecked} checked); health after ${health}`);
  if (!s.alive()) console.log(`server output:\n${s.output().slice(-4000)}`);
  expect(sent).toBe(REQUESTS);
  expect(counts).toMatchObject({ crashes: 0, status5xx: 0, hangs: 0, refusedWrites: 0, resetsSmall: 0 });
  expect(firstFailures).toEqual([]);
  expect(health).toBe(200);
  expect(after.map((r) => r.status)).toEqual([200, 200, 200, 200]);
  expect(polluted).toBe(false);
  // The fuzz reached the database: valid traffic was stored, so the refused requests met real rows.
  expect(finalRows.turns).toBeGreaterThan(0);
});

const PROXY_REQUESTS = Math.max(500, Math.round(REQUESTS / 20));
const PROXY: Target = {
  routes: ['/v1/chat/completions', '/v1/chat/completions', '/v1/chat/completions', '/v1/models'],
  notRoutes: ['/v1/completions', '/v1/../api/status', '/v1/chat/completions/x', '/__proto__', '/v1/constructor'],
  seed: () => ({ model: 'm', stream: rand() < 0.3, messages: [{ role: 'system', content: 's' }, { role: 'user', content: `hi ${++turnCounter}` }], temperature: 1, top_p: 1 }),
};

/** An OpenAI-style upstream that answers every chat with a short completion (streamed when asked), and counts the
 *  requests that carried the Rein token (must be 0: the client's Authorization is never forwarded). */
async function startUpstream(token: string): Promise<{ url: string; server: Server; sawToken: () => number }> {
  let sawToken = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (JSON.stringify(req.headers).includes(token)) sawToken++;
      if (req.url?.endsWith('/models')) return res.writeHead(200, { 'content-type': 'application/json' }).end('{"object":"list","data":[{"id":"m","object":"model"}]}');
      let stream = false;
      try {
        stream = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { stream?: boolean }).stream === true;
      } catch {
        // Not JSON: the proxy forwarded what it could not read as a chat; answer it as a plain one.
      }
      const message = { role: 'assistant', content: 'an answer' };
      if (!stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', model: 'm', choices: [{ index: 0, message, finish_reason: 'stop', logprobs: null }] }));
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: message, logprobs: null }] })}\n\n`);
      res.end(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server, sawToken: () => sawToken };
}

test(`fuzz the capture proxy: ${PROXY_REQUESTS} hostile requests, 0 crashes, 0 5xx, 0 hangs, the token never sent upstream`, { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rein-fuzz-proxy-'));
  const token = 'd'.repeat(64);
  const core = composeCore({ home: resolveHome({ REIN_HOME: dir }) });
  const up = await startUpstream(token);
  const uncaught: unknown[] = [];
  const onUncaught = (e: unknown) => uncaught.push(e);
  process.on('uncaughtException', onUncaught);
  process.on('unhandledRejection', onUncaught);
  const proxy = await startProxyServer({ core, token, port: 0, upstream: () => ({ baseUrl: up.url, kind: 'openai' }), vocab: () => null, producer: async () => null, log: () => {} });
  const port = proxy.port;
  const counts = { status5xx: 0, hangs: 0, resetsSmall: 0, accepted: 0, refused: 0 };
  const byStatus = new Map<string, number>();
  const failures: string[] = [];
  const t0 = performance.now();
  try {
    for (let sent = 0; sent < PROXY_REQUESTS; ) {
      const validBatch = rand() < 0.2;
      const batch = Array.from({ length: Math.min(BATCH, PROXY_REQUESTS - sent) }, () => {
        const q = makeRequest(token, validBatch, PROXY);
        if (q.path.endsWith('/models') && rand() < 0.8) return { ...q, method: 'GET', body: Buffer.alloc(0) };
        return q;
      });
      const outs = await Promise.all(batch.map((q) => send(port, q)));
      sent += batch.length;
      outs.forEach((o, i) => {
        const q = batch[i]!;
        byStatus.set(String(o.status), (byStatus.get(String(o.status)) ?? 0) + 1);
        const smallReset = o.status === 'reset' && q.body.length < 1024 * 1024 && q.headers['content-length'] === undefined;
        if (o.status === 'hang') counts.hangs++;
        else if (smallReset) counts.resetsSmall++;
        else if (typeof o.status === 'number' && o.status >= 500) counts.status5xx++;
        else if (typeof o.status === 'number' && o.status < 300) counts.accepted++;
        else counts.refused++;
        if ((o.status === 'hang' || smallReset || (typeof o.status === 'number' && o.status >= 500)) && failures.length < 10) {
          failures.push(`${q.kind} ${q.method} ${q.path} → ${o.status} ${o.text.slice(0, 200)} | body ${q.body.subarray(0, 160).toString('utf8')}`);
        }
      });
    }
    await proxy.idle();
    const health = await send(port, { method: 'POST', path: '/v1/chat/completions', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify(PROXY.seed(''))), valid: true, kind: 'valid' });
    const stored = (await core.call('listTurns', { source: 'proxy', limit: 1 }, 'test')).total;
    console.log(
      `proxy fuzz (seed ${SEED}): ${PROXY_REQUESTS} requests in ${((performance.now() - t0) / 1000).toFixed(1)} s; uncaught errors ${uncaught.length}, ` +
        `5xx ${counts.status5xx}, hangs ${counts.hangs}, resets of a small body ${counts.resetsSmall}; accepted ${counts.accepted}, refused ${counts.refused}; ` +
        `requests upstream carrying the Rein token ${up.sawToken()}; a chat after: ${health.status}; proxy turns stored ${stored}\n` +
        `  statuses ${JSON.stringify(Object.fromEntries([...byStatus].sort()))}` +
        (failures.length ? `\n  first failures:\n    ${failures.join('\n    ')}` : ''),
    );
    figure(`fuzz proxy: ${PROXY_REQUESTS} requests: crashes ${uncaught.length}, 5xx ${counts.status5xx}, hangs ${counts.hangs}, resets ${counts.resetsSmall}, Rein token sent upstream ${up.sawToken()}; a chat after ${health.status}`);
    expect(uncaught).toEqual([]);
    expect(counts).toMatchObject({ status5xx: 0, hangs: 0, resetsSmall: 0 });
    expect(up.sawToken()).toBe(0);
    expect(health.status).toBe(200);
    expect(stored).toBeGreaterThan(0);
  } finally {
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onUncaught);
    await proxy.close();
    up.server.closeAllConnections();
    await new Promise((r) => up.server.close(r));
    core.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
