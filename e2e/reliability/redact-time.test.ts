// Issue #21 item 1: redaction must run in linear time and constant stack. `"a-" x 50,000` took 30 s and froze the
// server, and `"sk-" x 2.7M` overflowed the regexp stack; an 8 MB adversarial text of each prefix a rule keys on now
// redacts in well under a second, and /api/health stays responsive during such a capture.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { redact } from '../../src-main/common/redact.ts';
import { startServe } from '../harness.ts';
import type { ServeChild } from '../harness.ts';

const MB8 = 8 * 1024 * 1024;
const uuid = '3f2504e0-4f89-11d3-9a0c-0305e82c3301';
const fill = (unit: string): string => unit.repeat(Math.floor(MB8 / unit.length));
const CASES: [string, string][] = [
  ['"a-" x 4M', 'a-'.repeat(MB8 / 2)],
  ['hyphenated UUID list', (uuid + ' ').repeat(Math.floor(MB8 / (uuid.length + 1)))],
  ['UUIDs joined by -', (uuid + '-').repeat(Math.floor(MB8 / (uuid.length + 1)))],
  ['"x_" x 4M then password', 'x_'.repeat(MB8 / 2) + 'password'],
  ['"-----BEGIN A " x 600k', '-----BEGIN A '.repeat(Math.floor(MB8 / 13))],
];
// Each prefix a rule keys on, repeated, and followed by one 8 MB run of the characters its rule then scans: a counted
// loop (`[…]{20,}`) over such a run overflowed V8's regexp stack ("sk-" x 2.7M threw RangeError, so the capture
// failed with a 500).
const PREFIXES = [
  'sk-', 'sk-ant-', 'sk_live_', 'eyJ', 'eyJ-', 'eyJa.', 'eyJaaaaa.eyJaaaaa.', 'ghp_', 'github_pat_', 'AKIA', 'xoxb-', 'AIza', 'hf_',
  '-----BEGIN PRIVATE KEY-----\n', 'password=', 'PGPASSWORD=', 'password: "', 'token=', 'a://b:', 'a://:', 'a://b:c@', 'a://b:c/',
  'Bearer ', 'authorization: Bearer ', 'X-Api-Key: ', '--password ', '--password x ', '--password a ', 'password: ',
  'password: hunter2\n', 'password: str\n', 'secret = ', 'a = b\n',
  // The forms read anywhere in a line, in prose, after `&`, and the issuers' token table.
  'x password: ', 'x aws_secret_access_key = ', 'a password ', 'password is ', 'the api key was ', 'password=a&', 'password=a&b',
  'secretKey:', 'pwd=', '-u a:', ' -u ', 'login a password ', 'glpat-', 'npm_', 'SG.', 'SG.aaaaaaaaaaaaaaaaaaaaaa.', 'hvs.', 'dp.pt.',
  'aaaaaaaaaaaaaa.atlasv1.', '1234567890:AA', '0123456789abcdef0123456789abcdef-us', 'sk.eyJ', 'pcsk_', 'hooks.slack.com/services/',
  'discord.com/api/webhooks/',
];
const RUN_OF: Record<string, string> = { 'a://b:c/': 'a/', 'a://b:c@': '@a', 'password=a&': '&a', 'password=a&b': '&3', '1234567890:AA': '1' };
// A value or an indent that the whole-line and flag forms check after matching (a dotted name, an ENV_NAME).
CASES.push(
  ['"password: " then "a." x 4M', 'password: ' + fill('a.')],
  ['"password: " then "A_" x 4M', 'password: ' + fill('A_')],
  ['" --password " then "a." x 4M', ' --password ' + fill('a.')],
  ['8 MB of spaces then "password: x"', fill(' ') + 'password: x'],
);
for (const p of PREFIXES) {
  CASES.push([`${JSON.stringify(p)} repeated`, fill(p)]);
  CASES.push([`${JSON.stringify(p)} then one run`, p + fill(RUN_OF[p] ?? (/^[A-Z]/.test(p) ? 'A1' : 'a1'))]);
}

/**
 * The best of two runs, in ms of this process's CPU time (user + system), not wall time: the machine is shared (CI,
 * other suites), and under a load of 20 on 2 cores the wall clock of the same work grew 5-10× (CI at stop 26), while
 * the CPU the work itself takes does not.
 */
function bestOfTwo(text: string): { ms: number; runs: number[]; error: unknown } {
  const runs: number[] = [];
  let error: unknown = null;
  for (let i = 0; i < 2 && error === null; i++) {
    const t0 = process.cpuUsage();
    try {
      redact(text);
    } catch (e) {
      error = e;
    }
    const d = process.cpuUsage(t0);
    runs.push((d.user + d.system) / 1000);
  }
  return { ms: Math.min(...runs), runs, error };
}

test.each(CASES)('redacts 8 MB of %s in well under 1 s, or linearly on a slower machine', (name, text) => {
  const big = bestOfTwo(text);
  // The same text cut to 1 MB: linear work takes about 8× as long on 8 MB, backtracking 64× or more. A machine slower
  // than the one the 1 s was set on (the same code took 1.1-1.8 s for two cases here at stop 25, 0.3 s at stop 23)
  // passes when the 8 MB run stays within 16× the 1 MB one, twice linear and a quarter of quadratic: under CI's load
  // a linear case ("a://b:c@" repeated: 1, 2, 4, 8, 16 MB in 111, 221, 427, 883, 1684 ms idle) once measured 12.07×.
  const small = bestOfTwo(text.slice(0, Math.floor(text.length / 8)));
  console.log(
    `redacted 8 MB adversarial text (${name}) in ${big.ms.toFixed(0)} ms of CPU (runs: ${big.runs.map((r) => r.toFixed(0)).join(', ')}; 1 MB: ${small.ms.toFixed(0)} ms)${big.error === null ? '' : `: threw ${String(big.error)}`}`,
  );
  expect(big.error).toBeNull();
  expect(small.error).toBeNull();
  expect(big.ms).toBeLessThan(Math.max(1_000, 16 * small.ms));
});

let serve: ServeChild;
beforeAll(async () => {
  serve = await startServe();
});
afterAll(async () => {
  await serve.stop();
});

test('/api/health answers while an adversarial capture is stored', async () => {
  const capture = serve.post('/v1/turns', { source: 'api', eventId: 'redos-1', prompt: 'a-'.repeat(3_000_000), response: 'r' });
  await new Promise((r) => setTimeout(r, 20));
  const t0 = performance.now();
  const health = await fetch(new URL('/api/health', serve.url));
  const healthMs = performance.now() - t0;
  const r = await capture;
  const captureMs = performance.now() - t0;
  console.log(`6 MB "a-" capture: HTTP ${r.status} within ${captureMs.toFixed(0)} ms; /api/health meanwhile: ${health.status} in ${healthMs.toFixed(0)} ms`);
  expect(r.status).toBe(201);
  expect(health.status).toBe(200);
  expect(healthMs).toBeLessThan(1_000);
});
