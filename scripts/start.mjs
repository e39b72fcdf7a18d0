// `npm start`: build the app when out/ is missing or older than its sources, then run it in Electron. Where the
// Electron binary is missing and cannot be installed (no network, a headless server, an unsupported platform),
// say why once and run headless instead: the same core and UI, served to the browser by `rein serve`.
//   npm start                   Electron when possible, headless otherwise
//   npm start -- --headless     headless directly (also REIN_HEADLESS=1); --port N picks the port
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, 'out');
const OUTPUTS = ['main/index.js', 'preload/index.cjs', 'renderer/index.html'].map((p) => path.join(OUT, p));
const SOURCES = ['src-main', 'src-preload', 'src-renderer', 'electron.vite.config.ts', 'package.json'];
const INSTALL_TIMEOUT_MS = 180_000;

const args = process.argv.slice(2);
const headlessAsked = args.includes('--headless') || process.env.REIN_HEADLESS === '1';
const portArg = args.indexOf('--port');
const port = portArg >= 0 ? Number(args[portArg + 1]) : undefined;
if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65535)) {
  console.error(`rein start: --port must be an integer from 0 to 65535, got ${JSON.stringify(args[portArg + 1])}`);
  process.exit(2);
}

if (Number(process.versions.node.split('.')[0]) < 24) {
  console.error(`rein start: Node ${process.versions.node} is too old; run it through npm (npm start), which uses the bundled Node 24.`);
  process.exit(1);
}

/** Newest modification time under a path, skipping tests (they are not part of the build). */
function newestMtime(p) {
  let st;
  try {
    st = statSync(p);
  } catch {
    return 0;
  }
  if (!st.isDirectory()) return /\.test\.tsx?$/.test(p) ? 0 : st.mtimeMs;
  let newest = 0;
  for (const name of readdirSync(p)) newest = Math.max(newest, newestMtime(path.join(p, name)));
  return newest;
}

function buildIfStale() {
  const built = OUTPUTS.every((f) => existsSync(f)) ? Math.min(...OUTPUTS.map((f) => statSync(f).mtimeMs)) : 0;
  const sources = Math.max(...SOURCES.map((s) => newestMtime(path.join(ROOT, s))));
  if (built > sources) return;
  console.log(built === 0 ? 'rein start: building the app (first run)…' : 'rein start: sources changed, rebuilding…');
  const r = spawnSync(process.execPath, [path.join(ROOT, 'node_modules/electron-vite/bin/electron-vite.js'), 'build'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (r.status !== 0) {
    console.error('rein start: the build failed (see above).');
    process.exit(1);
  }
}

/** The Electron binary's path, or null with the reason it is unusable. */
function electronBinary() {
  const require = createRequire(path.join(ROOT, 'package.json'));
  let bin;
  try {
    // node_modules/electron/index.js throws when its binary was never downloaded.
    const resolved = require.resolve('electron');
    delete require.cache[resolved];
    bin = require('electron');
  } catch (e) {
    return { bin: null, why: e.code === 'MODULE_NOT_FOUND' ? 'the electron package is not installed' : 'its binary was never downloaded' };
  }
  return existsSync(bin) ? { bin, why: null } : { bin: null, why: `${bin} does not exist` };
}

/**
 * Electron's installer reports a network failure only as "fetch failed"; one probe of the host it downloads from
 * (GitHub, or $ELECTRON_MIRROR) names the cause (no DNS, refused, timed out) so the message can say why.
 */
async function networkCause() {
  const url = new URL(process.env.ELECTRON_MIRROR || process.env.npm_config_electron_mirror || 'https://github.com/electron/electron/releases/');
  try {
    await fetch(url, { method: 'HEAD', signal: globalThis.AbortSignal.timeout(5_000) });
    return null;
  } catch (e) {
    return `no network access to ${url.host}, ${e.cause?.code ? `${e.cause.code}: ${e.cause.message}` : e.message}`;
  }
}

/** Try Electron's own installer once, bounded in time; returns the reason when it fails. */
async function installElectron() {
  const env = { ...process.env };
  delete env.ELECTRON_SKIP_BINARY_DOWNLOAD;
  console.log(`rein start: the Electron binary is missing; trying to download it (up to ${INSTALL_TIMEOUT_MS / 1000} s)…`);
  const r = spawnSync(process.execPath, [path.join(ROOT, 'node_modules/electron/install.js')], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
    timeout: INSTALL_TIMEOUT_MS,
  });
  if (r.error?.code === 'ETIMEDOUT') return `the download did not finish within ${INSTALL_TIMEOUT_MS / 1000} s`;
  if (r.status === 0) return null;
  const lines = `${r.stderr ?? ''}\n${r.stdout ?? ''}`.split('\n').map((l) => l.trim()).filter(Boolean);
  let reason = lines.find((l) => /error|fail|ENOTFOUND|EAI_AGAIN|ECONN|ETIMEDOUT|40\d|50\d/i.test(l)) ?? lines[0] ?? `exit code ${r.status}`;
  if (/fetch failed/.test(reason)) {
    const cause = await networkCause();
    if (cause) reason = cause;
  }
  return `the download failed (${reason})`;
}

function runElectron(bin) {
  const child = spawn(bin, [ROOT, ...args.filter((a) => a !== '--headless')], { cwd: ROOT, stdio: 'inherit' });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 0 : 1)));
}

async function runHeadless(why) {
  if (why) {
    console.log(`rein start: Electron cannot run here: ${why}. Starting headless mode instead (the same app, in your browser).`);
  }
  const { runServe } = await import(pathToFileURL(path.join(ROOT, 'src-main/node/headless.ts')).href);
  const { resolveHome } = await import(pathToFileURL(path.join(ROOT, 'src-main/node/home.ts')).href);
  let serving;
  try {
    serving = await runServe({ home: resolveHome(), port, rendererDir: path.join(OUT, 'renderer'), log: (l) => console.error(l) });
  } catch (e) {
    console.error(`rein start: ${e.message}`);
    process.exit(e.code === 'locked' || e.code === 'conflict' ? 4 : 1);
  }
  console.log(`\nRein is running headless. Open this address in your browser (it carries your access token):\n\n  ${serving.openUrl}\n\nPress Ctrl-C to stop.`);
  await serving.closed;
  console.log('rein start: stopped.');
}

buildIfStale();
if (headlessAsked) {
  await runHeadless(null);
} else {
  let { bin, why } = electronBinary();
  if (!bin) {
    const failed = await installElectron();
    ({ bin } = electronBinary());
    if (!bin) why = failed ?? why;
  }
  if (bin && process.platform === 'linux' && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) {
    bin = null;
    why = 'there is no display (neither DISPLAY nor WAYLAND_DISPLAY is set)';
  }
  if (bin) runElectron(bin);
  else await runHeadless(why);
}
