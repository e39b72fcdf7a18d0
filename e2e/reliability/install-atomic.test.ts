// Issue #21 item 12: `rein setup claude` refuses a settings.json its owner made read-only, and an install whose
// second file fails leaves the first as it was, with no install record.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { claudeIntegration } from '../../src-main/node/install/claude.ts';
import { install, statePath, type InstallEnv } from '../../src-main/node/install/installer.ts';
import { installEnv, QUIET } from '../../src-main/node/install/test-utils/install-env.ts';

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
