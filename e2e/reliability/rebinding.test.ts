// Issue #19 item 1, DNS rebinding, CSRF and the static file server, against the real `rein serve`: nothing on the
// machine is reachable by a web page the person visits. A rebinding page reaches the server under the attacker's
// host name (or another port); a CSRF page posts a text/plain form from its own origin; a preflight asks for CORS.
// All are refused, none writes, and no answer carries an Access-Control-Allow-* header. The static server serves
// nothing outside its renderer folder, whatever the path's spelling (`..`, %2e%2e, encoded slashes, absolute paths,
// symlinks out, a symlink loop).
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startServe } from '../harness.ts';
import type { ServeChild } from '../harness.ts';
import { figure } from './figures.ts';

const SECRET = 'REIN-OUTSIDE-SECRET-7f3a';
let serve: ServeChild;
let scratch: string;
let renderer: string;

beforeAll(async () => {
  scratch = mkdtempSync(path.join(tmpdir(), 'rein-rebind-'));
  renderer = path.join(scratch, 'renderer');
  mkdirSync(path.join(renderer, 'assets'), { recursive: true });
  writeFileSync(path.join(renderer, 'index.html'), '<!doctype html><title>Rein</title>');
  writeFileSync(path.join(renderer, 'assets', 'app.js'), 'console.log(1)');
  // Beside the renderer folder, one level up, and named by absolute path: what a traversal would read.
  writeFileSync(path.join(scratch, 'secret.txt'), SECRET);
  mkdirSync(path.join(scratch, 'outside'));
  writeFileSync(path.join(scratch, 'outside', 'secret.txt'), SECRET);
  symlinkSync(path.join(scratch, 'secret.txt'), path.join(renderer, 'link.txt'));
  symlinkSync(path.join(scratch, 'outside'), path.join(renderer, 'linkdir'));
  symlinkSync('/etc/passwd', path.join(renderer, 'passwd.txt'));
  symlinkSync(path.join(renderer, 'loop-b'), path.join(renderer, 'loop-a'));
  symlinkSync(path.join(renderer, 'loop-a'), path.join(renderer, 'loop-b'));
  serve = await startServe({ renderer });
});
afterAll(async () => {
  await serve?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** A raw request: the path goes out as written (fetch would resolve `..` and re-encode it first). */
function raw(method: string, pathname: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: serve.port, method, path: pathname, headers: { ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }), ...headers }, setHost: false }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const turn = (id: string) => JSON.stringify({ source: 'api', eventId: id, prompt: 'p', response: 'r' });
const cors = (a: Answer) => Object.keys(a.headers).filter((h) => h.startsWith('access-control-'));

function turnsStored(): number {
  const db = new Database(path.join(serve.home, 'rein.db'), { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM turns').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

test('DNS rebinding: every Host that is not this loopback server and port is refused, on the API and the UI', async () => {
  const p = serve.port;
  const hosts = [
    'evil.example',
    `evil.example:${p}`,
    `127.0.0.1.evil.example:${p}`,
    `localhost.evil.example:${p}`,
    `127.0.0.1:${p}.evil.example`,
    `127.0.0.1:${p + 1}`,
    `localhost:${p === 80 ? 81 : 80}`,
    `[::1]:${p + 1}`,
    '127.0.0.1',
    'localhost',
    `0.0.0.0:${p}`,
    `127.0.0.2:${p}`,
    `127.1:${p}`,
    `2130706433:${p}`,
    `[::ffff:127.0.0.1]:${p}`,
    '',
  ];
  const rows: string[] = [];
  const refused: boolean[] = [];
  for (const host of hosts) {
    const answers = [
      await raw('POST', '/v1/turns', { host, authorization: `Bearer ${serve.token}`, 'content-type': 'application/json' }, turn(`host-${host}`)),
      await raw('POST', '/api/status', { host, authorization: `Bearer ${serve.token}`, 'content-type': 'application/json' }, '{}'),
      await raw('GET', '/', { host }),
      await raw('GET', '/api/health', { host }),
    ];
    const ok = answers.every((a) => a.status === 403 && cors(a).length === 0 && !a.text.includes('<title>'));
    refused.push(ok);
    rows.push(`${JSON.stringify(host)} ${answers.map((a) => a.status).join('/')}`);
  }
  // The right host and port, as the app and the CLI reach it, still works (the check is not refusing everything).
  const good = await raw('GET', '/', { host: `127.0.0.1:${p}` });
  const stored = turnsStored();
  console.log(`rebinding: ${refused.filter(Boolean).length}/${hosts.length} foreign Host values refused on turns/status/UI/health: ${rows.join(', ')}; the right Host: ${good.status}; turns stored ${stored}`);
  figure(`DNS rebinding: ${refused.filter(Boolean).length}/${hosts.length} foreign Host values refused (API, UI, health); turns written ${stored}`);
  expect(refused.every(Boolean)).toBe(true);
  expect(good.status).toBe(200);
  expect(stored).toBe(0);
});

test('CSRF and CORS: a foreign Origin, a text/plain form post and a preflight are refused and write nothing', async () => {
  const p = serve.port;
  const host = `127.0.0.1:${p}`;
  const origins = ['http://evil.example', 'null', `http://127.0.0.1.evil.example:${p}`, `http://localhost:${p}.evil.example`, `http://127.0.0.1:${p + 1}`, `https://127.0.0.1:${p}`, 'file://', `http://[::1]:${p + 1}`];
  const rows: string[] = [];
  let refused = 0;
  let total = 0;
  const check = (label: string, a: Answer, want: (s: number) => boolean) => {
    total++;
    const ok = want(a.status) && cors(a).length === 0;
    if (ok) refused++;
    rows.push(`${label} ${a.status}${cors(a).length ? ' ' + cors(a).join(',') : ''}`);
  };
  for (const origin of origins) {
    // A form post a page can send without a preflight: text/plain, no token (the page cannot know it).
    check(`form ${origin}`, await raw('POST', '/v1/turns', { host, origin, 'content-type': 'text/plain' }, turn(`csrf-${origin}`)), (s) => s === 403);
    check(`urlencoded ${origin}`, await raw('POST', '/api/setSettings', { host, origin, 'content-type': 'application/x-www-form-urlencoded' }, 'values=1'), (s) => s === 403);
    // Even with the token (a leaked one), a foreign page's origin is refused.
    check(`json+token ${origin}`, await raw('POST', '/v1/turns', { host, origin, authorization: `Bearer ${serve.token}`, 'content-type': 'application/json' }, turn(`csrf-t-${origin}`)), (s) => s === 403);
    check(`preflight ${origin}`, await raw('OPTIONS', '/v1/turns', { host, origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' }), (s) => s >= 400);
    check(`hook ${origin}`, await raw('POST', '/hooks/claude', { host, origin, 'content-type': 'text/plain' }, '{"hook_event_name":"Stop","session_id":"s"}'), (s) => s === 403);
    check(`events ${origin}`, await raw('GET', '/api/events', { host, origin }), (s) => s === 403);
  }
  // No Origin (a non-browser client) and no token: still refused; a text/plain body with the token: refused as not JSON.
  check('form, no Origin, no token', await raw('POST', '/v1/turns', { host, 'content-type': 'text/plain' }, turn('csrf-none')), (s) => s === 401);
  check('text/plain with the token', await raw('POST', '/v1/turns', { host, authorization: `Bearer ${serve.token}`, 'content-type': 'text/plain' }, turn('csrf-plain')), (s) => s === 415);
  check('token in the query', await raw('POST', `/v1/turns?token=${serve.token}`, { host, 'content-type': 'application/json' }, turn('csrf-q')), (s) => s === 401);
  // The app's own origin, with its token, is the one that works; and its answer grants no other origin.
  const own = await raw('POST', '/v1/turns', { host, origin: `http://${host}`, authorization: `Bearer ${serve.token}`, 'content-type': 'application/json' }, turn('own'));
  const stored = turnsStored();
  console.log(`CSRF/CORS: ${refused}/${total} refused with no Access-Control-* header: ${rows.join(', ')}; own origin with the token: ${own.status}, CORS headers ${cors(own).length}; turns stored ${stored} (the own one)`);
  figure(`CSRF/CORS: ${refused}/${total} foreign-origin, form and preflight requests refused, none with an Access-Control header; turns written by them ${stored - 1}`);
  expect(refused).toBe(total);
  expect(own.status).toBe(201);
  expect(cors(own)).toEqual([]);
  expect(stored).toBe(1);
});

test('static traversal: no spelling of a path serves a file outside the renderer folder', async () => {
  const host = { host: `127.0.0.1:${serve.port}` };
  const rel = path.relative('/', scratch);
  const paths = [
    '/../secret.txt',
    '/../../../../../../etc/passwd',
    '/%2e%2e/secret.txt',
    '/%2E%2E/%2E%2E/%2E%2E/etc/passwd',
    '/.%2e/secret.txt',
    '/%2e%2e%2fsecret.txt',
    '/assets/..%2f..%2fsecret.txt',
    '/assets/%2e%2e%2f%2e%2e%2fsecret.txt',
    '/..%5csecret.txt',
    '/assets\\..\\..\\secret.txt',
    '/%252e%252e/secret.txt',
    '/%c0%ae%c0%ae/secret.txt',
    '//etc/passwd',
    '/etc/passwd',
    '/%2fetc%2fpasswd',
    `/${rel}/secret.txt`,
    `//${rel}/secret.txt`,
    `/%2F${rel.replace(/\//g, '%2F')}%2Fsecret.txt`,
    '/link.txt',
    '/linkdir/secret.txt',
    '/passwd.txt',
    '/loop-a',
    '/loop-a/x.js',
    '/index.html%00.txt',
    '/%00',
    '/..',
    '/assets/../../secret.txt',
  ];
  const rows: string[] = [];
  let clean = 0;
  for (const p of paths) {
    const a = await raw('GET', p, host);
    const leaked = a.text.includes(SECRET) || /root:.*:0:0:/.test(a.text);
    // Refused, or the app shell (a client-side route), never a file from outside and never a server error.
    const ok = !leaked && a.status < 500 && (a.status >= 400 || a.text.includes('<title>Rein</title>'));
    if (ok) clean++;
    rows.push(`${p} ${a.status}${leaked ? ' LEAKED' : ''}`);
  }
  const health = await raw('GET', '/api/health', host);
  const asset = await raw('GET', '/assets/app.js', host);
  console.log(`static traversal: ${clean}/${paths.length} paths served nothing from outside the renderer folder: ${rows.join(', ')}; an asset inside: ${asset.status}; health after ${health.status}`);
  figure(`static traversal: ${clean}/${paths.length} path spellings served nothing outside the renderer folder`);
  expect(clean).toBe(paths.length);
  expect(asset.status).toBe(200);
  expect(health.status).toBe(200);
  expect(serve.alive()).toBe(true);
});
