// The `rein` command as a user runs it: `node bin/rein.mjs ...` in a child process with REIN_HOME set, against the
// bare store (no core running) and against a live `rein serve`.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODE } from '../common/errors.ts';
import { createCore } from '../node/core/core.ts';
import { resolveHome } from '../node/home.ts';
import { runRein, startServeChild } from './test-utils/rein.ts';
import type { ServeChild } from './test-utils/rein.ts';

const homes: string[] = [];
function newHome(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'rein-cli-'));
  homes.push(dir);
  return dir;
}
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true });
});

/** Store turns directly, as a capture would, so the CLI has something to rate. */
function seedTurns(dir: string, n: number, session = 's1'): void {
  const core = createCore({ home: resolveHome({ REIN_HOME: dir }) });
  try {
    for (let i = 0; i < n; i++) {
      void core.call('captureTurn', { source: 'api', session, eventId: `seed-${i}`, prompt: `question ${i}`, response: `answer ${i}` }, 'test');
    }
  } finally {
    core.close();
  }
}

describe('against the bare store (no core running)', () => {
  let home: string;
  beforeAll(() => {
    home = newHome();
    seedTurns(home, 3);
  });

  it('rates the newest turn and reports it, in words and as JSON', async () => {
    const good = await runRein(['good'], { home });
    expect(good.stderr).toBe('');
    expect(good.code).toBe(0);
    expect(good.stdout).toMatch(/^Rated turn 3 good \(reward \+1\)\. Pending 1 of 32\.\n$/);
    const bad = await runRein(['bad', '--json', '--comment', 'wrong file', '--tag', 'style', '--tag', 'tests'], { home });
    expect(bad.code).toBe(0);
    const out = JSON.parse(bad.stdout) as { rating: { turnId: number; kind: string; value: number; tags: string[]; comment: string; rater: string } };
    expect(out.rating).toMatchObject({ turnId: 2, kind: 'bad', value: -1, tags: ['style', 'tests'], comment: 'wrong file', rater: 'cli' });
    const status = JSON.parse((await runRein(['status', '--json'], { home })).stdout) as { ratings: { good: number; bad: number } };
    expect(status.ratings).toMatchObject({ good: 1, bad: 1 });
    const human = await runRein(['status'], { home });
    expect(human.stdout).toContain('not running (read the store directly)');
  });

  it('rates on a 1-5 scale and undoes the newest rating', async () => {
    const r = await runRein(['rate', '4', '--json'], { home });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).rating).toMatchObject({ turnId: 1, kind: 'scale', scale: 4, value: 0.5 });
    const u = await runRein(['undo'], { home });
    expect(u.code).toBe(0);
    expect(u.stdout).toMatch(/^Undid rating #\d+ \(4\/5\) of turn 1\./);
    const list = JSON.parse((await runRein(['ratings', '--json', '--all'], { home })).stdout) as { items: { undone: boolean; scale: number | null }[] };
    expect(list.items[0]).toMatchObject({ undone: true, scale: 4 });
  });

  it('exits with the error code of each failure and one line on stderr', async () => {
    const cases: [string[], number, RegExp][] = [
      [['rate', '7'], EXIT_CODE.bad_input, /a rating is good, bad or a whole number 1-5/],
      [['rate'], EXIT_CODE.bad_input, /needs a rating/],
      [['good', '--turn', '999'], EXIT_CODE.not_found, /999/],
      [['good', '--turn', 'abc'], EXIT_CODE.bad_input, /--turn must be a whole number/],
      [['frobnicate'], EXIT_CODE.bad_input, /unknown command "frobnicate"/],
      [['status', '--bogus'], EXIT_CODE.bad_input, /bogus/],
      [['settings', 'set', 'no.such=1'], EXIT_CODE.bad_input, /unknown setting "no\.such"/],
      [['settings', 'set', 'training.threshold=0'], EXIT_CODE.bad_input, /training\.threshold/],
      [['turns', '--state', 'odd'], EXIT_CODE.bad_input, /--state must be one of/],
    ];
    for (const [args, code, message] of cases) {
      const r = await runRein(args, { home });
      expect(r.code, args.join(' ')).toBe(code);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.stdout, args.join(' ')).toBe('');
    }
    const j = await runRein(['rate', '9', '--json'], { home });
    expect(JSON.parse(j.stderr).error).toMatchObject({ code: 'bad_input', field: 'value' });
  });

  it('reads and changes settings through the config table', async () => {
    const set = await runRein(['settings', 'set', 'training.threshold=5', 'capture.agents=["api","codex"]'], { home });
    expect(set.code).toBe(0);
    expect(set.stdout).toBe('training.threshold = 5\ncapture.agents = ["api","codex"]\n');
    const get = await runRein(['settings', 'get', 'training.threshold', '--json'], { home });
    expect(JSON.parse(get.stdout)).toEqual({ 'training.threshold': 5 });
    const all = await runRein(['settings'], { home });
    expect(all.stdout).toMatch(/^server\.port\s+7433\s+Loopback port/m);
    // An all-digit key is still a string where the setting takes a string (JSON would make it a number).
    const key = await runRein(['settings', 'set', 'proxy.upstreamApiKey=123456', '--json'], { home });
    expect(key.code, key.stderr).toBe(0);
    expect(JSON.parse(key.stdout)['proxy.upstreamApiKey']).toBe('123456');
    await runRein(['settings', 'set', 'proxy.upstreamApiKey=null'], { home });
  });

  it('refuses reset without a terminal unless --yes is given', async () => {
    const before = JSON.parse((await runRein(['status', '--json'], { home })).stdout) as { ratings: { total: number } };
    expect(before.ratings.total).toBeGreaterThan(0);
    const refused = await runRein(['reset'], { home });
    expect(refused.code).toBe(EXIT_CODE.bad_input);
    expect(refused.stderr).toMatch(/--yes/);
    const still = JSON.parse((await runRein(['status', '--json'], { home })).stdout) as { ratings: { total: number } };
    expect(still.ratings.total).toBe(before.ratings.total);
    const done = await runRein(['reset', '--yes', '--json'], { home });
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout).ratings).toBeGreaterThan(0);
    expect(JSON.parse((await runRein(['status', '--json'], { home })).stdout).ratings.total).toBe(0);
  });

  it('prints help for the CLI and for each command', async () => {
    const main = await runRein(['--help'], { home });
    expect(main.code).toBe(0);
    for (const name of ['good', 'bad', 'rate', 'undo', 'status', 'turns', 'ratings', 'settings', 'train', 'rollback', 'reset', 'export', 'import', 'serve']) {
      expect(main.stdout).toMatch(new RegExp(`^  ${name} `, 'm'));
    }
    const rate = await runRein(['rate', '--help'], { home });
    expect(rate.code).toBe(0);
    expect(rate.stdout).toMatch(/^Usage: rein rate/);
    expect(rate.stdout).toContain('--correction <value>');
    expect((await runRein([], { home })).code).toBe(EXIT_CODE.bad_input);
  });
});

describe('against a running rein serve', () => {
  let home: string;
  let serve: ServeChild;
  beforeAll(async () => {
    home = newHome();
    serve = await startServeChild(home);
  });
  afterAll(async () => {
    await serve?.stop();
  });

  async function capture(eventId: string, session = 'live') {
    const token = readFileSync(path.join(home, 'token'), 'utf8').trim();
    const res = await fetch(new URL('v1/turns', serve.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ source: 'api', session, eventId, prompt: `prompt ${eventId}`, response: `response ${eventId}` }),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { turn: { id: number } }).turn.id;
  }

  it('talks to the running core over HTTP', async () => {
    const id = await capture('t1');
    const r = await runRein(['good', '--json'], { home });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout).rating).toMatchObject({ turnId: id, kind: 'good' });
    const s = await runRein(['status'], { home });
    expect(s.stdout).toContain('running (answered over HTTP)');
    const turns = JSON.parse((await runRein(['turns', '--json', '--source', 'api'], { home })).stdout) as { items: { id: number; state: string }[] };
    expect(turns.items[0]).toMatchObject({ id, state: 'rated' });
  });

  it('rates a batch from stdin, one write per line, reporting a bad line and carrying on', async () => {
    const ids = [await capture('b1', 'batch'), await capture('b2', 'batch'), await capture('b3', 'batch')];
    const input = [`{"turnId":${ids[0]},"value":"good"}`, 'seven', `{"turnId":${ids[1]},"value":2,"tags":["x"]}`, '', `{"turnId":${ids[2]},"value":"bad"}`].join('\n');
    const r = await runRein(['rate', '--stdin', '--json'], { home, input });
    expect(r.code).toBe(EXIT_CODE.bad_input);
    const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { turnId: number; kind: string });
    expect(lines.map((l) => [l.turnId, l.kind])).toEqual([
      [ids[0], 'good'],
      [ids[1], 'scale'],
      [ids[2], 'bad'],
    ]);
    expect(JSON.parse(r.stderr.trim())).toMatchObject({ line: 2, error: { code: 'bad_input' } });
  });

  it('exports and imports through the running core, with paths relative to the caller', async () => {
    const file = path.join(home, 'export.jsonl');
    const ex = await runRein(['export', file, '--json'], { home });
    expect(ex.code).toBe(0);
    expect(JSON.parse(ex.stdout)).toMatchObject({ path: file });
    expect(existsSync(file)).toBe(true);
    const im = await runRein(['import', file, '--json'], { home });
    expect(im.code).toBe(0);
    expect(JSON.parse(im.stdout)).toMatchObject({ turns: 0, ratings: 0 });
    expect(JSON.parse(im.stdout).skipped).toBeGreaterThan(0);
  });

  it('refuses a second serve on the same home', async () => {
    const r = await runRein(['serve', '--port', '0'], { home });
    expect(r.code).toBe(EXIT_CODE.locked);
    expect(r.stderr).toMatch(new RegExp(`pid ${serve.child.pid}`));
  });

  it('shuts down on SIGTERM: exit 0, lock and server.json removed, and the CLI falls back to the store', async () => {
    expect(existsSync(path.join(home, 'core.lock'))).toBe(true);
    const code = await serve.stop();
    expect(code).toBe(0);
    expect(existsSync(path.join(home, 'core.lock'))).toBe(false);
    expect(existsSync(path.join(home, 'server.json'))).toBe(false);
    const s = await runRein(['status', '--json'], { home });
    expect(s.code).toBe(0);
    expect(JSON.parse(s.stdout).ratings.good).toBeGreaterThan(0);
  });
});

const systemNode = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => existsSync(p));
const systemMajor = systemNode ? Number(spawnSync(systemNode, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }).stdout.trim()) : NaN;

describe.skipIf(!(systemMajor < 24))(`the launcher under an older system Node (${systemNode ?? 'none'} v${systemMajor})`, () => {
  it('re-runs itself on the bundled Node 24 and passes the exit code through', async () => {
    const home = newHome();
    const ok = await runRein(['status', '--json'], { home, node: systemNode });
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout).turns.total).toBe(0);
    const bad = await runRein(['rate', '9'], { home, node: systemNode });
    expect(bad.code).toBe(EXIT_CODE.bad_input);
  });
});
