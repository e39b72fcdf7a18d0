// The agent-side cost of capture: what an agent waits for.
// - Claude Code: one `type:"http"` Stop hook POST round trip to a running capture server (real core, SQLite).
//   Reference: GET /api/health on the same server (the HTTP floor, no store write).
// - Codex: the whole `node …/hook-entry.mjs codex-notify '<json>'` process, which Codex starts per turn.
//   Reference: a bare `node -e 0` start of the same Node binary.
// Targets (issue 6): Claude hook p50 < 20 ms, Codex notify p50 < 80 ms. Run: node bench/hooks.ts
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { composeCore } from '../src-main/node/compose.ts';
import { readOrCreateToken, resolveHome } from '../src-main/node/home.ts';
import { createHookRoutes } from '../src-main/node/integrations/index.ts';
import { writeServerInfo } from '../src-main/node/capture-server/info.ts';
import { startCaptureServer } from '../src-main/node/capture-server/server.ts';

const N_HTTP = Number(process.env.N_HTTP ?? 300);
const N_PROC = Number(process.env.N_PROC ?? 30);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}
const fmt = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(2)} ms  p99 ${pct(xs, 99).toFixed(2)} ms`;

const home = resolveHome({ REIN_HOME: mkdtempSync(path.join(tmpdir(), 'rein-bench-hooks-')) });
const token = readOrCreateToken(home);
const core = composeCore({ home });
const server = await startCaptureServer({ core, token, port: 0, rateLimitPerMinute: 1_000_000, version: 'bench', hooks: createHookRoutes(core, () => {}) });
writeServerInfo(home, { pid: process.pid, port: server.port, url: server.url, startedAt: Date.now() });
const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };

const hook: number[] = [];
const health: number[] = [];
for (let i = 0; i < N_HTTP; i++) {
  // Alternate the two so host noise hits both alike (TOOLCHAIN.md: benchmark by alternating).
  let t = performance.now();
  await (await fetch(`${server.url}api/health`)).text();
  health.push(performance.now() - t);
  const body = JSON.stringify({ hook_event_name: 'Stop', session_id: 'bench', prompt_id: `p${i}`, transcript_path: '', last_assistant_message: `answer ${i} `.repeat(50) });
  await fetch(`${server.url}hooks/claude`, { method: 'POST', headers, body: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'bench', prompt_id: `p${i}`, prompt: `question ${i}` }) });
  t = performance.now();
  const r = await fetch(`${server.url}hooks/claude`, { method: 'POST', headers, body });
  await r.text();
  hook.push(performance.now() - t);
}

// The notify child talks to this process's server, so the server must keep answering while we wait: run the
// children from a worker-free async loop with spawnSync would block the event loop, so use a promise per child.
const { spawn } = await import('node:child_process');
const run = (args: string[], env: NodeJS.ProcessEnv) =>
  new Promise<number>((resolve, reject) => {
    const t = performance.now();
    const c = spawn(process.execPath, args, { env, stdio: 'ignore' });
    c.on('error', reject);
    c.on('exit', () => resolve(performance.now() - t));
  });
const hookEntry = path.join(import.meta.dirname, '../src-main/node/integrations/codex/hook-entry.mjs');
const notify: number[] = [];
const bare: number[] = [];
for (let i = 0; i < N_PROC; i++) {
  bare.push(await run(['-e', '0'], process.env));
  // The shape Codex 0.169.0 sends (e2e/agents/artifacts/codex-notify-payloads.json): UUID thread/turn ids, cwd, client.
  const payload = JSON.stringify({
    type: 'agent-turn-complete',
    'thread-id': '01a20162-614e-7992-9fcf-a52f58a6d429',
    'turn-id': `01a20162-6193-7f92-afda-${String(i).padStart(12, '0')}`,
    cwd: '/home/dev/work',
    client: 'codex_exec',
    'input-messages': [`q ${i}`],
    'last-assistant-message': `a ${i}`,
  });
  notify.push(await run([hookEntry, 'codex-notify', payload], { ...process.env, REIN_HOME: home.dir }));
}
const stored = core.status().turns.total;
await server.close();
core.close();
void spawnSync;

console.log(`Claude http hook (Stop → captureTurn):  ${fmt(hook)}   target p50 < 20 ms`);
console.log(`  reference GET /api/health:             ${fmt(health)}   ratio p50 ${(pct(hook, 50) / pct(health, 50)).toFixed(2)}x`);
console.log(`Codex notify process (whole run):        ${fmt(notify)}   target p50 < 80 ms`);
console.log(`  reference node -e 0:                   ${fmt(bare)}   ratio p50 ${(pct(notify, 50) / pct(bare, 50)).toFixed(2)}x`);
console.log(`turns stored: ${stored} (expected ${N_HTTP + N_PROC})`);
if (stored !== N_HTTP + N_PROC) process.exitCode = 1;
