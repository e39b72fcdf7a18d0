// The Electron shell, minimal for now (tray, popup and notifications come later): one instance per user, the core
// and its capture server in this process, and one sandboxed window over the preload's typed verbs.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { app, BrowserWindow, dialog, ipcMain, session, shell } from 'electron';
import type { IpcMainInvokeEvent } from 'electron';
import { resolveHome } from '../node/home.ts';
import { runServe } from '../node/serve.ts';
import type { Serving } from '../node/serve.ts';
import { forwardEvents, registerCallHandler } from './ipc.ts';

// Built layout (electron.vite.config.ts): out/main/index.js beside out/preload/index.cjs and out/renderer/.
const here = import.meta.dirname;
const PRELOAD = path.join(here, '../preload/index.cjs');
const RENDERER_HTML = path.join(here, '../renderer/index.html');
const RENDERER_DIR = path.dirname(RENDERER_HTML);

let host: Serving | null = null;
let win: BrowserWindow | null = null;

/** Only our own window's top page may call verbs: not an iframe, not a page it was navigated to. */
function isOurFrame(e: IpcMainInvokeEvent): boolean {
  const url = e.senderFrame?.url ?? '';
  if (win === null || e.sender !== win.webContents || !url.startsWith('file:')) return false;
  try {
    return fileURLToPath(url) === RENDERER_HTML;
  } catch {
    return false;
  }
}

function createWindow(h: Serving): BrowserWindow {
  const w = new BrowserWindow({
    width: 1040,
    height: 760,
    minWidth: 360,
    minHeight: 480,
    show: false,
    title: 'Rein',
    autoHideMenuBar: true,
    webPreferences: {
      preload: PRELOAD,
      sandbox: true,
      contextIsolation: true,
      nodeIntegration: false,
      webSecurity: true,
      spellcheck: false,
    },
  });
  const stopEvents = forwardEvents(h.core, w.webContents);
  w.on('closed', () => {
    stopEvents();
    if (win === w) win = null;
  });
  w.once('ready-to-show', () => w.show());
  // The renderer never navigates and never opens windows; links to the web go to the browser.
  w.webContents.on('will-navigate', (e) => e.preventDefault());
  w.webContents.setWindowOpenHandler(({ url }) => {
    if (/^https?:\/\//.test(url)) void shell.openExternal(url);
    return { action: 'deny' };
  });
  void w.loadFile(RENDERER_HTML);
  return w;
}

async function main(): Promise<void> {
  if (!app.requestSingleInstanceLock()) {
    app.quit();
    return;
  }
  app.on('second-instance', () => {
    if (!win) return;
    if (win.isMinimized()) win.restore();
    win.focus();
  });
  await app.whenReady();
  // No permission (camera, notifications from the page, …) is ever granted to the renderer.
  session.defaultSession.setPermissionRequestHandler((_wc, _perm, cb) => cb(false));
  // The same core `rein serve` runs (pid lock, capture server, server.json for the CLI), hosted in this process;
  // the app owns the lifecycle, so no signal handlers of its own.
  try {
    host = await runServe({ home: resolveHome(), rendererDir: RENDERER_DIR, handleSignals: false });
  } catch (e) {
    dialog.showErrorBox('Rein cannot start', (e as Error).message);
    app.exit(1);
    return;
  }
  registerCallHandler(ipcMain, host.core, isOurFrame);
  win = createWindow(host);
  app.on('activate', () => {
    if (!win && host) win = createWindow(host);
  });
}

app.on('window-all-closed', () => {
  // The tray keeps the app alive once it exists; until then closing the window quits (except on macOS).
  if (process.platform !== 'darwin') app.quit();
});

let quitting = false;
app.on('will-quit', (e) => {
  if (quitting || !host) return;
  quitting = true;
  e.preventDefault();
  const h = host;
  host = null;
  h.close()
    .catch((err: unknown) => console.error(`rein: shutdown: ${(err as Error).message}`))
    .finally(() => app.quit());
});

main().catch((e: unknown) => {
  console.error(`rein: cannot start: ${(e as Error)?.stack ?? String(e)}`);
  app.exit(1);
});
