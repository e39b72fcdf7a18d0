#!/usr/bin/env node
// The `rein` launcher. Rein's code runs on Node 24's type stripping, and better-sqlite3 13 crashes on older Nodes,
// so when started by an older `node` (whatever is first on PATH, e.g. from an agent's hook) it re-runs itself with
// the Node 24 binary of this package's `node` dependency, found relative to this file, not the working directory.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import module from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MIN_MAJOR = 24;
const self = fileURLToPath(import.meta.url);

function bundledNode() {
  const exe = process.platform === 'win32' ? 'node.exe' : path.join('bin', 'node');
  // Walk up from bin/: the package's own node_modules first, then any parent (a hoisted install).
  for (let dir = path.dirname(path.dirname(self)); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', 'node', exe);
    if (existsSync(candidate)) return candidate;
    if (path.dirname(dir) === dir) return null;
  }
}

if (Number(process.versions.node.split('.')[0]) < MIN_MAJOR) {
  const node = bundledNode();
  if (node === null) {
    process.stderr.write(
      `rein: needs Node ${MIN_MAJOR} or newer, but this is Node ${process.versions.node} and no bundled Node was found ` +
        `under node_modules/node (run "npm ci" in the Rein folder, or put Node ${MIN_MAJOR} first on PATH)\n`,
    );
    process.exit(1);
  }
  const child = spawn(node, [...process.execArgv, self, ...process.argv.slice(2)], { stdio: 'inherit' });
  // Pass termination signals on, so that `rein serve` under an old node still shuts down cleanly.
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => child.kill(sig));
  child.on('error', (e) => {
    process.stderr.write(`rein: could not start ${node}: ${e.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    }
    process.exit(code ?? 1);
  });
} else {
  // Node's on-disk compile cache (node:module, Node >= 22.1) roughly halves start-up on later runs; a short-lived
  // command like `rein good` is mostly start-up.
  module.enableCompileCache?.();
  await import('../src-main/cli/main.ts');
}
