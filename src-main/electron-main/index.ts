// The Electron shell: one instance per user, the core and its capture server in this process, a tray with its menu,
// the rating popup near the tray, a sandboxed dashboard window over the preload's typed verbs, OS notifications,
// start at login, and the trainer worker forked from the bundle's own worker entry.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { app, BrowserWindow, dialog, ipcMain, Notification, screen, session, shell } from 'electron';
import type { IpcMainInvokeEvent, Rectangle } from 'electron';
import { resolveHome } from '../node/home.ts';
import { runServe } from '../node/headless.ts';
import type { Serving } from '../node/headless.ts';
import { setWorkerEntry } from '../node/training/scheduler.ts';
import { forwardEvents, registerCallHandler } from './ipc.ts';
import { safeStorageProtector } from './keychain.ts';
import { applyStartAtLogin, HIDDEN_FLAG } from './login.ts';
import { notifyAdapterChanges } from './notify.ts';
import type { Notify } from './notify.ts';
import { PopupQueue } from './popup.ts';
import { popupPosition } from './position.ts';
import { createTray } from './tray.ts';

// Built layout (electron.vite.config.ts): out/main/{index,worker}.js beside out/preload/index.cjs and out/renderer/;
// the tray icons stay in resources/icons (written by resources/icons/make-icons.mjs).
const here = import.meta.dirname;
const PRELOAD = path.join(here, '../preload/index.cjs');
const RENDERER_HTML = path.join(here, '../renderer/index.html');
const RENDERER_DIR = path.dirname(RENDERER_HTML);
const WORKER = path.join(here, 'worker.js');
const ICONS = path.join(here, '../../resources/icons');
const POPUP_SIZE = { width: 380, height: 260 };

let host: Serving | null = null;
let win: BrowserWindow | null = null;
let popup: BrowserWindow | null = null;
let trayBounds: () => Rectangle | null = () => null;
const disposers: (() => void)[] = [];

/** Only our own windows' top pages may call verbs: not an iframe, not a page one was navigated to. */
function isOurFrame(e: IpcMainInvokeEvent): boolean {
  const url = e.senderFrame?.url ?? '';
  const ours = (win !== null && e.sender === win.webContents) || (popup !== null && e.sender === popup.webContents);
  if (!ours || !url.startsWith('file:')) return false;
  try {
    return fileURLToPath(url) === RENDERER_HTML;
  } catch {
    return false;
  }
}

const webPreferences = {
  preload: PRELOAD,
  sandbox: true,
  contextIsolation: true,
  nodeIntegration: false,
  webSecurity: true,
  spellcheck: false,
};

/** What every Rein window gets: events from the core, no navigation, no new windows (web links go to the browser). */
function wire(h: Serving, w: BrowserWindow, onClosed: () => void): void {
  const stopEvents = forwardEvents(h.core, w.webContents);
  w.on('closed', () => {
    stopEvents();
    onClosed();
  });
  w.webContents.on('will-navigate', (e) => e.preventDefault());
  w.webContents.setWindowOpenHandler(({ url }) => {
    if (/^https?:\/\//.test(url)) void shell.openExternal(url);
    return { action: 'deny' };
  });
}

function createWindow(h: Serving, view?: string): BrowserWindow {
  const w = new BrowserWindow({
    width: 1040,
    height: 760,
    minWidth: 360,
    minHeight: 480,
    show: false,
    title: 'Rein',
    autoHideMenuBar: true,
    webPreferences,
  });
  wire(h, w, () => {
    if (win === w) win = null;
  });
  w.once('ready-to-show', () => w.show());
  void w.loadFile(RENDERER_HTML, view === undefined ? undefined : { query: { view } });
  return w;
}

function openDashboard(view?: string): void {
  if (!host) return;
  if (win === null) {
    win = createWindow(host, view ?? 'training');
    return;
  }
  if (win.isMinimized()) win.restore();
  win.show();
  win.focus();
}

/** Loaded once, hidden, so a captured turn shows it at once; it is moved beside the tray each time it shows. */
function createPopup(h: Serving): BrowserWindow {
  const p = new BrowserWindow({
    ...POPUP_SIZE,
    show: false,
    frame: false,
    resizable: false,
    movable: false,
    minimizable: false,
    maximizable: false,
    fullscreenable: false,
    alwaysOnTop: true,
    skipTaskbar: true,
    title: 'Rein',
    webPreferences,
  });
  // Above full-screen apps too (macOS); 'pop-up-menu' is the level of menus, not of a modal dialog.
  p.setAlwaysOnTop(true, 'pop-up-menu');
  p.setVisibleOnAllWorkspaces(true, { visibleOnFullScreen: true });
  wire(h, p, () => {
    if (popup === p) popup = null;
  });
  void p.loadFile(RENDERER_HTML, { query: { window: 'popup' } });
  return p;
}

function showPopup(): void {
  if (popup === null || popup.isDestroyed()) return;
  const tray = trayBounds();
  const display = tray !== null && tray.width > 0 ? screen.getDisplayMatching(tray) : screen.getPrimaryDisplay();
  const at = popupPosition(process.platform, POPUP_SIZE, tray, display.workArea, display.bounds);
  popup.setBounds({ ...at, ...POPUP_SIZE });
  // Never focus: the user keeps typing where they were, and rates with a click or the popup's keys when they want.
  popup.showInactive();
}

const live = new Set<Notification>();
const notify: Notify = (title, body, onClick) => {
  if (!Notification.isSupported()) return;
  const n = new Notification({ title, body });
  // Keep a reference until it closes: a collected Notification loses its click handler (electron/electron#12690).
  live.add(n);
  n.on('close', () => live.delete(n));
  if (onClick) n.on('click', onClick);
  n.show();
};

async function main(): Promise<void> {
  if (!app.requestSingleInstanceLock()) {
    app.quit();
    return;
  }
  app.on('second-instance', () => openDashboard());
  // The bundle has no worker.ts: the scheduler forks the built worker with this binary as Node.
  setWorkerEntry(WORKER);
  await app.whenReady();
  // No permission (camera, notifications from the page, …) is ever granted to the renderer.
  session.defaultSession.setPermissionRequestHandler((_wc, _perm, cb) => cb(false));
  // The same core `rein serve` runs (pid lock, capture server, server.json for the CLI), hosted in this process;
  // the app owns the lifecycle, so no signal handlers of its own.
  try {
    // An encrypted home opens from the keychain's copy of its keys (keychain.ts), else from REIN_PASSPHRASE(_FILE).
    host = await runServe({ home: resolveHome(), rendererDir: RENDERER_DIR, handleSignals: false, keyProtector: safeStorageProtector() });
  } catch (e) {
    dialog.showErrorBox('Rein cannot start', (e as Error).message);
    app.exit(1);
    return;
  }
  const h = host;
  const settings = await h.core.call('getSettings', {}, 'system');
  registerCallHandler(ipcMain, h.core, isOurFrame);

  const loginItem = (enabled: boolean) => {
    try {
      applyStartAtLogin(app, enabled);
    } catch (e) {
      notify('Start at login not changed', (e as Error).message);
    }
  };
  loginItem(settings['app.startAtLogin']);
  disposers.push(
    h.core.on('settingsChanged', (changed) => {
      if (changed['app.startAtLogin'] !== undefined) loginItem(changed['app.startAtLogin']);
    }),
  );

  const template = process.platform === 'darwin' ? 'Template' : '';
  const disposeTray = createTray({
    core: h.core,
    icon: path.join(ICONS, `tray${template}.png`),
    pausedIcon: path.join(ICONS, `trayPaused${template}.png`),
    openDashboard: () => openDashboard(),
    quit: () => app.quit(),
    notify,
  });
  trayBounds = disposeTray.bounds;
  disposers.push(disposeTray.dispose);

  popup = createPopup(h);
  const queue = new PopupQueue(h.core, { showInactive: showPopup, hide: () => popup?.hide() }, settings);
  disposers.push(() => queue.dispose());
  disposers.push(notifyAdapterChanges(h.core, notify, () => openDashboard('versions')));

  const atLogin = process.argv.includes(HIDDEN_FLAG) || (process.platform === 'darwin' && app.getLoginItemSettings().wasOpenedAtLogin);
  if (!atLogin) win = createWindow(h);
  app.on('activate', () => openDashboard());
}

// The tray keeps the app alive: closing the dashboard leaves Rein capturing (quit from the tray menu).
app.on('window-all-closed', () => undefined);

let quitting = false;
app.on('will-quit', (e) => {
  if (quitting || !host) return;
  quitting = true;
  e.preventDefault();
  const h = host;
  host = null;
  for (const d of disposers.splice(0)) d();
  h.close()
    .catch((err: unknown) => console.error(`rein: shutdown: ${(err as Error).message}`))
    .finally(() => app.quit());
});

main().catch((e: unknown) => {
  console.error(`rein: cannot start: ${(e as Error)?.stack ?? String(e)}`);
  app.exit(1);
});
