// Runs one scenario script in a fresh network namespace (`unshare -n`, loopback up), so nothing a client tries
// can leave the machine (notes/REAL_CLIENTS.md), and returns the JSON it prints. Needs root, as CI has.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Why the suite cannot run here, or null when it can. */
export function skipReason(): string | null {
  if (process.platform !== 'linux') return 'network namespaces (unshare -n) are Linux-only';
  if (!existsSync(path.join(ROOT, 'e2e/node_modules/.bin/claude'))) return 'the clients are not installed: run `npm ci --prefix e2e`';
  const probe = spawnSync('unshare', ['-n', 'ip', 'link', 'set', 'lo', 'up'], { encoding: 'utf8' });
  if (probe.status !== 0) return `cannot make a network namespace (unshare -n needs root): ${(probe.stderr || String(probe.error ?? '')).trim()}`;
  return null;
}

/** Runs `scenario` (with `args`) in a fresh network namespace and parses the JSON line it prints last. */
export function inNetns<T>(scenario: string, timeoutMs: number, args: string[] = []): Promise<{ result: T; stderr: string; ms: number }> {
  const script = path.join(import.meta.dirname, scenario);
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const child = spawn('unshare', ['-n', 'bash', '-c', 'ip link set lo up && exec "$0" "$@"', process.execPath, script, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const last = stdout.trim().split('\n').at(-1) ?? '';
      try {
        resolve({ result: JSON.parse(last) as T, stderr, ms: performance.now() - t });
      } catch {
        reject(new Error(`${scenario} exited ${code} without a JSON result.\nstdout: ${stdout.slice(-3000)}\nstderr: ${stderr.slice(-5000)}`));
      }
    });
  });
}
