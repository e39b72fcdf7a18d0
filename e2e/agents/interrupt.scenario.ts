// Interrupting the real Claude Code and Codex mid-answer, inside a network namespace: `rein serve` and `rein
// serve-model` (the capture proxy) with proxy.upstream at the scripted local model server, `rein setup claude|codex
// --local-model --yes`, then a prompt whose answer streams slowly (fake-local-model.ts SLOW_MARKER). Once part of the
// answer has reached the client, the client gets Ctrl-C (SIGINT), as a person stops an answer they don't want. The
// proxy sees the client close the stream before the answer's end. Prints facts as JSON; interrupt.agents.ts asserts.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SLOW_MARKER, startLocalModel } from './fake-local-model.ts';
import { cleanup, freePort, OFFLINE_CLIENT_ENV, rein, REIN_BIN, run, sandbox, startRein, until } from './harness.ts';

const s = sandbox('interrupt');
const model = await startLocalModel();
const port = await freePort();
const proxyPort = await freePort();
const codexHome = path.join(s.home, '.codex');
mkdirSync(codexHome, { recursive: true });
writeFileSync(path.join(codexHome, 'config.toml'), ['[analytics]', 'enabled = false', '', '[features]', 'plugins = false', ''].join('\n'));
s.env = { ...s.env, CODEX_HOME: codexHome, ...OFFLINE_CLIENT_ENV };

/** Pieces of this client's slow answer written before it is interrupted: enough that some reached it, far from the end. */
const BEFORE_INTERRUPT = 15;

/**
 * Runs a client on the slow prompt, sends it SIGINT once BEFORE_INTERRUPT pieces of the answer have been written, and
 * waits for it to exit. SIGKILL after 60 s in all, whatever happens.
 */
async function interrupted(cmd: string, args: string[]): Promise<Record<string, unknown>> {
  const t = performance.now();
  const child = spawn(cmd, args, { env: s.env, cwd: s.work, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  let sentAtInterrupt: number | null = null;
  const before = model.slow()?.started ?? 0;
  try {
    await until('the slow answer to start streaming', () => {
      const a = model.slow();
      return a !== null && a.started > before && a.sent >= BEFORE_INTERRUPT;
    }, 45_000, 20);
    sentAtInterrupt = model.slow()!.sent;
    child.kill('SIGINT');
  } catch (e) {
    stderr += `\n[scenario] ${(e as Error).message}`;
  }
  const end = await exited;
  clearTimeout(killer);
  return { ...end, sentAtInterrupt, slow: model.slow(), stdout: stdout.slice(-1500), stderr: stderr.slice(-2500), ms: Math.round(performance.now() - t) };
}

/** The newest stored turn of `source` in full, with its signals. */
async function newest(server: Awaited<ReturnType<typeof startRein>>, source: string): Promise<Record<string, unknown> | null> {
  const page = await server.api<{ items: { id: number }[] }>('listTurns', { source, limit: 10, offset: 0 });
  const id = page.items[0]?.id;
  if (id === undefined) return null;
  const turn = await server.api<Record<string, unknown>>('getTurn', { turnId: id });
  const signals = await server.api<Record<string, unknown>>('turnSignals', { turnId: id });
  return { turn, signals };
}

const out: Record<string, unknown> = { slowPieces: null };
rein(s, ['settings', 'set', `proxy.upstream=${model.url}/v1`, 'proxy.baseModelName=rein-local', `proxy.port=${proxyPort}`]);
const server = await startRein(s, port);
const proxy: ChildProcess = spawn(process.execPath, [REIN_BIN, 'serve-model'], { env: s.env, cwd: s.work, stdio: ['ignore', 'pipe', 'pipe'] });
let proxyLog = '';
proxy.stdout!.on('data', (d: Buffer) => (proxyLog += d.toString('utf8')));
proxy.stderr!.on('data', (d: Buffer) => (proxyLog += d.toString('utf8')));
try {
  await until('the proxy to answer', async () => (await fetch(`http://127.0.0.1:${proxyPort}/v1/models`, { headers: { authorization: `Bearer ${server.token}` } }).catch(() => null))?.ok, 60_000);

  out.claudeSetup = rein(s, ['setup', 'claude', '--yes', '--local-model']);
  out.claude = await interrupted('claude', ['-p', SLOW_MARKER, '--output-format', 'stream-json', '--verbose']);
  // The proxy stores the cut answer once the upstream side is closed too.
  out.claudeTurn = await until('the interrupted Claude turn to be stored', () => newest(server, 'claude-code'), 20_000, 250);

  const setup = await run(process.execPath, [REIN_BIN, '--json', 'setup', 'codex', '--yes', '--local-model'], { env: s.env, cwd: s.work, timeoutS: 60 });
  out.codexSetup = { code: setup.code, stderr: setup.stderr.slice(-2000) };
  out.codex = await interrupted('codex', ['exec', '--skip-git-repo-check', SLOW_MARKER]);
  out.codexTurn = await until('the interrupted Codex turn to be stored', () => newest(server, 'codex'), 20_000, 250);
  out.slowPieces = model.slow()?.total ?? null;
} catch (e) {
  out.error = (e as Error).stack ?? String(e);
} finally {
  out.proxyLog = proxyLog.slice(-6000);
  out.serverLog = server.log().slice(-3000);
  if (proxy.exitCode === null) proxy.kill('SIGTERM');
  await server.stop().catch(() => {});
  await model.close();
  cleanup(s);
}
process.stdout.write(JSON.stringify(out) + '\n');
