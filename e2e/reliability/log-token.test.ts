// Issue #21 item 11: the server log must never hold a token, also when a client sends it as `?token=` in the URL.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startServe } from '../harness.ts';
import type { ServeChild } from '../harness.ts';

let serve: ServeChild;
let scratch: string;
beforeAll(async () => {
  serve = await startServe();
  scratch = mkdtempSync(path.join(tmpdir(), 'rein-log-token-'));
});
afterAll(async () => {
  await serve.stop();
  rmSync(scratch, { recursive: true, force: true });
});

test('neither a rejected request nor an internal error writes the query string to the log', async () => {
  const secret = 'f'.repeat(64);
  const rejected = await fetch(new URL(`/api/status?token=${secret}`, serve.url), { method: 'POST' });
  expect(rejected.status).toBe(401);
  // An export into a folder that does not exist fails inside the file writer, outside any ReinError: the server's
  // internal-error path, which logs the request line.
  const internal = await serve.post(`/api/exportData?token=${secret}`, { path: path.join(scratch, 'missing/out.jsonl') });
  expect(internal.status).toBe(500);
  const log = serve.output();
  const lines = log.split('\n').filter((l) => l.includes('/api/status') || l.includes('/api/exportData'));
  console.log(`server log lines for the two requests: ${lines.length}; token occurrences in the log: ${log.split(secret).length - 1}`);
  expect(log).toContain('internal error on POST /api/exportData');
  expect(log).not.toContain(secret);
});
