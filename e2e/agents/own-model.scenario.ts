// Claude Code and Codex on Rein's own model server, inside a network namespace: `rein serve` plus `rein serve-model`
// with no proxy.upstream, so the proxy forwards to Rein's llama.cpp server running the small pretrained LM
// (resources/small-lm). One text-only turn in each agent. The agents' prompts (system prompt, tool list, reminders)
// run to tens of thousands of the small LM's tokens, so serving.contextSize is raised the way a user raises Ollama's
// num_ctx; the small LM was trained on 512 positions, so its words past that are noise, but the turn must complete
// and be stored on-policy. Prints facts as JSON; own-model.agents.ts asserts.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { cleanup, freePort, OFFLINE_CLIENT_ENV, rein, REIN_BIN, ROOT, run, sandbox, startRein, until } from './harness.ts';

const s = sandbox('own-model');
const port = await freePort();
const proxyPort = await freePort();
const codexHome = path.join(s.home, '.codex');
mkdirSync(codexHome, { recursive: true });
mkdirSync(path.join(s.home, '.claude'), { recursive: true });
s.env = { ...s.env, CODEX_HOME: codexHome, ...OFFLINE_CLIENT_ENV };

const out: Record<string, unknown> = {};
rein(s, ['settings', 'set', `model.active=${path.join(ROOT, 'resources/small-lm')}`, 'serving.contextSize=131072', `proxy.port=${proxyPort}`, 'training.auto=false']);
const server = await startRein(s, port);
const proxy: ChildProcess = spawn(process.execPath, [REIN_BIN, 'serve-model'], { env: s.env, cwd: s.work, stdio: ['ignore', 'pipe', 'pipe'] });
let proxyLog = '';
proxy.stdout!.on('data', (d: Buffer) => (proxyLog += d.toString('utf8')));
proxy.stderr!.on('data', (d: Buffer) => (proxyLog += d.toString('utf8')));
const turns = async (source: string) => {
  const page = await server.api<{ items: { id: number }[] }>('listTurns', { source, limit: 100, offset: 0 });
  const all: Record<string, unknown>[] = [];
  for (const t of page.items.reverse()) all.push(await server.api<Record<string, unknown>>('getTurn', { turnId: t.id }));
  return all.map((t) => ({ ...t, tokens: Array.isArray(t.tokens) ? t.tokens.length : null, logprobs: Array.isArray(t.logprobs) ? t.logprobs.length : null, context: undefined }));
};
try {
  await until('the proxy to answer', async () => (await fetch(`http://127.0.0.1:${proxyPort}/v1/models`, { headers: { authorization: `Bearer ${server.token}` } }).catch(() => null))?.ok, 120_000);

  out.claudeSetup = rein(s, ['setup', 'claude', '--yes', '--local-model']);
  let t = performance.now();
  const c = await run('claude', ['-p', 'Say hello in one line.', '--output-format', 'json'], { env: s.env, cwd: s.work, timeoutS: 240 });
  let parsed: { result?: string; is_error?: boolean } = {};
  try {
    parsed = JSON.parse(c.stdout) as typeof parsed;
  } catch {
    parsed = { result: c.stdout.slice(-500) };
  }
  out.claudeTurn = { code: c.code, result: parsed.result, isError: parsed.is_error, s: (performance.now() - t) / 1000, stderr: c.stderr.slice(-2000) };
  await new Promise((r) => setTimeout(r, 1500));
  out.claudeTurns = await turns('claude-code');
  rein(s, ['uninstall', 'claude', '--yes']);

  const setup = await run(process.execPath, [REIN_BIN, '--json', 'setup', 'codex', '--yes', '--local-model'], { env: s.env, cwd: s.work, timeoutS: 60 });
  out.codexSetup = { code: setup.code, stderr: setup.stderr.slice(-2000) };
  t = performance.now();
  const x = await run('codex', ['exec', '--skip-git-repo-check', 'Say hello in one line.'], { env: s.env, cwd: s.work, timeoutS: 240 });
  out.codexTurn = { code: x.code, stdout: x.stdout.slice(-1500), stderr: x.stderr.slice(-3000), s: (performance.now() - t) / 1000 };
  await new Promise((r) => setTimeout(r, 1500));
  out.codexTurns = await turns('codex');
  rein(s, ['uninstall', 'codex', '--yes']);
} finally {
  out.proxyLog = proxyLog.slice(-6000);
  out.serverLog = server.log().slice(-3000);
  if (proxy.exitCode === null) proxy.kill('SIGTERM');
  await server.stop().catch(() => {});
  cleanup(s);
}
process.stdout.write(JSON.stringify(out) + '\n');
