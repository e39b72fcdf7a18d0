// A stand-in for the parts of Electron's main-process API that src-main/electron-main uses, plus a scenario that
// drives the built main like a user would: the app gets ready, the windows load, the renderer calls verbs over IPC
// (from the window and from a stranger), core events reach the window, a captured turn shows the popup without
// focus and a rating hides it, the tray menu's items run (pause, train now on the demo model, quit), the trained
// version raises a notification, and the start-at-login setting is applied both ways.
// It prints one line, `REPORT {json}`, that e2e/main-process.test.ts checks. Only for that test.
import { EventEmitter } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const report = {
  windows: [],
  loaded: [],
  sent: [],
  calls: {},
  errors: {},
  quit: false,
  permissionGranted: null,
  popup: [],
  focused: [],
  notifications: [],
  loginItems: [],
  tray: {},
};
const handlers = new Map();

class FakeApp extends EventEmitter {
  requestSingleInstanceLock() {
    return true;
  }
  whenReady() {
    return new Promise((r) => setTimeout(r, 0));
  }
  getVersion() {
    return '0.0.0-stub';
  }
  isPackaged = false;
  getAppPath() {
    return '/stub/app';
  }
  setLoginItemSettings(s) {
    report.loginItems.push(s);
  }
  getLoginItemSettings() {
    return { openAtLogin: false, wasOpenedAtLogin: false };
  }
  quit() {
    let prevented = false;
    this.emit('will-quit', { preventDefault: () => (prevented = true) });
    if (!prevented) {
      report.quit = true;
      process.stdout.write(`REPORT ${JSON.stringify(report)}\n`);
      process.exit(0);
    }
  }
  exit(code) {
    process.stdout.write(`REPORT ${JSON.stringify({ ...report, exitCode: code })}\n`);
    process.exit(code);
  }
}
export const app = new FakeApp();

export class BrowserWindow extends EventEmitter {
  constructor(options) {
    super();
    report.windows.push(options);
    this.webContents = Object.assign(new EventEmitter(), {
      destroyed: false,
      isDestroyed() {
        return this.destroyed;
      },
      send: (channel, ...args) => report.sent.push([channel, args[0]]),
      setWindowOpenHandler: (fn) => (this.openHandler = fn),
    });
    BrowserWindow.all.push(this);
  }
  static all = [];
  loadFile(file, options) {
    report.loaded.push({ file, exists: existsSync(file), query: options?.query ?? null });
    this.file = file;
    this.query = options?.query ?? {};
    setTimeout(() => this.emit('ready-to-show'), 0);
    return Promise.resolve();
  }
  visible = false;
  show() {
    this.visible = true;
  }
  showInactive() {
    this.visible = true;
    if (this.query.window === 'popup') report.popup.push({ shown: 'inactive', bounds: this.bounds });
  }
  hide() {
    this.visible = false;
    if (this.query.window === 'popup') report.popup.push({ hidden: true });
  }
  setBounds(b) {
    this.bounds = b;
  }
  setAlwaysOnTop(flag, level) {
    this.alwaysOnTopLevel = flag ? level : null;
  }
  setVisibleOnAllWorkspaces() {}
  isDestroyed() {
    return this.webContents.destroyed;
  }
  isMinimized() {
    return false;
  }
  restore() {}
  focus() {
    report.focused.push(this.query.window ?? 'main');
  }
  close() {
    this.webContents.destroyed = true;
    this.emit('closed');
    BrowserWindow.all = BrowserWindow.all.filter((w) => w !== this);
    if (BrowserWindow.all.length === 0) app.emit('window-all-closed');
  }
}

export class Tray {
  static all = [];
  constructor(image) {
    this.image = image;
    Tray.all.push(this);
  }
  setContextMenu(menu) {
    this.menu = menu;
  }
  setToolTip(t) {
    this.tooltip = t;
  }
  setImage(i) {
    this.image = i;
  }
  getBounds() {
    // What a Linux tray that knows its icon reports: a 24 px icon in a top panel.
    return { x: 1800, y: 0, width: 24, height: 24 };
  }
  destroy() {
    report.tray.destroyed = true;
  }
}
export const Menu = {
  buildFromTemplate: (items) => ({ items }),
};
export class Notification extends EventEmitter {
  static isSupported() {
    return true;
  }
  constructor(o) {
    super();
    this.o = o;
  }
  show() {
    report.notifications.push({ title: this.o.title, body: this.o.body });
  }
}
const display = { bounds: { x: 0, y: 0, width: 1920, height: 1080 }, workArea: { x: 0, y: 28, width: 1920, height: 1052 } };
export const screen = { getPrimaryDisplay: () => display, getDisplayMatching: () => display };

export const ipcMain = {
  handle: (channel, fn) => handlers.set(channel, fn),
  removeHandler: (channel) => handlers.delete(channel),
};
export const session = {
  defaultSession: {
    setPermissionRequestHandler: (fn) => fn(null, 'notifications', (granted) => (report.permissionGranted = granted)),
  },
};
export const shell = { openExternal: async () => {} };
export const dialog = {
  showErrorBox: (title, message) => {
    report.errorBox = `${title}: ${message}`;
  },
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, ok, ms = 10_000) {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(20)) if (ok()) return true;
  report.timeouts = [...(report.timeouts ?? []), what];
  return false;
}
const trayOf = () => Tray.all[0];
const item = (label) => trayOf()?.menu?.items.find((i) => i.label === label);
/** A click as Electron does it: a checkbox flips before its handler runs. */
function click(label) {
  const it = item(label);
  if (it.type === 'checkbox') it.checked = !it.checked;
  it.click(it);
}

async function scenario() {
  // Wait for the main to have created its windows, its tray, and registered its handler.
  await until('start', () => BrowserWindow.all.length === 2 && handlers.has('rein:call') && trayOf()?.menu !== undefined);
  const tray = trayOf();
  const win = BrowserWindow.all.find((w) => w.query.window !== 'popup');
  const popup = BrowserWindow.all.find((w) => w.query.window === 'popup');
  if (!win || !popup) return app.exit(3);
  report.preloadExists = existsSync(report.windows[0].webPreferences.preload);
  report.popupAlwaysOnTopLevel = popup.alwaysOnTopLevel;
  const call = handlers.get('rein:call');
  const fromWindow = { sender: win.webContents, senderFrame: { url: pathToFileURL(win.file).href + '?view=rate' } };
  const fromPopup = { sender: popup.webContents, senderFrame: { url: pathToFileURL(popup.file).href + '?window=popup' } };
  const fromStranger = { sender: win.webContents, senderFrame: { url: 'https://example.com/' } };
  const attempt = async (name, event, verb, input) => {
    try {
      report.calls[name] = await call(event, verb, input);
    } catch (e) {
      report.errors[name] = e.message;
    }
  };
  const autostart = path.join(process.env.XDG_CONFIG_HOME, 'autostart', 'rein.desktop');
  report.autostartAtStart = existsSync(autostart) ? readFileSync(autostart, 'utf8') : null;
  report.tray.menuAtStart = tray.menu.items.map((i) => i.label ?? i.type);
  report.tray.tooltipAtStart = tray.tooltip;

  await attempt('capture', fromWindow, 'captureTurn', { source: 'api', eventId: 'stub-1', prompt: 'p', response: 'r' });
  report.popupAfterCapture = { visible: popup.visible, focused: report.focused.includes('popup') };
  await attempt('rate', fromPopup, 'rate', { value: 'good' });
  report.popupAfterRate = { visible: popup.visible };
  await attempt('stranger', fromStranger, 'status', {});
  await attempt('unknownVerb', fromWindow, 'toString', {});
  report.openHandler = win.openHandler?.({ url: 'https://example.com/' });
  await until('tooltip', () => tray.tooltip.startsWith('Rein: 1 of '));
  report.tray.tooltipAfterRate = tray.tooltip;

  click('Pause capture');
  await until('paused', () => item('Pause capture')?.checked === true);
  await attempt('settingsPaused', fromWindow, 'getSettings', {});
  report.tray.imageWhenPaused = tray.image;
  await attempt('captureWhilePaused', fromWindow, 'captureTurn', { source: 'api', eventId: 'stub-2', prompt: 'p', response: 'r' });
  click('Pause capture');
  await until('unpaused', () => item('Pause capture')?.checked === false);

  // Train now with no model: the core's refusal reaches the user as a notification.
  click('Train now');
  await until('train refusal', () => report.notifications.length > 0);
  // Then on the offline demo model: the round runs in the built worker (out/main/worker.js) and its version is
  // announced. A short round: the test is about the shell, the learning is tested elsewhere.
  await attempt('demo', fromWindow, 'useDemoModel', {});
  await attempt('fewSteps', fromWindow, 'setSettings', {
    values: { 'training.custom': { ...report.calls.demo.settings['training.custom'], steps: 2 }, 'training.auto': false },
  });
  for (let i = 0; i < 4; i++) {
    await attempt(`capture${i}`, fromWindow, 'captureTurn', { source: 'api', eventId: `t-${i}`, prompt: `q${i}`, response: `a${i}` });
    await attempt(`rate${i}`, fromPopup, 'rate', { value: i % 2 ? 'bad' : 'good' });
  }
  await until('train enabled', () => item('Train now')?.enabled === true);
  click('Train now');
  await until('adapter notification', () => report.notifications.some((n) => /^Adapter v1 /.test(n.title)), 120_000);
  await attempt('runs', fromWindow, 'listRuns', {});

  await attempt('loginOff', fromWindow, 'setSettings', { values: { 'app.startAtLogin': false } });
  report.autostartAfterOff = existsSync(autostart);

  win.close();
  report.windowsAfterClose = BrowserWindow.all.map((w) => w.query.window ?? 'main');
  click('Quit Rein');
}
setTimeout(() => void scenario(), 0);

// No OS keychain in the stand-in (as on a Linux session without a secret service): keychain.ts then returns null.
export const safeStorage = {
  isEncryptionAvailable: () => false,
  encryptString: () => {
    throw new Error('safeStorage is not available in the stand-in electron module');
  },
  decryptString: () => {
    throw new Error('safeStorage is not available in the stand-in electron module');
  },
};
