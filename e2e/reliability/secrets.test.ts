// Issue #19 item 3, secrets, against the real `rein serve`: the home and the token are 0700/0600 after every start,
// repaired with a warning when they were not; the token is never in the process's argv, its log or an error answer,
// wherever a request puts it; and an export redacts its text again, so a secret that reached the database some other
// way (an older Rein, another tool) does not leave the machine in the export. The redaction list itself (AWS, GitHub,
// OpenAI, Anthropic, Slack, private key blocks, URL passwords, JWTs) has one test per pattern in
// src-main/common/redact.test.ts.
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, expect, test } from 'vitest';
import { REIN_BIN } from '../../src-main/cli/test-utils/rein.ts';
import { startServe } from '../harness.ts';
import type { ServeChild } from '../harness.ts';
import { figure } from './figures.ts';

let serve: ServeChild | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await serve?.stop();
  serve = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const mode = (p: string) => (statSync(p).mode & 0o777).toString(8).padStart(4, '0');

test('a home left 0755 and a token left 0644 are set to 0700 and 0600 on start, each with a warning', async () => {
  const home = mkdtempSync(path.join(tmpdir(), 'rein-perm-'));
  dirs.push(home);
  const token = 'e'.repeat(64);
  writeFileSync(path.join(home, 'token'), token + '\n');
  chmodSync(path.join(home, 'token'), 0o644);
  chmodSync(home, 0o755);
  const before = { home: mode(home), token: mode(path.join(home, 'token')) };
  serve = await startServe({ home });
  const after = { home: mode(home), token: mode(path.join(home, 'token')), db: mode(path.join(home, 'rein.db')) };
  const warnings = serve.stderr().split('\n').filter((l) => l.includes('warning') && l.includes('open to other users'));
  console.log(`permissions: before home ${before.home}, token ${before.token}; after start home ${after.home}, token ${after.token}, rein.db ${after.db}; warnings: ${warnings.join(' | ')}`);
  expect(serve.token).toBe(token);
  expect(after).toEqual({ home: '0700', token: '0600', db: '0600' });
  expect(warnings).toHaveLength(2);
  expect(warnings.some((w) => w.includes(path.join(home, 'token')) && w.includes('0644'))).toBe(true);
  // A second start finds nothing to repair and says nothing.
  await serve.stop({ keepHome: true });
  serve = await startServe({ home });
  expect(serve.stderr()).not.toContain('open to other users');
});

/** A raw request with the given headers (the token put where it does not belong). */
function raw(port: number, method: string, pathname: string, headers: Record<string, string>, body = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path: pathname, headers: { 'content-length': String(Buffer.byteLength(body)), ...headers }, setHost: false }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve(`${res.statusCode} ${JSON.stringify(res.headers)} ${text}`));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('the token is in no argv, no log line and no error answer, wherever a request puts it', async () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'rein-secret-'));
  dirs.push(scratch);
  serve = await startServe();
  const s = serve;
  const t = s.token;
  const host = `127.0.0.1:${s.port}`;
  const auth = { host, authorization: `Bearer ${t}` };
  const answers = [
    await raw(s.port, 'POST', '/v1/turns', { ...auth, 'content-type': `text/${t}` }, '{}'),
    await raw(s.port, 'POST', '/v1/turns', { host: `${t}.evil.example:${s.port}`, 'content-type': 'application/json' }, '{}'),
    await raw(s.port, 'POST', '/api/status', { host, origin: `http://${t}.evil.example`, 'content-type': 'application/json' }, '{}'),
    await raw(s.port, 'POST', `/api/${t}`, { ...auth, 'content-type': 'application/json' }, '{}'),
    await raw(s.port, 'POST', `/api/status?token=${t}`, { host, 'content-type': 'application/json' }, '{}'),
    await raw(s.port, 'POST', '/api/setSettings', { ...auth, 'content-type': 'application/json' }, JSON.stringify({ values: { [t]: t, 'server.port': t } })),
    await raw(s.port, 'POST', '/api/rate', { ...auth, 'content-type': 'application/json' }, JSON.stringify({ turnId: 1, value: t })),
    await raw(s.port, 'POST', '/api/exportData', { ...auth, 'content-type': 'application/json' }, JSON.stringify({ path: path.join(scratch, t, 'x.jsonl') })),
    await raw(s.port, 'POST', '/api/importData', { ...auth, 'content-type': 'application/json' }, JSON.stringify({ path: path.join(scratch, `${t}.jsonl`) })),
    await raw(s.port, 'POST', '/hooks/claude', { ...auth, 'content-type': 'application/json' }, JSON.stringify({ hook_event_name: t, session_id: t })),
    await raw(s.port, 'POST', '/v1/turns', { authorization: `Bearer ${t}x`, host, 'content-type': 'application/json' }, '{}'),
  ];
  const argv = readFileSync(`/proc/${s.pid}/cmdline`, 'utf8').split('\0').join(' ');
  const inAnswers = answers.filter((a) => a.includes(t));
  const log = s.stderr();
  console.log(
    `token: in argv ${argv.includes(t)}, in the log ${log.split(t).length - 1} times (${log.split('\n').length} lines), ` +
      `in ${inAnswers.length}/${answers.length} error answers; statuses ${answers.map((a) => a.slice(0, 3)).join('/')}` +
      (inAnswers.length ? `\n  ${inAnswers.map((a) => a.slice(0, 300)).join('\n  ')}` : ''),
  );
  if (log.includes(t)) console.log(log.split("\n").filter((l) => l.includes(t)).join("\n"));
  figure(`token: in argv ${argv.includes(t) ? 1 : 0}, in the log ${log.split(t).length - 1}, in error answers ${inAnswers.length}/${answers.length}`);
  expect(argv).not.toContain(t);
  expect(log).not.toContain(t);
  expect(log).toContain('rejected');
  expect(inAnswers).toEqual([]);
});

test('an export redacts every text again: a secret put into the database by another tool does not leave in it', async () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'rein-export-'));
  dirs.push(scratch);
  serve = await startServe();
  const s = serve;
  await s.call('captureTurn', { source: 'api', eventId: 'e1', prompt: 'deploy it', response: 'done' });
  const turn = (await s.call('listTurns', {})).items[0]!;
  await s.call('rate', { turnId: turn.id, value: 'bad', comment: 'fine' });
  // Secrets written past the capture path, as an older Rein (before a pattern existed) or another tool would have.
  const secrets = {
    aws: 'AKIAIOSFODNN7EXAMPLE',
    github: 'ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8',
    openai: 'sk-proj-' + 'Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90',
    anthropic: 'sk-ant-api03-' + 'Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8Nn7Mm6',
    slack: 'xoxb-' + '123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx',
    url: 'postgres://admin:' + 'S3cretPassw0rd' + '@db.internal:5432/app',
    jwt: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.' + 'eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.' + 'SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
    pem: '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n-----END RSA PRIVATE KEY-----',
  };
  const all = Object.values(secrets).join('\n');
  const db = new Database(path.join(s.home, 'rein.db'));
  db.prepare('UPDATE turns SET prompt = ?, response = ?, context = ? WHERE id = ?').run(all, all, JSON.stringify([{ role: 'user', content: all }]), turn.id);
  db.prepare('UPDATE ratings SET comment = ?, correction = ?').run(all, all);
  db.close();
  const file = path.join(scratch, 'export.jsonl');
  const out = await s.call('exportData', { path: file });
  const text = readFileSync(file, 'utf8');
  const leaked = Object.entries(secrets).filter(([, v]) => text.includes(v) || text.includes(JSON.stringify(v).slice(1, -1))).map(([k]) => k);
  const secretParts = ['S3cretPassw0rd', 'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun'].filter((p) => text.includes(p));
  console.log(`export of ${out.turns} turns and ${out.ratings} ratings holding ${Object.keys(secrets).length} kinds of secret written past the capture path: leaked ${leaked.length ? leaked.join(', ') : 'none'}${secretParts.length ? `; parts ${secretParts.join(', ')}` : ''}; mode ${mode(file)}`);
  expect(out).toMatchObject({ turns: 1, ratings: 1 });
  expect(leaked).toEqual([]);
  expect(secretParts).toEqual([]);
  expect(mode(file)).toBe('0600');
});

/** `rein serve` as a child until its start line is on stdout; returns what it printed on each stream, then stops it. */
async function serveOutput(home: string, extra: string[]): Promise<{ stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [REIN_BIN, 'serve', '--port', '0', '--no-ui', ...extra], { env: { ...process.env, REIN_HOME: home, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const closed = new Promise<void>((r) => child.on('close', () => r()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`rein serve printed nothing in 20 s: ${stderr}`)), 20_000);
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
      if (stdout.includes('\n')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  child.kill('SIGTERM');
  await closed;
  return { stdout, stderr };
}

test('rein serve prints the address with the token only when asked (--show-url), and then in the fragment form', async () => {
  const home = mkdtempSync(path.join(tmpdir(), 'rein-url-'));
  dirs.push(home);
  const plain = await serveOutput(home, []);
  const t = readFileSync(path.join(home, 'token'), 'utf8').trim();
  const asked = await serveOutput(home, ['--show-url']);
  console.log(`rein serve stdout: ${JSON.stringify(plain.stdout.trim())}; with --show-url: ${JSON.stringify(asked.stdout.trim().replace(t, '<token>'))}`);
  figure(`rein serve start: token in stdout ${plain.stdout.split(t).length - 1}, in stderr ${plain.stderr.split(t).length - 1}; with --show-url printed once, as #token=`);
  expect(t).toMatch(/^[0-9a-f]{64}$/);
  expect(plain.stdout + plain.stderr).not.toContain(t);
  expect(plain.stdout).toMatch(/^Rein is serving at http:\/\/127\.0\.0\.1:\d+\/ /);
  expect(asked.stdout.trim()).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/#token=${t}$`));
  expect(asked.stderr).not.toContain(t);
});
