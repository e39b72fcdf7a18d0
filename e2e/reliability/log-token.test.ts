// Issue #21 item 11: the server log must never hold a token, also when a client sends it as `?token=` in the URL.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
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
  // A failed export is a clear 400 now, which the rejected path logs with its request line.
  const refused = await serve.post(`/api/exportData?token=${secret}`, { path: path.join(scratch, 'missing/out.jsonl') });
  expect(refused.status).toBe(400);
  // An error outside any ReinError: another process renames a table under the server (what a damaged or foreign-edited
  // database gives), so the next verb's statement fails in SQLite, on the internal-error path, which logs the request
  // line too.
  const other = new Database(path.join(serve.home, 'rein.db'));
  other.exec('ALTER TABLE turns RENAME TO turns_elsewhere');
  other.close();
  const internal = await serve.post(`/api/listTurns?token=${secret}`, {});
  expect(internal.status).toBe(500);
  // The log line is written before the 500 goes out, but it reaches us through the child's stderr pipe, which may be
  // read after the HTTP reply: wait for it (at most 5 s).
  for (const end = Date.now() + 5000; Date.now() < end && !serve.output().includes('/api/listTurns'); ) await new Promise((r) => setTimeout(r, 50));
  const log = serve.output();
  const lines = log.split('\n').filter((l) => /\/api\/(status|exportData|listTurns)/.test(l));
  console.log(`server log lines for the three requests: ${lines.length}; token occurrences in the log: ${log.split(secret).length - 1}`);
  expect(log).toContain('rejected POST /api/exportData');
  expect(log).toContain('internal error on POST /api/listTurns');
  expect(log).not.toContain(secret);
});
