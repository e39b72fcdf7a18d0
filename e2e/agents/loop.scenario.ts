// The whole loop with a real client on Rein's own model server, offline in a network namespace: Claude Code on
// `rein serve` + `rein serve-model` (no proxy.upstream) with the small pretrained LM, several turns rated with
// one-shot `claude -p "/rl good"` / `"/rl bad"`, `rein train`, and the next turn captured under the new version.
// Claude Code's own prompt (system prompt, tool schemas) runs to thousands of the small LM's tokens, longer than the
// training sequence limit, and such a turn trains as text (KTO); the turns here are made the way a user of a small
// local model would: `--system-prompt` replaces Claude Code's system prompt and `--tools ""` sends no tool schemas,
// so the exact context the model server consumed fits and the ratings train on-policy (MIS-PO).
// Prints facts as JSON; loop.agents.ts asserts.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { cleanup, freePort, REIN_BIN, ROOT, rein, run, sandbox, startRein, until } from './harness.ts';

const s = sandbox('loop');
const port = await freePort();
const proxyPort = await freePort();
mkdirSync(path.join(s.home, '.claude'), { recursive: true });
s.env = { ...s.env, DISABLE_TELEMETRY: '1', DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_ERROR_REPORTING: '1' };

const out: Record<string, unknown> = {};
// A short round: the balanced preset's 32 steps of 8 turns take about 3 minutes on two cores here, and on six
// ratings its KL to the base (0.31 nats/token) is over the budget its gate allows (0.19), so nothing would be served.
// `rein presets` lists the fields a user may override this way.
rein(s, ['settings', 'set', `model.active=${path.join(ROOT, 'resources/small-lm')}`, `proxy.port=${proxyPort}`, 'training.auto=false', 'training.preset=custom', 'training.custom={"steps":4}']);
const server = await startRein(s, port);
let proxy: ChildProcess | null = null;
let proxyLog = '';
// What a user of a small local model passes: Claude Code's own system prompt and tool schemas replaced by one line
// and none, so the context the model server consumes (and training is conditioned on) fits the training limit.
const SMALL = ['--system-prompt', 'You are a helpful assistant. Answer in one short line.', '--tools', ''];
const claude = async (prompt: string, extra: string[] = []) => {
  const t = performance.now();
  const r = await run('claude', ['-p', prompt, '--output-format', 'json', ...extra], { env: s.env, cwd: s.work, timeoutS: 180 });
  let parsed: { result?: string; is_error?: boolean } = {};
  try {
    parsed = JSON.parse(r.stdout) as typeof parsed;
  } catch {
    parsed = { result: r.stdout.slice(-500) };
  }
  return { code: r.code, result: parsed.result, isError: parsed.is_error, s: (performance.now() - t) / 1000, stderr: r.stderr.slice(-1500) };
};
const turns = async () => {
  const page = await server.api<{ items: { id: number }[] }>('listTurns', { source: 'claude-code', limit: 100, offset: 0 });
  const all: Record<string, unknown>[] = [];
  for (const t of page.items.reverse()) all.push(await server.api<Record<string, unknown>>('getTurn', { turnId: t.id }));
  return all.map((t) => ({ ...t, tokens: Array.isArray(t.tokens) ? t.tokens.length : null, logprobs: Array.isArray(t.logprobs) ? t.logprobs.length : null, context: undefined }));
};
const settle = () => new Promise((r) => setTimeout(r, 1500));
try {
  out.setup = rein(s, ['setup', 'claude', '--yes', '--local-model']);
  proxy = spawn(process.execPath, [REIN_BIN, 'serve-model'], { env: s.env, cwd: s.work, stdio: ['ignore', 'pipe', 'pipe'] });
  proxy.stdout!.on('data', (d: Buffer) => (proxyLog += d.toString('utf8')));
  proxy.stderr!.on('data', (d: Buffer) => (proxyLog += d.toString('utf8')));
  await until('the proxy to answer', async () => (await fetch(`http://127.0.0.1:${proxyPort}/v1/models`, { headers: { authorization: `Bearer ${server.token}` } }).catch(() => null))?.ok, 120_000);

  // 1-2. Six one-shot turns, each rated from the same directory with a one-shot /rl. The small LM's replies are mostly
  // noise, and most are rated Bad; two Good give the round its contrast.
  const plan: [string, 'good' | 'bad'][] = [
    ['Say hello.', 'good'],
    ['Name a fruit.', 'bad'],
    ['What is two plus two?', 'bad'],
    ['Name a colour.', 'good'],
    ['Say goodbye.', 'bad'],
    ['Name an animal.', 'bad'],
  ];
  let t = performance.now();
  const asked: unknown[] = [];
  const rated: unknown[] = [];
  for (const [prompt, rating] of plan) {
    asked.push(await claude(prompt, SMALL));
    // The proxy stores the turn once the agent has been quiet a moment.
    await settle();
    rated.push({ asked: rating, ...(await claude(`/rl ${rating}`)) });
  }
  out.asked = asked;
  out.rated = rated;
  out.turnsS = (performance.now() - t) / 1000;
  out.turns = await turns();

  // 3. A round, as `rein train` starts one.
  t = performance.now();
  const { runId } = rein<{ runId: number }>(s, ['train']);
  out.run = await until(
    'the training round to finish',
    async () => (await server.api<{ id: number; status: string }[]>('listRuns', { limit: 5 })).find((r) => r.id === runId && !['queued', 'running'].includes(r.status)),
    600_000,
    1000,
  );
  out.trainS = (performance.now() - t) / 1000;
  out.adapters = await server.api('listAdapters', {});
  out.status = rein(s, ['status']);

  // 4-5. The next turn, served by the running `rein serve-model` with whatever version is active now.
  const before = ((out.turns as unknown[]) ?? []).length;
  out.after = await claude('Say hello again.', SMALL);
  await settle();
  out.turnsAfter = (await turns()).slice(before);
} finally {
  out.proxyLog = proxyLog.slice(-6000);
  out.serverLog = server.log().slice(-3000);
  if (proxy !== null && proxy.exitCode === null) proxy.kill('SIGTERM');
  await server.stop().catch(() => {});
  cleanup(s);
}
const samples = ((out.run as { metrics?: { samples?: { mispo?: number; kto?: number; offPolicy?: { why: string }[] } } } | undefined)?.metrics?.samples) ?? {};
console.error(`loop: round trained ${samples.mispo} on-policy (MIS-PO), ${samples.kto} as text (KTO); reasons: ${JSON.stringify(samples.offPolicy ?? [])}; round ${Number(out.trainS).toFixed(1)} s`);
process.stdout.write(JSON.stringify(out) + '\n');
