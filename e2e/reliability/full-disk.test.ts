// Issue #19 item 2: a full disk during an export and during a version write. The disk is a small tmpfs mounted for
// the test (root; ENOSPC, as a full disk gives), or, where mounting is not allowed, the same children under
// `prlimit --fsize` (EFBIG, as a file-size limit gives). Each must end in a clear error naming the disk, leave no
// partial file under the target's name (nor a temporary one), and lose nothing: the database is as it was, and the
// same export or round succeeds once there is room.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { REIN_BIN } from '../../src-main/cli/test-utils/rein.ts';
import { createCore } from '../../src-main/node/core/core.ts';
import { Engine } from '../../src-main/node/engine/engine.ts';
import { writeTinyModel } from '../../src-main/node/engine/tiny.ts';
import { resolveHome } from '../../src-main/node/home.ts';
import { styleRule } from '../../src-main/node/demo/corpus.ts';
import { SMALL_LM_DIR } from '../../src-main/node/demo/small-lm.ts';
import { captureAndRate, sampleTurns } from '../../src-main/node/training/test-utils/rated-turns.ts';
import { modelAdaptersDir } from '../../src-main/node/model-files/adapter-versions.ts';
import { figure } from './figures.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-full-disk-'));
const mounts: string[] = [];

/** Mounts a tmpfs of `size` at `dir`; false where this process may not mount (not root, no CAP_SYS_ADMIN). */
function mountSmall(dir: string, size: string): boolean {
  mkdirSync(dir, { recursive: true });
  if (process.getuid?.() !== 0 || process.env.REIN_FULL_DISK === 'prlimit') return false;
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' });
  if (r.status !== 0) return false;
  mounts.push(dir);
  return true;
}
// REIN_FULL_DISK=prlimit runs the fallback where a mount would work.
const canMount = (() => {
  const probe = path.join(root, 'probe');
  const ok = mountSmall(probe, '64k');
  if (ok) execFileSync('umount', [mounts.pop()!]);
  return ok;
})();
const how = canMount ? 'a full tmpfs (ENOSPC)' : 'prlimit --fsize (EFBIG)';

beforeAll(() => console.log(`full disk simulated with ${how}`));
afterAll(() => {
  for (const m of mounts.reverse()) spawnSync('umount', [m]);
  rmSync(root, { recursive: true, force: true });
});

/** The real CLI, under a file-size limit when no tmpfs could be mounted. */
function rein(args: string[], home: string, fsize: number): { code: number | null; stdout: string; stderr: string } {
  const argv = [process.execPath, REIN_BIN, ...args];
  const [cmd, ...rest] = canMount ? argv : ['prlimit', `--fsize=${fsize}`, ...argv];
  const r = spawnSync(cmd!, rest, { env: { ...process.env, REIN_HOME: home, NO_COLOR: '1' }, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const results: string[] = [];

it('an export onto a full disk: a clear error, no file left, nothing lost; the same export succeeds with room', async () => {
  const home = path.join(root, 'export-home');
  const core = createCore({ home: resolveHome({ REIN_HOME: home }) });
  const text = 'a line of a working conversation, kept whole. '.repeat(200);
  for (let i = 0; i < 60; i++) {
    const { turn } = await core.call('captureTurn', { source: 'api', eventId: `e${i}`, prompt: `prompt ${i}`, response: `${i} ${text}` }, 'test');
    if (i % 2 === 0) await core.call('rate', { turnId: turn!.id, value: 'good' }, 'test');
  }
  core.close();
  const full = path.join(root, 'export-disk');
  if (!mountSmall(full, '256k')) mkdirSync(full, { recursive: true });
  const target = path.join(full, 'rein-export.jsonl');
  const r = rein(['export', target], home, 256 * 1024);
  const left = readdirSync(full);
  const after = rein(['status', '--json'], home, 1 << 30);
  const status = JSON.parse(after.stdout) as { turns: { total: number }; ratings: { good: number } };
  const roomy = path.join(root, 'roomy.jsonl');
  const again = rein(['export', roomy, '--json'], home, 1 << 30);
  console.log(`export onto ${how}: exit ${r.code}, ${r.stderr.trim()}; left in the folder: [${left.join(', ')}]; after: ${status.turns.total} turns, ${status.ratings.good} good; with room: exit ${again.code}, ${again.stdout.trim()}`);
  expect(r.code).toBe(2);
  expect(r.stderr).toMatch(canMount ? /cannot write .*rein-export\.jsonl: the disk is full \(ENOSPC\)/ : /larger than this system allows \(EFBIG\)/);
  expect(left).toEqual([]);
  expect(status.turns.total).toBe(60);
  expect(status.ratings.good).toBe(30);
  expect(again.code).toBe(0);
  expect(JSON.parse(again.stdout)).toMatchObject({ turns: 60, ratings: 30 });
  expect(readFileSync(roomy, 'utf8').split('\n').filter((l) => l.includes('"type":"turn"'))).toHaveLength(60);
  results.push(`export: exit ${r.code} "${canMount ? 'the disk is full (ENOSPC)' : 'EFBIG'}", files left 0, turns/ratings kept 60/30`);
});

it('a version write onto a full disk: a clear error, no vN and no staging left', () => {
  const modelDir = path.join(root, 'tiny');
  writeTinyModel(modelDir, { arch: 'qwen2', layers: 2, hidden: 128, heads: 4, kvHeads: 2, intermediate: 256 });
  const home = resolveHome({ REIN_HOME: path.join(root, 'version-home') });
  if (!mountSmall(home.adaptersDir, '64k')) mkdirSync(home.adaptersDir, { recursive: true });
  const argv = [process.execPath, path.join(import.meta.dirname, 'version-writer.ts'), home.dir, modelDir, '--once'];
  const [cmd, ...rest] = canMount ? argv : ['prlimit', `--fsize=${64 * 1024}`, ...argv];
  const r = spawnSync(cmd!, rest, { encoding: 'utf8', timeout: 60_000 });
  const dir = modelAdaptersDir(home, modelDir);
  const left = existsSync(dir) ? readdirSync(dir) : [];
  console.log(`version write onto ${how}: exit ${r.status}, ${r.stderr.trim()}; left: [${left.join(', ')}]`);
  expect(r.status).toBe(1);
  expect(r.stderr).toMatch(/DiskFullError: cannot write adapter version 1 in .*: (the disk is full \(ENOSPC\)|a file would be larger than this system allows \(EFBIG\)); nothing of v1 was kept/);
  expect(left).toEqual([]);
  results.push(`version write: exit 1, DiskFullError naming the disk, vN and staging left 0`);
});

it.skipIf(!canMount)('a training round whose version does not fit: the run fails with the disk named, ratings stay pending, and the next round succeeds once there is room (needs a tmpfs mount: root)', { timeout: 180_000 }, async () => {
  const home = resolveHome({ REIN_HOME: path.join(root, 'round-home') });
  const core = createCore({ home });
  try {
    const engine = Engine.load(SMALL_LM_DIR, { threads: 1 });
    await core.call('setSettings', { values: { 'model.active': SMALL_LM_DIR, 'training.auto': false, 'training.preset': 'custom', 'training.custom': { steps: 2 } } }, 'test');
    await captureAndRate(core, await sampleTurns(engine, 10, 5), styleRule('tests'), 'd');
    await engine.close();
    mountSmall(home.adaptersDir, '64k');
    const pending = (await core.call('status', {}, 'test')).pending;
    const { runId } = await core.call('startTraining', {}, 'test');
    await core.scheduler.idle();
    const run = (await core.call('listRuns', {}, 'test')).find((x) => x.id === runId)!;
    const left = readdirSync(home.adaptersDir, { recursive: true });
    const pendingAfter = (await core.call('status', {}, 'test')).pending;
    execFileSync('umount', [mounts.pop()!]);
    const next = await core.call('startTraining', {}, 'test');
    await core.scheduler.idle();
    const nextRun = (await core.call('listRuns', {}, 'test')).find((x) => x.id === next.runId)!;
    console.log(`round onto a full disk: ${run.status}: ${run.error}; left [${left.join(', ')}]; pending ${pending} → ${pendingAfter}; with room: ${nextRun.status}`);
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/DiskFullError: cannot write adapter version 1 .*the disk is full \(ENOSPC\)/);
    // A version folder (vN) or a staging folder at any depth; the model's own folder is named after its path, which
    // may hold "v7" (a mktemp name in CI did), so only a whole path segment counts.
    expect(left.filter((e) => String(e).split(/[\\/]/).some((seg) => /^v\d+$/.test(seg) || seg.startsWith('.stage-')))).toEqual([]);
    expect(pendingAfter).toBe(pending);
    expect(nextRun.status).toBe('succeeded');
    results.push(`training round: run failed naming the disk, ratings pending ${pendingAfter}/${pending}, next round ${nextRun.status}`);
  } finally {
    core.close();
  }
});

afterAll(() => figure(`full disk (${how}): ${results.join('; ')}`));
