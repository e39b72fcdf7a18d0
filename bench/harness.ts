// Shared pieces of the engine benchmarks: a timer that reports CPU time beside wall time (the second core is often
// busy with other work, so a low CPU/wall ratio explains a slow figure), the PyTorch reference server, and the load.
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { loadavg } from 'node:os';

export interface Timed<T> {
  value: T;
  wallS: number;
  cpuS: number;
}

export async function timed<T>(fn: () => Promise<T>): Promise<Timed<T>> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await fn();
  const wallS = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  return { value, wallS, cpuS: (c.user + c.system) / 1e6 };
}

export function loadAverage(): string {
  return loadavg().map((x) => x.toFixed(2)).join(' ');
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Debian's python3 (it has python3-torch); a pyenv shim first on PATH may not. */
export const PYTHON = process.env['REIN_PYTHON'] ?? '/usr/bin/python3';

/**
 * A long-lived Python process answering one JSON line per JSON command line, so the benchmark can alternate ours and
 * the reference without paying PyTorch's start-up and weight generation each time.
 */
export class PyServer {
  private readonly proc: ChildProcessWithoutNullStreams;
  private readonly lines: AsyncIterator<string>;
  private stderr = '';

  constructor(script: string, arg: unknown) {
    this.proc = spawn(PYTHON, [script, JSON.stringify(arg)], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stderr.on('data', (d: Buffer) => {
      this.stderr += d.toString();
    });
    this.lines = createInterface({ input: this.proc.stdout })[Symbol.asyncIterator]();
  }

  async next(): Promise<Record<string, unknown>> {
    const r = await this.lines.next();
    if (r.done === true) throw new Error(`${PYTHON} exited early: ${this.stderr.slice(-2000)}`);
    return JSON.parse(r.value) as Record<string, unknown>;
  }

  async call(cmd: Record<string, unknown>): Promise<Record<string, unknown>> {
    this.proc.stdin.write(`${JSON.stringify(cmd)}\n`);
    return this.next();
  }

  async close(): Promise<void> {
    this.proc.stdin.write(`${JSON.stringify({ cmd: 'quit' })}\n`);
    this.proc.stdin.end();
    await new Promise((resolve) => this.proc.once('exit', resolve));
  }
}
