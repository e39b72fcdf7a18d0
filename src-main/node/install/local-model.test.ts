// `rein setup claude|codex --local-model`: the agent's model goes to Rein's proxy, the hooks keep only /rl (the
// proxy stores each turn, once), and uninstall gives the user's files back byte for byte, or, when the user edited
// them since, takes out only what Rein wrote.
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { claudeIntegration } from './claude.ts';
import { codexIntegration } from './codex.ts';
import { checkToml, findTopLevelKey } from './codex-toml.ts';
import { install, uninstall } from './installer.ts';
import type { InstallEnv } from './installer.ts';
import { installEnv, QUIET, TEST_TOKEN } from './test-utils/install-env.ts';

const FIX = path.join(import.meta.dirname, '../integrations/fixtures');
const LOCAL = { proxyPort: 7434, model: 'qwen-local' };

function sandbox(extra: Record<string, string> = {}): InstallEnv {
  const dir = mkdtempSync(path.join(tmpdir(), 'rein-local-'));
  const home = path.join(dir, 'home');
  mkdirSync(home);
  const env = installEnv(home, path.join(dir, 'rein'), extra);
  return { ...env, options: { localModel: LOCAL } };
}

describe('claude --local-model', () => {
  it("writes the proxy's env and /rl hooks only, and uninstall restores the bytes and the mode", async () => {
    const env = sandbox();
    const settings = path.join(env.userHome, '.claude/settings.json');
    mkdirSync(path.dirname(settings), { recursive: true });
    cpSync(path.join(FIX, 'claude/settings.json'), settings);
    chmodSync(settings, 0o644);
    const original = readFileSync(settings);
    await install(claudeIntegration, env, QUIET);
    const s = JSON.parse(readFileSync(settings, 'utf8'));
    expect(s.env).toMatchObject({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:7434', ANTHROPIC_AUTH_TOKEN: TEST_TOKEN, ANTHROPIC_MODEL: 'qwen-local', ANTHROPIC_SMALL_FAST_MODEL: 'qwen-local' });
    const ours = (ev: string) => (s.hooks[ev] ?? []).some((g: { hooks: { url?: string }[] }) => g.hooks.some((h) => h.url?.endsWith('/hooks/claude')));
    // No claude on PATH: the events every version with HTTP hooks knows (UserPromptExpansion needs 2.1.101).
    expect(ours('UserPromptSubmit')).toBe(true);
    expect(['Stop', 'SubagentStop'].map(ours)).toEqual([false, false]);
    expect(statSync(settings).mode & 0o777).toBe(0o600);
    expect((await install(claudeIntegration, env, QUIET)).changes).toEqual([]);
    uninstall(claudeIntegration, env, { dryRun: false });
    expect(readFileSync(settings).equals(original)).toBe(true);
    expect(statSync(settings).mode & 0o777).toBe(0o644);
  });

  it('uninstall after the user edited settings takes out only the env and hooks Rein wrote', async () => {
    const env = sandbox();
    const settings = path.join(env.userHome, '.claude/settings.json');
    mkdirSync(path.dirname(settings), { recursive: true });
    writeFileSync(settings, JSON.stringify({ env: { MY_VAR: '1' }, theme: 'dark' }, null, 2) + '\n');
    await install(claudeIntegration, env, QUIET);
    const s = JSON.parse(readFileSync(settings, 'utf8'));
    s.theme = 'light';
    writeFileSync(settings, JSON.stringify(s, null, 2) + '\n');
    uninstall(claudeIntegration, env, { dryRun: false });
    expect(JSON.parse(readFileSync(settings, 'utf8'))).toEqual({ env: { MY_VAR: '1' }, theme: 'light' });
  });
});

describe('codex --local-model', () => {
  const userConfig = ['# mine', 'model = "gpt-5"', 'model_provider = "openai"', '', '[analytics]', 'enabled = false', ''].join('\n');

  it('points model_provider at a responses provider on the proxy, with /rl hooks only; uninstall restores the bytes', async () => {
    const env = sandbox({ CODEX_HOME: '' });
    const codexHome = path.join(env.userHome, '.codex');
    mkdirSync(codexHome, { recursive: true });
    const configPath = path.join(codexHome, 'config.toml');
    writeFileSync(configPath, userConfig, { mode: 0o644 });
    await install(codexIntegration, env, QUIET);
    const config = readFileSync(configPath, 'utf8');
    checkToml(config);
    expect(findTopLevelKey(config, 'model_provider')?.value).toBe('"rein"');
    expect(findTopLevelKey(config, 'model')?.value).toBe('"qwen-local"');
    expect(findTopLevelKey(config, 'notify')).toBeNull();
    expect(config).toContain(['[model_providers.rein]', 'name = "Rein (local model)"', 'base_url = "http://127.0.0.1:7434/v1"', 'wire_api = "responses"', `experimental_bearer_token = "${TEST_TOKEN}"`].join('\n'));
    expect(config).toContain('[analytics]\nenabled = false');
    expect(statSync(configPath).mode & 0o777).toBe(0o600);
    const hooks = JSON.parse(readFileSync(path.join(codexHome, 'hooks.json'), 'utf8'));
    expect(Object.keys(hooks.hooks)).toEqual(['UserPromptSubmit']);
    uninstall(codexIntegration, env, { dryRun: false });
    expect(readFileSync(configPath, 'utf8')).toBe(userConfig);
    expect(statSync(configPath).mode & 0o777).toBe(0o644);
  });

  it("uninstall after the user edited config.toml puts back their model and provider and removes Rein's table", async () => {
    const env = sandbox({ CODEX_HOME: '' });
    const codexHome = path.join(env.userHome, '.codex');
    mkdirSync(codexHome, { recursive: true });
    const configPath = path.join(codexHome, 'config.toml');
    writeFileSync(configPath, userConfig);
    await install(codexIntegration, env, QUIET);
    writeFileSync(configPath, readFileSync(configPath, 'utf8') + '\n[tui]\nanimations = false\n');
    uninstall(codexIntegration, env, { dryRun: false });
    const config = readFileSync(configPath, 'utf8');
    checkToml(config);
    expect(findTopLevelKey(config, 'model')?.value).toBe('"gpt-5"');
    expect(findTopLevelKey(config, 'model_provider')?.value).toBe('"openai"');
    expect(config).not.toContain('model_providers.rein');
    expect(config).not.toContain(TEST_TOKEN);
    expect(config).toContain('[tui]\nanimations = false');
  });
});
