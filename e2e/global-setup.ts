// Build the app once before the suite when out/ is missing or older than its sources, so the tests always run the
// main, preload and renderer as they are in the working tree.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const BUILT = ['out/main/index.js', 'out/preload/index.cjs', 'out/renderer/index.html'].map((p) => path.join(ROOT, p));
const SOURCES = ['src-main', 'src-preload', 'src-renderer', 'electron.vite.config.ts', 'package.json'];

function newest(p: string): number {
  const st = statSync(p, { throwIfNoEntry: false });
  if (!st) return 0;
  if (!st.isDirectory()) return /\.test\.tsx?$/.test(p) ? 0 : st.mtimeMs;
  return Math.max(0, ...readdirSync(p).map((n) => newest(path.join(p, n))));
}

export default function setup(): void {
  const built = BUILT.every((f) => existsSync(f)) ? Math.min(...BUILT.map((f) => statSync(f).mtimeMs)) : 0;
  if (built > Math.max(...SOURCES.map((s) => newest(path.join(ROOT, s))))) return;
  const r = spawnSync(process.execPath, [path.join(ROOT, 'node_modules/electron-vite/bin/electron-vite.js'), 'build'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
  });
  if (r.status !== 0 || !BUILT.every((f) => existsSync(f))) {
    throw new Error(`e2e setup: electron-vite build failed (exit ${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
}
