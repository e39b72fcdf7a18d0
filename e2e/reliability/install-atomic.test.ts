// Issue #21 item 12: `rein setup claude` refuses a settings.json its owner made read-only, and an install whose
// second file fails leaves the first as it was, with no install record. And `rein setup` killed at random points
// leaves each agent's config files old or new (below).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REIN_BIN } from '../../src-main/cli/test-utils/rein.ts';
import { ensureHome, readOrCreateToken, resolveHome } from '../../src-main/node/home.ts';
import { claudeIntegration } from '../../src-main/node/install/claude.ts';
import { install, recoverInterrupted, statePath, type InstallEnv } from '../../src-main/node/install/installer.ts';
import { installEnv, QUIET } from '../../src-main/node/install/test-utils/install-env.ts';
import { figure } from './figures.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-rel-install-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const ORIGINAL = JSON.stringify({ model: 'sonnet', hooks: {} }, null, 2) + '\n';

function sandbox(name: string): { env: InstallEnv; settings: string } {
  const home = path.join(root, name);
  const settings = path.join(home, '.claude', 'settings.json');
  mkdirSync(path.dirname(settings), { recursive: true });
  writeFileSync(settings, ORIGINAL);
  const env = installEnv(home, path.join(home, 'rein'));
  return { env, settings };
}

describe('installer files (issue #21 item 12)', () => {
  it('a 0444 settings.json is refused, its bytes and mode kept', async () => {
    const { env, settings } = sandbox('readonly');
    chmodSync(settings, 0o444);
    const err = await install(claudeIntegration, env, QUIET).then(() => null, (e: Error) => e);
    const mode = (statSync(settings).mode & 0o777).toString(8);
    console.log(`0444 settings.json: ${err?.message}; mode after ${mode}`);
    expect(err?.message).toMatch(/read-only/);
    expect(readFileSync(settings, 'utf8')).toBe(ORIGINAL);
    expect(mode).toBe('444');
  });

  it('the second file failing leaves settings.json as it was and records no install', async () => {
    const { env, settings } = sandbox('second-fails');
    chmodSync(settings, 0o644);
    // The /rl command file's folder refuses new files (0555; immutable under root, which ignores modes), so that
    // write fails after settings.json was written.
    const commands = path.join(env.userHome, '.claude', 'commands');
    mkdirSync(commands);
    chmodSync(commands, 0o555);
    const root_ = process.getuid?.() === 0;
    if (root_) execFileSync('chattr', ['+i', commands]);
    const err = await install(claudeIntegration, env, QUIET)
      .then(() => null, (e: Error) => e)
      .finally(() => {
        if (root_) execFileSync('chattr', ['-i', commands]);
        chmodSync(commands, 0o755);
      });
    const state = statePath(env.rein);
    let recorded = 'none';
    try {
      recorded = readFileSync(state, 'utf8');
    } catch {
      // no state file: nothing recorded
    }
    const same = readFileSync(settings, 'utf8') === ORIGINAL;
    console.log(`second file failing: ${err?.message.slice(0, 100)}; settings.json unchanged: ${same}, mode ${(statSync(settings).mode & 0o777).toString(8)}; install record: ${recorded.includes('claude') ? 'present' : 'none'}`);
    expect(err).not.toBeNull();
    expect(same).toBe(true);
    expect(statSync(settings).mode & 0o777).toBe(0o644);
    expect(recorded.includes('claude')).toBe(false);
  });
});

// `rein setup <agent>` killed with SIGKILL at random points, through the real CLI: once the interrupted install is
// recovered (recoverInterrupted, the step the next `rein setup` and `rein uninstall` run first), the agent's config
// files are byte for byte all as they were or all as a whole setup writes them, never a mix or a torn file; and
// running setup again completes it. Half the kills land at random in the whole run, half in its write phase (after the
// backup folder appears, just before the first config write).
describe('rein setup under kill -9', () => {
  const sandbox = path.join(root, 'kill');
  const template = path.join(root, 'kill-template');
  const FILES: Record<string, string[]> = {
    claude: ['.claude/settings.json', '.claude/commands/rl.md'],
    codex: ['.codex/config.toml', '.codex/hooks.json'],
    openclaw: ['.openclaw/openclaw.json'],
  };
  const ORIGINALS: Record<string, string> = {
    '.claude/settings.json': ORIGINAL,
    '.codex/config.toml': 'model = "o4-mini"\n[tui]\nanimations = false\n',
    '.openclaw/openclaw.json': JSON.stringify({ gateway: { port: 18789 }, plugins: { entries: {} } }, null, 2) + '\n',
  };
  const KILLS = 6;
  const env = { ...process.env, HOME: sandbox, REIN_HOME: path.join(sandbox, 'rein'), NO_COLOR: '1' };
  const read = (f: string): string | null => (existsSync(path.join(sandbox, f)) ? readFileSync(path.join(sandbox, f), 'utf8') : null);
  const reset = (): void => {
    rmSync(sandbox, { recursive: true, force: true });
    cpSync(template, sandbox, { recursive: true });
  };

  beforeAll(() => {
    for (const [f, text] of Object.entries(ORIGINALS)) {
      mkdirSync(path.dirname(path.join(template, f)), { recursive: true });
      writeFileSync(path.join(template, f), text);
    }
    // The Rein home with its token, so every run writes the same bytes.
    readOrCreateToken(ensureHome(resolveHome({ REIN_HOME: path.join(template, 'rein') })));
  });

  for (const agent of Object.keys(FILES)) {
    it(`${agent}: the config is all old or all new after a kill and its recovery, and setup again completes it`, { timeout: 120_000 }, async () => {
      // The bytes a whole setup writes, in the same sandbox.
      reset();
      const whole = spawnSync(process.execPath, [REIN_BIN, 'setup', agent, '--yes'], { env, encoding: 'utf8' });
      expect(whole.status, whole.stderr).toBe(0);
      const after = Object.fromEntries(FILES[agent]!.map((f) => [f, read(f)]));
      const before = Object.fromEntries(FILES[agent]!.map((f) => [f, ORIGINALS[f] ?? null]));
      const tally = { old: 0, new: 0, partial: 0, torn: 0, mixedAtKill: 0 };
      for (let i = 0; i < KILLS; i++) {
        reset();
        const child = spawn(process.execPath, [REIN_BIN, 'setup', agent, '--yes'], { env, stdio: 'ignore' });
        const exited = new Promise<void>((r) => child.on('exit', () => r()));
        let gone = false;
        void exited.then(() => (gone = true));
        if (i % 2 === 0) {
          await new Promise((r) => setTimeout(r, Math.random() * 900));
        } else {
          const backups = path.join(sandbox, 'rein', 'backups');
          while (!gone && !(existsSync(backups) && readdirSync(backups).length > 0)) await new Promise((r) => setTimeout(r, 1));
          await new Promise((r) => setTimeout(r, Math.random() * 15));
        }
        if (!gone) child.kill('SIGKILL');
        await exited;
        const killedAt = FILES[agent]!.map((f) => (read(f) === before[f] ? 'old' : read(f) === after[f] ? 'new' : 'torn'));
        if (killedAt.includes('old') && killedAt.includes('new')) tally.mixedAtKill++;
        recoverInterrupted(resolveHome({ REIN_HOME: env.REIN_HOME }));
        const states = FILES[agent]!.map((f) => {
          const now = read(f);
          return now === before[f] ? 'old' : now === after[f] ? 'new' : 'torn';
        });
        if (states.includes('torn')) tally.torn++;
        else if (states.every((s) => s === 'old')) tally.old++;
        else if (states.every((s) => s === 'new')) tally.new++;
        else tally.partial++;
        const said = `kill ${i}: ${FILES[agent]!.map((f, k) => `${f} ${states[k]}`).join(', ')}`;
        expect(states, said).not.toContain('torn');
        expect(states.every((s) => s === 'old') || states.every((s) => s === 'new'), said).toBe(true);
        const again = spawnSync(process.execPath, [REIN_BIN, 'setup', agent, '--yes'], { env, encoding: 'utf8' });
        expect(again.status, again.stderr).toBe(0);
        for (const f of FILES[agent]!) expect(read(f), `${f} after setup again`).toBe(after[f]);
      }
      console.log(`${agent}: ${KILLS} kills: every file old ${tally.old}, every file new ${tally.new}, some files old and some new ${tally.partial} (${tally.mixedAtKill} before recovery), a torn file ${tally.torn}; setup again completed all ${KILLS}`);
      figure(`rein setup ${agent} under kill -9: ${KILLS}/${KILLS} left the config all old or all new after recovery (all old ${tally.old}, all new ${tally.new}, files apart ${tally.partial}; apart before recovery ${tally.mixedAtKill}), torn 0; setup again completed ${KILLS}/${KILLS}`);
    });
  }
});
