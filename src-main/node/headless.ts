// Headless mode (`rein serve`, and the app's core): one core per Rein home behind a pid lock, the capture server on
// loopback, server.json for the CLI and hooks, and a clean shutdown on SIGINT/SIGTERM.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { ensureKeychainCopy, type KeyProtector } from './store/keyring.ts';
import { composeCore } from './compose.ts';
import type { ReinCore } from './core/core.ts';
import type { Core } from './core/types.ts';
import { ensureHome, readOrCreateToken, secureHome } from './home.ts';
import type { ReinHome } from './home.ts';
import { acquireLock } from './core-lock.ts';
import { removeServerInfo, writeServerInfo } from './capture-server/info.ts';
import { createHookRoutes } from './integrations/index.ts';
import { startCaptureServer, withoutToken } from './capture-server/server.ts';
import { attachPublishers } from './serving/publish.ts';
import type { CaptureServer } from './capture-server/server.ts';

const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The built renderer of this checkout (electron-vite writes it to out/renderer), or null before a build. */
export function defaultRendererDir(): string | null {
  const dir = path.join(PACKAGE_ROOT, 'out', 'renderer');
  return existsSync(path.join(dir, 'index.html')) ? dir : null;
}

export interface ServeOptions {
  home: ReinHome;
  /** Overrides the `server.port` setting; 0 picks a free port. */
  port?: number;
  /** The built renderer; default out/renderer when built; null serves no UI. */
  rendererDir?: string | null;
  /** Where the URL and rejected requests are reported (default stderr). */
  log?: (line: string) => void;
  /** Install SIGINT/SIGTERM handlers that close everything (default true). */
  handleSignals?: boolean;
  heartbeatMs?: number;
  /** The OS keychain (the app's safeStorage): opens an encrypted home, and keeps a copy of its keys once it did. */
  keyProtector?: KeyProtector | null;
}

export interface Serving {
  readonly core: Core;
  readonly server: CaptureServer;
  readonly port: number;
  /** `http://127.0.0.1:PORT/` */
  readonly url: string;
  /** The URL to open in a browser: the token travels in the fragment, which is never sent to a server. */
  readonly openUrl: string;
  /** Close the server (ending event streams), the core, and remove server.json and the lock. */
  close(): Promise<void>;
  /** Settles once closed, by `close()` or a signal. */
  readonly closed: Promise<void>;
}

export async function runServe(opts: ServeOptions): Promise<Serving> {
  const home = ensureHome(opts.home);
  const rawLog = opts.log ?? ((line: string) => process.stderr.write(line + '\n'));
  secureHome(home, rawLog);
  const lock = acquireLock(home.lockPath);
  let core: ReinCore | null = null;
  let server: CaptureServer | null = null;
  try {
    const token = readOrCreateToken(home);
    // Every line this process logs (the server's rejections, the hooks' warnings, publishing) without the token,
    // wherever a request put it (issue #19).
    const log = (line: string) => rawLog(withoutToken(line, token));
    // This process holds core.lock: the one that may spool captures while another process holds the write lock.
    core = composeCore({ home, spoolCaptures: true, keyProtector: opts.keyProtector ?? null });
    // Opened with the passphrase once: the keychain keeps a copy, so the app opens it by itself from then on.
    if (core.store.cipher !== null && opts.keyProtector) ensureKeychainCopy(home, core.store.cipher, opts.keyProtector);
    attachPublishers(core, (line) => log(line));
    // The serving process is the one whose scheduler wakes by the clock (training.schedule interval and nightly).
    core.scheduler.startClock();
    const settings = await core.call('getSettings', {}, 'system');
    server = await startCaptureServer({
      core,
      token,
      port: opts.port ?? settings['server.port'],
      rateLimitPerMinute: settings['server.rateLimitPerMinute'],
      version: packageVersion(),
      rendererDir: opts.rendererDir === undefined ? defaultRendererDir() : opts.rendererDir,
      heartbeatMs: opts.heartbeatMs,
      log,
      hooks: createHookRoutes(core, (level, message, detail) => log(`rein hooks ${level}: ${message}${detail ? ' ' + JSON.stringify(detail) : ''}`)),
    });
    writeServerInfo(home, { pid: process.pid, port: server.port, url: server.url, startedAt: Date.now() });
    const openUrl = `${server.url}#token=${token}`;
    // Without the token: this line goes to logs (the app's log file, a service's journal). The address to open, with
    // the token in its fragment, is the caller's to print where the person asked for it (`rein serve` on stdout).
    log(`Rein is serving ${home.dir} at ${server.url}`);

    const started = { core, server };
    let resolveClosed!: () => void;
    const closed = new Promise<void>((r) => (resolveClosed = r));
    let closing: Promise<void> | null = null;
    const onSignal = (signal: NodeJS.Signals) => {
      log(`Rein: ${signal}, shutting down`);
      void close();
    };
    const close = () => {
      closing ??= (async () => {
        // The signal listeners stay until the shutdown is done: signal-exit (loaded with node-llama-cpp, once a chat
        // started the model server) re-raises a signal with the default action, killing the process mid-shutdown,
        // when it finds itself the only listener left. A second signal meanwhile joins this same shutdown.
        try {
          await started.server.close();
          await started.core.stopChat();
        } finally {
          try {
            started.core.close();
          } finally {
            removeServerInfo(home);
            lock.release();
            process.off('SIGINT', onSignal);
            process.off('SIGTERM', onSignal);
            resolveClosed();
          }
        }
      })();
      return closing;
    };
    if (opts.handleSignals ?? true) {
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    }
    return { core, server, port: server.port, url: server.url, openUrl, close, closed };
  } catch (e) {
    await server?.close();
    core?.close();
    removeServerInfo(home);
    lock.release();
    throw e;
  }
}
