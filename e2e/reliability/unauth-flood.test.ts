// Issue #21 item 3: requests with no token (an <img> on any web page sends one) must not use up the bucket that
// authenticated callers share, so real calls keep flowing during a no-token flood.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startServe } from '../harness.ts';
import type { ServeChild } from '../harness.ts';

let serve: ServeChild;
beforeAll(async () => {
  serve = await startServe();
});
afterAll(async () => {
  await serve.stop();
});

test('a no-token GET flood does not rate-limit authenticated calls', async () => {
  // A small limit so that a flood CI can afford exhausts it (the default is 6,000 a minute).
  expect((await serve.post('/api/setSettings', { values: { 'server.rateLimitPerMinute': 100 } })).status).toBe(200);
  const flood = await Promise.all(
    Array.from({ length: 800 }, () => fetch(new URL('/api/listTurns', serve.url)).then((r) => r.status)),
  );
  const statuses: number[] = [];
  for (let i = 0; i < 20; i++) statuses.push((await serve.post('/api/getSettings', {})).status);
  const ok = statuses.filter((s) => s >= 200 && s < 300).length;
  console.log(`no-token flood: ${flood.filter((s) => s === 429).length}/800 got 429, ${flood.filter((s) => s === 401).length} got 401; authenticated calls after it: ${ok}/20 2xx`);
  expect(ok).toBe(20);
  // The no-token traffic has a bucket of its own, and the flood emptied it.
  expect(flood.filter((s) => s === 429).length).toBeGreaterThan(0);
});
