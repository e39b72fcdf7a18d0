// Issue #21 items 2 and 10: a deeply nested JSON value must get a 400, never a crash or a 500. A setSettings value
// 200,000 deep used to overflow the stack while the error reply echoed it, killing `rein serve` (and leaving
// server.json and core.lock behind); a context field 3,000 deep overflowed the capture's redaction walk.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { startServe } from '../harness.ts';
import type { ServeChild } from '../harness.ts';

let serve: ServeChild | undefined;
afterEach(async () => {
  await serve?.stop();
  serve = undefined;
});

/** `[[[…"x"…]]]` `depth` levels deep, built as text: JSON.stringify itself would overflow on the way. */
function nested(depth: number): string {
  return '['.repeat(depth) + '"x"' + ']'.repeat(depth);
}

async function postRaw(s: ServeChild, pathname: string, body: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(new URL(pathname, s.url), {
    method: 'POST',
    headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
    body,
  });
  return { status: res.status, body: await res.json() };
}

test('setSettings with a value nested 200,000 deep answers 400 and the server lives on', async () => {
  serve = await startServe();
  const s = serve;
  const t0 = performance.now();
  const r = await postRaw(s, '/api/setSettings', `{"values":{"capture.paused":${nested(200_000)}}}`);
  const ms = performance.now() - t0;
  const health = await fetch(new URL('/api/health', s.url));
  console.log(`setSettings nested 200,000 deep: HTTP ${r.status} in ${ms.toFixed(0)} ms, reply ${JSON.stringify(r.body).length} bytes; health after: ${health.status}`);
  expect(r.status).toBe(400);
  expect(JSON.stringify(r.body).length).toBeLessThan(2_000);
  expect(health.status).toBe(200);
  // Stopped cleanly: the server removes its own server.json and core.lock.
  const home = s.home;
  expect(await s.stop({ keepHome: true })).toBe(0);
  serve = undefined;
  console.log(`after stop: server.json ${existsSync(path.join(home, 'server.json')) ? 'left behind' : 'removed'}, core.lock ${existsSync(path.join(home, 'core.lock')) ? 'left behind' : 'removed'}`);
  expect(existsSync(path.join(home, 'server.json'))).toBe(false);
  expect(existsSync(path.join(home, 'core.lock'))).toBe(false);
});

test('a capture whose context field is nested 3,000 deep answers 400 and stores nothing', async () => {
  serve = await startServe();
  const s = serve;
  const turn = `{"source":"api","eventId":"deep-1","prompt":"p","response":"r","context":[{"role":"user","content":"c","extra":${nested(3_000)}}]}`;
  const r = await postRaw(s, '/v1/turns', turn);
  const listed = (await s.call('listTurns', {})) as { total: number };
  console.log(`capture with a context field 3,000 deep: HTTP ${r.status} ${JSON.stringify(r.body).slice(0, 160)}; turns stored: ${listed.total}`);
  expect(r.status).toBe(400);
  expect(listed.total).toBe(0);
});
