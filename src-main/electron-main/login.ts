// Start at login (setting app.startAtLogin). macOS and Windows: Electron's login items, with `--hidden` so the app
// starts in the tray without a window. Linux has no such API in Electron; the XDG Autostart spec's way is a
// .desktop file in $XDG_CONFIG_HOME/autostart (default ~/.config/autostart).
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const HIDDEN_FLAG = '--hidden';

export interface LoginApp {
  isPackaged: boolean;
  getAppPath(): string;
  setLoginItemSettings(s: { openAtLogin: boolean; args?: string[] }): void;
}

export function autostartFile(env: NodeJS.ProcessEnv = process.env): string {
  const config = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(os.homedir(), '.config');
  return path.join(config, 'autostart', 'rein.desktop');
}

/** The command that starts this app: the packaged binary, or Electron with the app's folder in development. */
function launchArgs(app: LoginApp): string[] {
  return app.isPackaged ? [HIDDEN_FLAG] : [app.getAppPath(), HIDDEN_FLAG];
}

// Desktop Entry Specification, "The Exec key": arguments with spaces or reserved characters are double-quoted,
// with `"`, `` ` ``, `$` and `\` escaped by a backslash.
const quoteExec = (arg: string) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `"${arg.replace(/(["`$\\])/g, '\\$1')}"`);

export function applyStartAtLogin(app: LoginApp, enabled: boolean, platform: string = process.platform, env: NodeJS.ProcessEnv = process.env): void {
  if (platform !== 'linux') {
    app.setLoginItemSettings({ openAtLogin: enabled, args: enabled ? launchArgs(app) : [] });
    return;
  }
  const file = autostartFile(env);
  if (!enabled) {
    rmSync(file, { force: true });
    return;
  }
  mkdirSync(path.dirname(file), { recursive: true });
  const exec = [process.execPath, ...launchArgs(app)].map(quoteExec).join(' ');
  writeFileSync(file, `[Desktop Entry]\nType=Application\nName=Rein\nComment=Rate your coding agent's answers\nExec=${exec}\nTerminal=false\nX-GNOME-Autostart-enabled=true\n`);
}
