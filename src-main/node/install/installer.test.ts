import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { claudeIntegration, TOKEN_ENV } from './claude.ts';
import { codexIntegration } from './codex.ts';
import { readChain } from '../integrations/codex/notify.ts';
import { findTopLevelKey, parseStringArray, removeHookTrust, setHookTrust, setTopLevelKey } from './codex-toml.ts';
import { openclawIntegration } from './openclaw.ts';
import { install, uninstall } from './installer.ts';
import type { InstallEnv } from './installer.ts';
import { installEnv, QUIET, TEST_TOKEN } from './test-utils/install-env.ts';

const FIX = path.join(import.meta.dirname, '../integrations/fixtures');

function sandbox(extra: Record<string, string> = {}): InstallEnv {
  const dir = mkdtempSync(path.join(tmpdir(), 'rein-inst-'));
  const home = path.join(dir, 'home');
  mkdirSync(home);
  return installEnv(home, path.join(dir, 'rein'), extra);
}

/** A `claude` on PATH that answers `claude --version` as Claude Code prints it ("2.1.101 (Claude Code)"). */
function withClaude(env: InstallEnv, version: string): InstallEnv {
  const bin = path.join(env.userHome, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(path.join(bin, 'claude'), `#!/bin/sh\necho '${version} (Claude Code)'\n`, { mode: 0o755 });
  return { ...env, env: { ...env.env, PATH: bin } };
}
const bytes = (f: string) => readFileSync(f);

describe('Claude installer', () => {
  it('install → install → uninstall keeps user hooks and restores the file byte for byte', async () => {
    const env = withClaude(sandbox(), '2.1.101');
    const settings = path.join(env.userHome, '.claude/settings.json');
    mkdirSync(path.dirname(settings), { recursive: true });
    cpSync(path.join(FIX, 'claude/settings.json'), settings);
    chmodSync(settings, 0o640);
    const original = bytes(settings);
    const first = await install(claudeIntegration, env, QUIET);
    expect(first.changes.map((c) => path.basename(c.path))).toEqual(['settings.json', 'rl.md']);
    const s = JSON.parse(readFileSync(settings, 'utf8'));
    expect(s.model).toBe('sonnet');
    expect(s.hooks.PreToolUse).toHaveLength(1);
    expect(s.hooks.Stop[0].hooks[0].command).toBe('say done');
    for (const ev of ['Stop', 'SubagentStop', 'UserPromptSubmit', 'UserPromptExpansion']) {
      const ours = s.hooks[ev].at(-1).hooks[0];
      expect(ours).toEqual({
        type: 'http',
        url: 'http://127.0.0.1:7433/hooks/claude',
        headers: { Authorization: `Bearer ${TEST_TOKEN}` },
        timeout: 10,
      });
    }
    // The literal token works with no shell-profile edit; the file holding it is 0600 until uninstall.
    expect(statSync(settings).mode & 0o777).toBe(0o600);
    const rl = readFileSync(path.join(env.userHome, '.claude/commands/rl.md'), 'utf8');
    expect(rl).toMatch(/^---\ndescription: .+\nargument-hint: .+\n---\n/);
    const again = await install(claudeIntegration, env, QUIET);
    expect(again.changes).toEqual([]);
    uninstall(claudeIntegration, env, { dryRun: false });
    expect(bytes(settings).equals(original)).toBe(true);
    expect(statSync(settings).mode & 0o777).toBe(0o640);
    expect(() => statSync(path.join(env.userHome, '.claude/commands/rl.md'))).toThrow();
  });

  it('reads claude --version: refuses one without HTTP hooks, and leaves out events an older one would choke on', async () => {
    // Below 2.1.63 there are no HTTP hooks: refused, naming the version and the fix, and nothing is written.
    const old = withClaude(sandbox(), '2.1.50');
    await expect(install(claudeIntegration, old, QUIET)).rejects.toThrow(/Claude Code 2\.1\.50 has no HTTP hooks \(they need 2\.1\.63 or newer\): update it with `claude update`/);
    expect(() => statSync(path.join(old.userHome, '.claude/settings.json'))).toThrow();
    // Before 2.1.101 an unknown event name made Claude ignore the whole settings.json: UserPromptExpansion stays out.
    const mid = withClaude(sandbox(), '2.1.80');
    await install(claudeIntegration, mid, QUIET);
    expect(Object.keys(JSON.parse(readFileSync(path.join(mid.userHome, '.claude/settings.json'), 'utf8')).hooks)).toEqual(['Stop', 'SubagentStop', 'UserPromptSubmit']);
    const now = withClaude(sandbox(), '2.1.101');
    await install(claudeIntegration, now, QUIET);
    expect(Object.keys(JSON.parse(readFileSync(path.join(now.userHome, '.claude/settings.json'), 'utf8')).hooks)).toEqual(['Stop', 'SubagentStop', 'UserPromptSubmit', 'UserPromptExpansion']);
    // No claude on PATH (only its config directory): the events every version with HTTP hooks knows.
    const none = sandbox();
    await install(claudeIntegration, none, QUIET);
    expect(Object.keys(JSON.parse(readFileSync(path.join(none.userHome, '.claude/settings.json'), 'utf8')).hooks)).toEqual(['Stop', 'SubagentStop', 'UserPromptSubmit']);
  });

  it('with --token-from-env the header reads $REIN_TOKEN and the token stays out of the file', async () => {
    const env = { ...sandbox(), options: { claudeTokenFromEnv: true } };
    await install(claudeIntegration, env, QUIET);
    const settings = path.join(env.userHome, '.claude/settings.json');
    const s = JSON.parse(readFileSync(settings, 'utf8'));
    expect(s.hooks.Stop.at(-1).hooks[0]).toEqual({
      type: 'http',
      url: 'http://127.0.0.1:7433/hooks/claude',
      headers: { Authorization: `Bearer $${TOKEN_ENV}` },
      allowedEnvVars: [TOKEN_ENV],
      timeout: 10,
    });
    expect(readFileSync(settings, 'utf8')).not.toContain(TEST_TOKEN);
  });

  it('after the user edits settings, uninstall removes only our entries', async () => {
    const env = sandbox();
    const settings = path.join(env.userHome, '.claude/settings.json');
    mkdirSync(path.dirname(settings), { recursive: true });
    cpSync(path.join(FIX, 'claude/settings.json'), settings);
    await install(claudeIntegration, env, QUIET);
    const s = JSON.parse(readFileSync(settings, 'utf8'));
    s.theme = 'dark';
    writeFileSync(settings, JSON.stringify(s, null, 2));
    uninstall(claudeIntegration, env, { dryRun: false });
    const after = JSON.parse(readFileSync(settings, 'utf8'));
    expect(after.theme).toBe('dark');
    expect(after.hooks).toEqual(JSON.parse(readFileSync(path.join(FIX, 'claude/settings.json'), 'utf8')).hooks);
  });

  it('refuses to write through a symlink and to parse a broken file, changing nothing', async () => {
    const env = sandbox();
    const dir = path.join(env.userHome, '.claude');
    mkdirSync(dir, { recursive: true });
    const real = path.join(env.userHome, 'dotfiles-settings.json');
    writeFileSync(real, '{}');
    symlinkSync(real, path.join(dir, 'settings.json'));
    await expect(install(claudeIntegration, env, QUIET)).rejects.toThrow(/symlink/);
    expect(readFileSync(real, 'utf8')).toBe('{}');
    const env2 = sandbox();
    mkdirSync(path.join(env2.userHome, '.claude'), { recursive: true });
    writeFileSync(path.join(env2.userHome, '.claude/settings.json'), '{"hooks": ');
    await expect(install(claudeIntegration, env2, QUIET)).rejects.toThrow(/not valid JSON/);
    expect(readFileSync(path.join(env2.userHome, '.claude/settings.json'), 'utf8')).toBe('{"hooks": ');
  });

  it('dry run writes nothing', async () => {
    const env = sandbox();
    const r = await install(claudeIntegration, env, { dryRun: true, say: () => {} });
    expect(r.changes).toHaveLength(2);
    expect(() => statSync(path.join(env.userHome, '.claude'))).toThrow();
  });
});

describe('Codex installer', () => {
  it('chains the previous notify, keeps comments, and uninstall restores both files byte for byte', async () => {
    const env = sandbox({ CODEX_HOME: '' });
    const dir = path.join(env.userHome, 'codex-home');
    env.env.CODEX_HOME = dir;
    mkdirSync(dir);
    cpSync(path.join(FIX, 'codex/config.toml'), path.join(dir, 'config.toml'));
    cpSync(path.join(FIX, 'codex/hooks.json'), path.join(dir, 'hooks.json'));
    const cfg0 = bytes(path.join(dir, 'config.toml'));
    const hooks0 = bytes(path.join(dir, 'hooks.json'));
    await install(codexIntegration, env, QUIET);
    const cfg = readFileSync(path.join(dir, 'config.toml'), 'utf8');
    expect(readChain(env.rein)).toEqual(['python3', '/home/dev/bin/notify.py']);
    expect(parseStringArray(findTopLevelKey(cfg, 'notify')!.value)).toEqual([...env.hookCommand, 'codex-notify']);
    // Every other line is untouched.
    const otherLines = (t: string) => t.split('\n').filter((l) => !/notify|python3|notify\.py|^\]/.test(l));
    expect(otherLines(cfg)).toEqual(otherLines(cfg0.toString()));
    const hooks = JSON.parse(readFileSync(path.join(dir, 'hooks.json'), 'utf8'));
    expect(hooks.hooks.Stop.map((g: { hooks: { command: string }[] }) => g.hooks[0]!.command)).toEqual([
      '/home/dev/bin/lint-on-stop.sh',
      '/opt/node24/bin/node /opt/rein/src-main/node/integrations/codex/hook-entry.mjs codex-hook',
    ]);
    expect((await install(codexIntegration, env, QUIET)).changes).toEqual([]);
    uninstall(codexIntegration, env, { dryRun: false });
    expect(bytes(path.join(dir, 'config.toml')).equals(cfg0)).toBe(true);
    expect(bytes(path.join(dir, 'hooks.json')).equals(hooks0)).toBe(true);
    expect(readChain(env.rein)).toBeNull();
  });

  it('after user edits, uninstall puts the previous notify back and keeps the edits', async () => {
    const env = sandbox();
    const dir = path.join(env.userHome, '.codex');
    mkdirSync(dir);
    cpSync(path.join(FIX, 'codex/config.toml'), path.join(dir, 'config.toml'));
    await install(codexIntegration, env, QUIET);
    writeFileSync(path.join(dir, 'config.toml'), readFileSync(path.join(dir, 'config.toml'), 'utf8') + '\n[tui]\nnotifications = true\n');
    uninstall(codexIntegration, env, { dryRun: false });
    const cfg = readFileSync(path.join(dir, 'config.toml'), 'utf8');
    expect(parseStringArray(findTopLevelKey(cfg, 'notify')!.value)).toEqual(['python3', '/home/dev/bin/notify.py']);
    expect(cfg).toContain('[tui]\nnotifications = true');
    expect(cfg).toContain('# Codex config — hand written, keep my comments!');
  });
});

describe('config.toml editor', () => {
  it('adds notify above the first table, never inside it', () => {
    const t = '# c\nmodel = "x"\n\n[features]\nhooks = true\n';
    expect(setTopLevelKey(t, 'notify', '["a"]')).toBe('# c\nmodel = "x"\nnotify = ["a"]\n\n[features]\nhooks = true\n');
    expect(setTopLevelKey('', 'notify', '["a"]')).toBe('notify = ["a"]\n');
    expect(setTopLevelKey('model = "x"', 'notify', '["a"]')).toBe('model = "x"\nnotify = ["a"]');
  });

  it('does not take a notify key inside a table for the top-level one', () => {
    const t = 'model = "x"\n[tui]\nnotify = true\n';
    expect(findTopLevelKey(t, 'notify')).toBeNull();
    expect(setTopLevelKey(t, 'notify', '["a"]')).toBe('model = "x"\nnotify = ["a"]\n[tui]\nnotify = true\n');
  });

  it('parses basic and literal strings with escapes, comments and brackets inside strings', () => {
    const t = 'notify = ["a\\"b", \'c:\\\\d\', "e]#f", "\\u00e9"] # tail\n';
    const span = findTopLevelKey(t, 'notify')!;
    expect(parseStringArray(span.value)).toEqual(['a"b', 'c:\\\\d', 'e]#f', 'é']);
    expect(span.comment).toBe('# tail');
  });

  it('refuses what it cannot edit safely', () => {
    expect(() => findTopLevelKey('notify = [\n "a",\n', 'notify')).toThrow(/not valid TOML/);
    expect(() => parseStringArray('"just a string"')).toThrow(/not an array/);
    expect(() => parseStringArray('[1, 2]')).toThrow(/other than strings/);
  });

  it('writes and removes hook trust tables', () => {
    const t = 'model = "x"\n';
    const a = setHookTrust(t, 'user:Stop:0', 'sha256:1');
    expect(a).toBe('model = "x"\n\n[hooks.state."user:Stop:0"]\ntrusted_hash = "sha256:1"\n');
    expect(setHookTrust(a, 'user:Stop:0', 'sha256:2')).toContain('trusted_hash = "sha256:2"');
    expect(removeHookTrust(a, ['user:Stop:0'])).toBe('model = "x"\n');
  });
});

describe('OpenClaw installer', () => {
  it('adds the plugin path and entry with conversation access (0600), and restores byte for byte', async () => {
    const env = sandbox();
    const cfgPath = path.join(env.userHome, 'oc', 'openclaw.json');
    env.env.OPENCLAW_CONFIG_PATH = cfgPath;
    mkdirSync(path.dirname(cfgPath));
    cpSync(path.join(FIX, 'openclaw/openclaw.json'), cfgPath);
    const before = bytes(cfgPath);
    await install(openclawIntegration, env, QUIET);
    const c = JSON.parse(readFileSync(cfgPath, 'utf8'));
    expect(c.plugins.load.paths).toEqual(['/home/dev/my-plugin', env.pluginDir]);
    expect(c.plugins.entries['my-plugin']).toEqual({ enabled: true });
    expect(c.plugins.entries.rein).toEqual({
      enabled: true,
      hooks: { allowConversationAccess: true },
      config: { captureUrl: 'http://127.0.0.1:7433', secret: TEST_TOKEN },
    });
    expect(statSync(cfgPath).mode & 0o777).toBe(0o600);
    expect((await install(openclawIntegration, env, QUIET)).changes).toEqual([]);
    uninstall(openclawIntegration, env, { dryRun: false });
    expect(bytes(cfgPath).equals(before)).toBe(true);
  });
});
