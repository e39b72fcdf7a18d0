// Claude Code and Codex on the local model, inside a network namespace: `rein serve` (hooks, /rl) and `rein
// serve-model` (the capture proxy) with proxy.upstream at a scripted local model server (fake-local-model.ts), `rein
// setup claude|codex --local-model --yes`, a Bash tool turn in each, `/rl good` resuming the same session, then
// `rein uninstall … --yes`. Prints facts as JSON; local-model.agents.ts asserts.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startLocalModel } from './fake-local-model.ts';
import { TOOL_MARKER } from './fake-models.ts';
import { cleanup, freePort, OFFLINE_CLIENT_ENV, ratingsOf, rein, REIN_BIN, run, sandbox, saveArtifact, startRein, until } from './harness.ts';

const s = sandbox('local-model');
const model = await startLocalModel();
const port = await freePort();
const proxyPort = await freePort();
const codexHome = path.join(s.home, '.codex');
mkdirSync(codexHome, { recursive: true });
// The user's own Codex config (no outside lookups: notes/REAL_CLIENTS.md); uninstall must give these bytes back.
const userCodexConfig = ['# my codex config', 'model = "gpt-5"', '', '[analytics]', 'enabled = false', '', '[features]', 'plugins = false', ''].join('\n');
writeFileSync(path.join(codexHome, 'config.toml'), userCodexConfig);
const claudeSettings = path.join(s.home, '.claude', 'settings.json');
mkdirSync(path.dirname(claudeSettings), { recursive: true });
const userClaudeSettings = JSON.stringify({ theme: 'dark' }, null, 2) + '\n';
writeFileSync(claudeSettings, userClaudeSettings);
s.env = { ...s.env, CODEX_HOME: codexHome, ...OFFLINE_CLIENT_ENV };

const out: Record<string, unknown> = {};
rein(s, ['settings', 'set', `proxy.upstream=${model.url}/v1`, 'proxy.baseModelName=rein-local', `proxy.port=${proxyPort}`]);
const server = await startRein(s, port);
const proxy: ChildProcess = spawn(process.execPath, [REIN_BIN, 'serve-model'], { env: s.env, cwd: s.work, stdio: ['ignore', 'pipe', 'pipe'] });
let proxyLog = '';
proxy.stdout!.on('data', (d: Buffer) => (proxyLog += d.toString('utf8')));
proxy.stderr!.on('data', (d: Buffer) => (proxyLog += d.toString('utf8')));
const chats = () => model.chats().length;
const result = (r: { stdout: string }) => {
  try {
    return JSON.parse(r.stdout) as { result?: string; session_id?: string };
  } catch {
    return { result: r.stdout };
  }
};
/** A stored turn with its tokens (getTurn), of one source. */
const turns = async (source: string) => {
  const page = await server.api<{ items: { id: number }[] }>('listTurns', { source, limit: 100, offset: 0 });
  const all: Record<string, unknown>[] = [];
  for (const t of page.items.reverse()) all.push(await server.api<Record<string, unknown>>('getTurn', { turnId: t.id }));
  return all;
};
try {
  await until('the proxy to answer', async () => (await fetch(`http://127.0.0.1:${proxyPort}/v1/models`, { headers: { authorization: `Bearer ${server.token}` } }).catch(() => null))?.ok, 60_000);

  // Claude Code.
  out.claudeSetup = rein(s, ['setup', 'claude', '--yes', '--local-model']);
  const t1 = await run('claude', ['-p', `${TOOL_MARKER} and tell me what it printed`, '--output-format', 'json', '--allowedTools', 'Bash(echo:*)'], { env: s.env, cwd: s.work, timeoutS: 120 });
  const r1 = result(t1);
  out.claudeTurn = { code: t1.code, result: r1.result, session: r1.session_id, stderr: t1.stderr.slice(-2000) };
  await new Promise((r) => setTimeout(r, 1500));
  out.claudeTurns = await turns('claude-code');
  const before = chats();
  const good = await run('claude', ['-p', '/rl good', '--resume', r1.session_id ?? '', '--output-format', 'json'], { env: s.env, cwd: s.work, timeoutS: 60 });
  out.claudeRlGood = { code: good.code, result: result(good).result, modelRequests: chats() - before };
  out.claudeRatings = await ratingsOf(server, 'claude-code');
  out.claudeUninstall = rein(s, ['uninstall', 'claude', '--yes']);
  out.claudeRestored = readFileSync(claudeSettings, 'utf8') === userClaudeSettings;

  // Codex.
  const setup = await run(process.execPath, [REIN_BIN, '--json', 'setup', 'codex', '--yes', '--local-model'], { env: s.env, cwd: s.work, timeoutS: 60 });
  out.codexSetup = { code: setup.code, stderr: setup.stderr.slice(-2000) };
  out.codexConfig = readFileSync(path.join(codexHome, 'config.toml'), 'utf8').replace(server.token, '<token>');
  const c1 = await run('codex', ['exec', '--skip-git-repo-check', '--sandbox', 'danger-full-access', `${TOOL_MARKER} and tell me what it printed`], { env: s.env, cwd: s.work, timeoutS: 120 });
  out.codexTurn = { code: c1.code, stdout: c1.stdout.slice(-2000), stderr: c1.stderr.slice(-3000) };
  await new Promise((r) => setTimeout(r, 1500));
  out.codexTurns = await turns('codex');
  const beforeC = chats();
  const goodC = await run('codex', ['exec', '--skip-git-repo-check', 'resume', '--last', '/rl good'], { env: s.env, cwd: s.work, timeoutS: 60 });
  out.codexRlGood = { code: goodC.code, stdout: goodC.stdout.slice(-1000), stderr: goodC.stderr.slice(-2000), modelRequests: chats() - beforeC };
  out.codexRatings = await ratingsOf(server, 'codex');
  out.codexUninstall = rein(s, ['uninstall', 'codex', '--yes']);
  out.codexRestored = readFileSync(path.join(codexHome, 'config.toml'), 'utf8') === userCodexConfig;

  saveArtifact('local-model-requests.json', model.requests.map((r) => ({ url: r.url, body: r.body })));
} finally {
  out.proxyLog = proxyLog.slice(-8000);
  out.serverLog = server.log().slice(-3000);
  if (proxy.exitCode === null) proxy.kill('SIGTERM');
  await server.stop().catch(() => {});
  await model.close();
  cleanup(s);
}
process.stdout.write(JSON.stringify(out) + '\n');
