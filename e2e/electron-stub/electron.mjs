// A stand-in for the parts of Electron's main-process API that src-main/electron-main uses, plus a scenario that
// drives the built main like a user would: the app gets ready, the window loads, the renderer calls verbs over IPC
// (from the window and from a stranger), core events reach the window, the window closes and the app quits.
// It prints one line, `REPORT {json}`, that e2e/main-process.test.ts checks. Only for that test.
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const report = { windows: [], loaded: [], sent: [], calls: {}, errors: {}, quit: false, permissionGranted: null };
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
  loadFile(file) {
    report.loaded.push({ file, exists: existsSync(file) });
    this.file = file;
    setTimeout(() => this.emit('ready-to-show'), 0);
    return Promise.resolve();
  }
  show() {}
  isMinimized() {
    return false;
  }
  restore() {}
  focus() {}
  close() {
    this.webContents.destroyed = true;
    this.emit('closed');
    BrowserWindow.all = BrowserWindow.all.filter((w) => w !== this);
    if (BrowserWindow.all.length === 0) app.emit('window-all-closed');
  }
}

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

async function scenario() {
  // Wait for the main to have created its window and registered its handler.
  for (let i = 0; i < 500 && (BrowserWindow.all.length === 0 || !handlers.has('rein:call')); i++) await new Promise((r) => setTimeout(r, 10));
  const win = BrowserWindow.all[0];
  if (!win) return app.exit(3);
  report.preloadExists = existsSync(report.windows[0].webPreferences.preload);
  const call = handlers.get('rein:call');
  const fromWindow = { sender: win.webContents, senderFrame: { url: pathToFileURL(win.file).href } };
  const fromStranger = { sender: win.webContents, senderFrame: { url: 'https://example.com/' } };
  const attempt = async (name, event, verb, input) => {
    try {
      report.calls[name] = await call(event, verb, input);
    } catch (e) {
      report.errors[name] = e.message;
    }
  };
  await attempt('capture', fromWindow, 'captureTurn', { source: 'api', eventId: 'stub-1', prompt: 'p', response: 'r' });
  await attempt('rate', fromWindow, 'rate', { value: 'good' });
  await attempt('stranger', fromStranger, 'status', {});
  await attempt('unknownVerb', fromWindow, 'toString', {});
  report.openHandler = win.openHandler?.({ url: 'https://example.com/' });
  win.close();
}
setTimeout(() => void scenario(), 0);
