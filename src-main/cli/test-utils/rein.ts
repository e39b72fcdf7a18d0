// Helpers for tests that run the real `rein` launcher as a child process against a temp REIN_HOME.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { runCli } from '../dispatch.ts';

export const REIN_BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../bin/rein.mjs');

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** `env` adds to (or overrides) the test's environment: a temporary HOME for the agents' config files. */
export function runRein(args: string[], opts: { home: string; input?: string; node?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(opts.node ?? process.execPath, [REIN_BIN, ...args], {
      env: { ...process.env, ...opts.env, REIN_HOME: opts.home, NO_COLOR: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

export interface ServeChild {
  child: ChildProcess;
  port: number;
  url: string;
  stderr: () => string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/** `rein serve --port 0` as a child; resolves once server.json names it. */
export async function startServeChild(home: string, extraArgs: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<ServeChild> {
  const child = spawn(process.execPath, [REIN_BIN, 'serve', '--port', '0', '--no-ui', '--quiet', ...extraArgs], {
    env: { ...process.env, ...env, REIN_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
  child.stdout!.resume();
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const infoPath = path.join(home, 'server.json');
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (existsSync(infoPath)) {
      try {
        const info = JSON.parse(readFileSync(infoPath, 'utf8')) as { pid: number; port: number; url: string };
        if (info.pid === child.pid) {
          return {
            child,
            port: info.port,
            url: info.url,
            stderr: () => err,
            async stop() {
              if (child.exitCode === null) child.kill('SIGTERM');
              return exited;
            },
          };
        }
      } catch {
        // Not fully written yet (it is renamed into place, so this is rare): look again.
      }
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`rein serve did not start: exit ${child.exitCode}; stderr: ${err}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Run the CLI dispatcher in this process (no child, no launcher) with captured output, no stdin and no TTY,
 * REIN_HOME at `<root>/home` and the working directory at `root`. The command modules under test must be imported.
 */
export async function runCliInProcess(root: string, argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, {
    stdout: (t) => (out += t),
    stderr: (t) => (err += t),
    stdin: Readable.from([]),
    stdinIsTTY: false,
    env: { REIN_HOME: path.join(root, 'home') },
    cwd: root,
  });
  return { code, out, err };
}
