// Issue #21 item 3: requests with no token (an <img> on any web page sends one) must not use up the bucket that
// authenticated callers share, so real calls keep flowing during a no-token flood. Nor may such a flood from another
// site's page starve the user's own page, which loads its files and checks /api/health without the token.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startServe } from '../harness.ts';
import type { ServeChild } from '../harness.ts';
import { figure } from './figures.ts';

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

/** A raw GET with the headers a browser would send (fetch may not set Sec-Fetch-*); resolves with the status. */
function get(port: number, pathname: string, headers: Record<string, string>, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: pathname, headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

test('a flood from another site\'s page does not starve the user\'s own page: its files and /api/health answer', async () => {
  const renderer = mkdtempSync(path.join(tmpdir(), 'rein-flood-ui-'));
  writeFileSync(path.join(renderer, 'index.html'), '<!doctype html><title>Rein</title>');
  const own = await startServe({ renderer });
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  try {
    // What Chromium sends for <img src="http://127.0.0.1:PORT/..."> on a page of another site (another port of
    // 127.0.0.1 is same-site): no token, no Origin, Sec-Fetch-Site cross-site or same-site.
    const img = (site: string) => ({ 'sec-fetch-site': site, 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'image' });
    const paths = ['/api/listTurns', '/api/health', '/', '/v1/turns'];
    const flood: number[] = [];
    for (let i = 0; i < 1000; i += 50) {
      flood.push(...(await Promise.all(Array.from({ length: 50 }, (_, j) => get(own.port, paths[(i + j) % paths.length]!, img((i + j) % 3 === 0 ? 'same-site' : 'cross-site'), agent)))));
    }
    // The user's page meanwhile: opened from its address (Sec-Fetch-Site none), its own scripts' requests
    // (same-origin), and a health check from a script or the CLI (no browser headers).
    const page = [
      await get(own.port, '/', { 'sec-fetch-site': 'none', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' }, agent),
      await get(own.port, '/api/health', { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors', 'sec-fetch-dest': 'empty' }, agent),
      await get(own.port, '/index.html', { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'script' }, agent),
      await get(own.port, '/api/health', {}, agent),
    ];
    const limited = flood.filter((s) => s === 429).length;
    console.log(`another site's flood: ${flood.length} requests, ${limited} got 429; the user's page after it: ${page.join(', ')}`);
    expect(limited).toBeGreaterThan(0);
    expect(page).toEqual([200, 200, 200, 200]);
    expect((await own.post('/api/status', {})).status).toBe(200);
    figure(`unauthenticated flood from another site: ${limited}/${flood.length} answered 429 from its own bucket; the user's page (document, same-origin /api/health, script, plain health) ${page.filter((s) => s === 200).length}/4 answered 200`);
  } finally {
    agent.destroy();
    await own.stop();
    rmSync(renderer, { recursive: true, force: true });
  }
});
