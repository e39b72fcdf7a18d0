import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyStartAtLogin, autostartFile } from './login.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'rein-login-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function fakeApp(isPackaged: boolean) {
  const calls: unknown[] = [];
  return { calls, isPackaged, getAppPath: () => '/Apps/My Rein', setLoginItemSettings: (s: unknown) => calls.push(s) };
}

describe('applyStartAtLogin', () => {
  it('uses login items on macOS and Windows, starting hidden, and clears them when switched off', () => {
    const app = fakeApp(true);
    applyStartAtLogin(app, true, 'darwin');
    applyStartAtLogin(app, false, 'win32');
    expect(app.calls).toEqual([
      { openAtLogin: true, args: ['--hidden'] },
      { openAtLogin: false, args: [] },
    ]);
  });

  it('writes and removes an XDG autostart entry on Linux, quoting an app path with a space', () => {
    const env = { XDG_CONFIG_HOME: dir };
    const app = fakeApp(false);
    applyStartAtLogin(app, true, 'linux', env);
    const file = autostartFile(env);
    expect(file).toBe(path.join(dir, 'autostart', 'rein.desktop'));
    expect(readFileSync(file, 'utf8')).toContain(`Exec=${process.execPath} "/Apps/My Rein" --hidden\n`);
    expect(app.calls).toEqual([]);
    applyStartAtLogin(app, false, 'linux', env);
    expect(existsSync(file)).toBe(false);
  });
});
