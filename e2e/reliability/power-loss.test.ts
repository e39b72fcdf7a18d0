// Issue #19, power-loss style: kill -9 of a whole process group at seeded moments while (1) adapter versions are
// being written and renamed into place (the real writeVersion, looped by version-writer.ts) and (2) `rein setup claude`
// and `rein uninstall claude` (the real CLI, looped by a shell) rewrite ~/.claude/settings.json. After every kill:
// each vN is whole (every file parses, the safetensors and the GGUF LoRA load), the staging directory a kill left is
// removed as stale, and settings.json holds exactly the old bytes or the new ones. A kill -9 keeps what reached the
// page cache, so this checks the write-then-rename protocol; a cut power supply also needs the bytes on disk before
// the rename, which writeVersion and the installers ensure with fsync (checked by reading, not by pulling a plug).
// REIN_POWER_KILLS sets the number of kills of each kind (default 8); REIN_POWER_SEED replays a run.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { Rng } from '../../src-main/common/engine/rng.ts';
import { REIN_BIN } from '../../src-main/cli/test-utils/rein.ts';
import { GgufFile } from '../../src-main/node/engine/gguf/read.ts';
import { loadPeftAdapter } from '../../src-main/node/engine/peft.ts';
import { writeTinyModel } from '../../src-main/node/engine/tiny.ts';
import { resolveHome } from '../../src-main/node/home.ts';
import { GGUF_LORA, modelAdaptersDir, removeStaleStaging } from '../../src-main/node/model-files/adapter-versions.ts';
import { figure } from './figures.ts';

const KILLS = Number(process.env.REIN_POWER_KILLS ?? 8);
const SEED = Number(process.env.REIN_POWER_SEED ?? Math.floor(Math.random() * 1e9));
const root = mkdtempSync(path.join(tmpdir(), 'rein-power-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Spawns `cmd` as the leader of its own process group; resolves once it printed `ready` (or at once when unset). */
async function startGroup(cmd: string, args: string[], env: NodeJS.ProcessEnv, ready: string | null): Promise<{ child: ChildProcess; exited: Promise<void> }> {
  const child = spawn(cmd, args, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  let out = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (out += c));
  if (ready === null) {
    child.stdout!.resume();
    return { child, exited };
  }
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${cmd} ${args.join(' ')}: not ready in 60 s: ${out}`)), 60_000);
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      if (c.includes(ready)) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then(() => reject(new Error(`${cmd} exited before it was ready: ${out}`)));
  });
  return { child, exited };
}

/** kill -9 of the whole group: the shell and every rein it started, or the writer. */
async function killGroup(g: { child: ChildProcess; exited: Promise<void> }): Promise<void> {
  process.kill(-g.child.pid!, 'SIGKILL');
  await g.exited;
}

/** Whether vN is whole: each JSON parses, the PEFT adapter loads, and the GGUF LoRA opens with every tensor read. */
function wholeVersion(dir: string): string | null {
  try {
    for (const f of ['metrics.json', 'config.json', 'lineage.json']) JSON.parse(readFileSync(path.join(dir, f), 'utf8'));
    loadPeftAdapter(path.join(dir, 'peft'));
    const g = GgufFile.open(path.join(dir, GGUF_LORA));
    try {
      for (const name of g.tensors.keys()) g.readBytes(name);
    } finally {
      g.close();
    }
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

test(`kill -9 of the process group while versions are renamed into place (${KILLS} kills)`, { timeout: 300_000 }, async () => {
  const rng = new Rng(SEED);
  const modelDir = path.join(root, 'tiny');
  writeTinyModel(modelDir, { arch: 'qwen2', layers: 2, hidden: 128, heads: 4, kvHeads: 2, intermediate: 256 });
  const home = resolveHome({ REIN_HOME: path.join(root, 'home') });
  const dir = modelAdaptersDir(home, modelDir);
  let staleLeft = 0;
  const broken: string[] = [];
  const checked = new Set<string>();
  for (let i = 0; i < KILLS; i++) {
    const g = await startGroup(process.execPath, [path.join(import.meta.dirname, 'version-writer.ts'), home.dir, modelDir], process.env, 'ready');
    await new Promise((r) => setTimeout(r, Math.floor(rng.uniform() * 300)));
    await killGroup(g);
    if (readdirSync(dir).some((e) => e.startsWith('.stage-'))) staleLeft++;
    for (const v of readdirSync(dir).filter((e) => /^v\d+$/.test(e) && !checked.has(e))) {
      checked.add(v);
      const why = wholeVersion(path.join(dir, v));
      if (why !== null) broken.push(`${v}: ${why}`);
    }
    removeStaleStaging(home);
    expect(readdirSync(dir).filter((e) => e.startsWith('.stage-'))).toEqual([]);
  }
  const versions = readdirSync(dir).filter((e) => /^v\d+$/.test(e)).length;
  console.log(`seed ${SEED}: ${versions} versions written, ${KILLS} kills, ${staleLeft} of them mid-write (a staging directory left, removed as stale); broken: ${broken.join('; ') || 'none'}`);
  figure(`power-loss, version rename (seed ${SEED}): ${KILLS} kill -9 of the writer's group, ${staleLeft} mid-write; ${versions} versions on disk, half-written ${broken.length}; stale staging left after start-up 0`);
  expect(broken).toEqual([]);
  expect(versions).toBeGreaterThan(KILLS);
});

test(`kill -9 of the process group while rein setup / uninstall rewrite settings.json (${KILLS} kills)`, { timeout: 300_000 }, async () => {
  const rng = new Rng(SEED + 1);
  const userHome = path.join(root, 'user');
  const settings = path.join(userHome, '.claude', 'settings.json');
  mkdirSync(path.dirname(settings), { recursive: true });
  const original = JSON.stringify({ model: 'sonnet', permissions: { allow: ['Bash(ls:*)'] } }, null, 2) + '\n';
  writeFileSync(settings, original);
  const env = { ...process.env, HOME: userHome, REIN_HOME: path.join(root, 'rein'), NO_COLOR: '1' };
  const rein = `${JSON.stringify(process.execPath)} ${JSON.stringify(REIN_BIN)}`;
  // The new bytes: what one setup writes (the uninstall restores the original, byte for byte).
  const once = await startGroup('bash', ['-c', `${rein} setup claude --yes && cat ${JSON.stringify(settings)} > ${JSON.stringify(settings + '.new')} && ${rein} uninstall claude --yes && echo done`], env, 'done');
  await once.exited;
  const installed = readFileSync(settings + '.new', 'utf8');
  expect(installed).not.toBe(original);
  expect(readFileSync(settings, 'utf8')).toBe(original);
  const seen = { old: 0, new: 0, other: 0 };
  const others: string[] = [];
  for (let i = 0; i < KILLS; i++) {
    const g = await startGroup('bash', ['-c', `echo ready; while true; do ${rein} setup claude --yes >/dev/null 2>&1; ${rein} uninstall claude --yes >/dev/null 2>&1; done`], env, 'ready');
    // One setup + uninstall cycle takes 2 to 4 s here (two CLI starts): the kills spread over about one cycle.
    await new Promise((r) => setTimeout(r, Math.floor(rng.uniform() * 4000)));
    await killGroup(g);
    const now = existsSync(settings) ? readFileSync(settings, 'utf8') : '(missing)';
    if (now === original) seen.old++;
    else if (now === installed) seen.new++;
    else {
      seen.other++;
      others.push(now.slice(0, 200));
    }
    // The next loop starts from whichever state the kill left: setup and uninstall each take it from there.
  }
  const temps = readdirSync(path.dirname(settings)).filter((e) => e.endsWith('.tmp'));
  console.log(`seed ${SEED + 1}: after ${KILLS} kills settings.json was the old bytes ${seen.old}, the new ${seen.new}, other ${seen.other}${others.length ? `: ${others.join(' | ')}` : ''}; temporary files left ${temps.length}`);
  figure(`power-loss, rein setup/uninstall (seed ${SEED + 1}): ${KILLS} kill -9 of the CLI's group: settings.json old bytes ${seen.old}, new bytes ${seen.new}, anything else ${seen.other}`);
  expect(seen.other).toBe(0);
});
