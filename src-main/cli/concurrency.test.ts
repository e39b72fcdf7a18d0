// Eight writer processes at once against one home with a running core: four `rein rate --stdin` processes (two
// going through the running core over HTTP, two opening the store directly with --direct) and four HTTP client
// processes that capture a turn and rate it. 500 ratings each, every rating its own write; all 4000 must be stored
// and no writer may see an error. Spawning 2000 separate `rein good` processes would take minutes on two cores,
// so the CLI writers use the batch mode, which runs the same code path per line.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { createHttpClient } from '../node/client.ts';
import { createCore } from '../node/core/core.ts';
import { readOrCreateToken, resolveHome } from '../node/home.ts';
import { REIN_BIN, startServeChild } from './test-utils/rein.ts';
import type { ServeChild } from './test-utils/rein.ts';

const PER_WRITER = 500;
const dir = mkdtempSync(path.join(tmpdir(), 'rein-concurrency-'));
let serve: ServeChild | null = null;
afterAll(async () => {
  await serve?.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Done {
  name: string;
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(name: string, args: string[], input: string): Promise<Done> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env: { ...process.env, REIN_HOME: dir }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ name, code, stdout, stderr }));
    child.stdin.end(input);
  });
}

const clientUrl = pathToFileURL(path.resolve(import.meta.dirname, '../node/client.ts')).href;
const homeUrl = pathToFileURL(path.resolve(import.meta.dirname, '../node/home.ts')).href;
/** An HTTP writer process: capture a turn, rate it, PER_WRITER times, through the API client. */
const httpWriter = (k: number) => `
  import { connectRunning } from ${JSON.stringify(clientUrl)};
  import { resolveHome } from ${JSON.stringify(homeUrl)};
  const api = connectRunning(resolveHome());
  if (!api) throw new Error('no running core');
  for (let i = 0; i < ${PER_WRITER}; i++) {
    const { turn } = await api.call('captureTurn', { source: 'api', session: 'http-${k}', eventId: 'http-${k}-' + i, prompt: 'p' + i, response: 'r' + i });
    const { rating } = await api.call('rate', { turnId: turn.id, value: i % 2 ? 'good' : 'bad' });
    if (rating.turnId !== turn.id) throw new Error('rated the wrong turn');
  }
  console.log('done');
`;

it(
  '4 `rein rate --stdin` processes (2 over HTTP, 2 --direct) and 4 HTTP client processes store 4000 ratings at once without an error',
  async () => {
    // Turns for the CLI writers, captured beforehand; the limit is raised as a user with a busy agent would.
    const seed = createCore({ home: resolveHome({ REIN_HOME: dir }) });
    const cliTurns: number[][] = [[], [], [], []];
    try {
      await seed.call('setSettings', { values: { 'server.rateLimitPerMinute': 1_000_000 } }, 'test');
      for (let k = 0; k < 4; k++) {
        for (let i = 0; i < PER_WRITER; i++) {
          const { turn } = await seed.call('captureTurn', { source: 'api', session: `cli-${k}`, eventId: `cli-${k}-${i}`, prompt: `p${i}`, response: `r${i}` }, 'test');
          cliTurns[k].push(turn!.id);
        }
      }
    } finally {
      seed.close();
    }
    serve = await startServeChild(dir);

    const started = performance.now();
    const writers = [
      ...cliTurns.map((ids, k) =>
        run(
          `cli-${k}${k < 2 ? '' : ' --direct'}`,
          [REIN_BIN, ...(k < 2 ? [] : ['--direct']), 'rate', '--stdin', '--json'],
          ids.map((id, i) => JSON.stringify({ turnId: id, value: i % 5 === 0 ? 'bad' : (i % 5) + 1 })).join('\n') + '\n',
        ),
      ),
      ...[0, 1, 2, 3].map((k) => run(`http-${k}`, ['--input-type=module', '-e', httpWriter(k)], '')),
    ];
    const results = await Promise.all(writers);
    const seconds = (performance.now() - started) / 1000;

    for (const r of results) {
      expect(r.stderr, r.name).toBe('');
      expect(r.code, r.name).toBe(0);
    }
    for (const r of results.slice(0, 4)) expect(r.stdout.trim().split('\n'), r.name).toHaveLength(PER_WRITER);

    const api = createHttpClient({ url: serve.url, token: readOrCreateToken(resolveHome({ REIN_HOME: dir })) });
    const status = await api.call('status', {});
    expect(status.turns.total).toBe(8 * PER_WRITER);
    expect(status.ratings.total).toBe(8 * PER_WRITER);
    expect(status.turns.unrated).toBe(0);
    const all = await api.call('listRatings', { limit: 1, includeUndone: true });
    // No rating was replaced or lost: each of the 4000 turns has exactly one, and none was undone.
    expect(all.total).toBe(8 * PER_WRITER);
    // About 21 s on an idle 2-core machine; the bound only catches a hang or a lock convoy, since CI runs other
    // test files beside this one on the same two cores.
    expect(seconds).toBeLessThan(150);
    console.log(`concurrency: ${8 * PER_WRITER} ratings by 8 processes in ${seconds.toFixed(1)} s`);
  },
  180_000,
);
