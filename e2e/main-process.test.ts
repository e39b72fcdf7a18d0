// The built Electron main (out/main/index.js) under plain Node with a stand-in for the 'electron' module
// (e2e/electron-stub/), since the Electron binary cannot be downloaded here. What runs is the real bundle: the
// single-instance lock, the core and capture server from runServe, the window's security settings, the IPC adapter
// against the real core, event forwarding, and a clean quit that releases the Rein home.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './harness.ts';

const home = mkdtempSync(path.join(tmpdir(), 'rein-main-'));
const xdgConfig = mkdtempSync(path.join(tmpdir(), 'rein-xdg-'));
afterAll(() => {
  rmSync(home, { recursive: true, force: true });
  rmSync(xdgConfig, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

describe('the built Electron main, driven through a stand-in electron module', () => {
  it('starts the core, opens sandboxed windows, serves verbs over IPC to them only, runs the tray, popup, notifications and login item, and quits cleanly', async () => {
    const env = { ...process.env, REIN_HOME: home, XDG_CONFIG_HOME: xdgConfig, NO_COLOR: '1' };
    // The app listens on the server.port setting; point it at a free port so it cannot collide with anything.
    const args = ['settings', 'set', `server.port=${await freePort()}`, 'app.startAtLogin=true'];
    const set = spawnSync(process.execPath, [path.join(ROOT, 'bin/rein.mjs'), ...args], { env, encoding: 'utf8' });
    expect(set.status, set.stderr).toBe(0);

    const run = spawnSync(process.execPath, ['--import', path.join(ROOT, 'e2e/electron-stub/register.mjs'), path.join(ROOT, 'out/main/index.js')], {
      env,
      encoding: 'utf8',
      timeout: 50_000,
    });
    const line = run.stdout.split('\n').find((l) => l.startsWith('REPORT '));
    expect(line, `no report; exit ${run.status}\n${run.stdout}\n${run.stderr}`).toBeDefined();
    const report = JSON.parse(line!.slice('REPORT '.length));
    expect(run.status).toBe(0);
    // The Codex hook entry is bundled as its own file, which the installer points Codex at, and it does not run
    // inside the app (it once did, on Electron's argv: "rein hook: unknown hook").
    expect(run.stderr).not.toContain('rein hook');
    const hook = spawnSync(process.execPath, [path.join(ROOT, 'out/main/hook-entry.mjs'), 'nope'], { env, encoding: 'utf8' });
    expect([hook.status, hook.stderr]).toEqual([2, 'rein hook: unknown hook "nope" (codex-notify | codex-hook)\n']);

    expect(report.timeouts).toBeUndefined();
    expect(report.windows).toHaveLength(2);
    for (const w of report.windows) {
      expect(w.webPreferences).toMatchObject({ sandbox: true, contextIsolation: true, nodeIntegration: false });
      expect(w.webPreferences.preload).toBe(path.join(ROOT, 'out/preload/index.cjs'));
    }
    expect(report.preloadExists).toBe(true);
    const html = path.join(ROOT, 'out/renderer/index.html');
    expect(report.loaded).toEqual([
      { file: html, exists: true, query: { window: 'popup' } },
      { file: html, exists: true, query: null },
    ]);
    expect(report.permissionGranted).toBe(false);
    expect(report.openHandler).toEqual({ action: 'deny' });

    expect(report.calls.capture).toMatchObject({ created: true, turn: { source: 'api', eventId: 'stub-1' } });
    expect(report.calls.rate.status.ratings.good).toBe(1);
    expect(report.errors.stranger).toMatch(/^rein-error:\{"code":"forbidden"/);
    expect(report.errors.unknownVerb).toMatch(/^rein-error:\{"code":"bad_input".*"field":"verb"/);
    expect(report.sent).toEqual(expect.arrayContaining([['rein:event', 'turnCaptured'], ['rein:event', 'ratingAdded']]));

    // The popup: frameless, on top, off the taskbar; a captured turn shows it without focus, beside the tray
    // (the stand-in tray reports a 24 px icon at x 1800 in a top panel; the popup is pulled inside the work area).
    expect(report.windows[0]).toMatchObject({ frame: false, alwaysOnTop: true, skipTaskbar: true, show: false });
    expect(report.popupAlwaysOnTopLevel).toBe('pop-up-menu');
    expect(report.popupAfterCapture).toEqual({ visible: true, focused: false });
    expect(report.popup[0]).toEqual({ shown: 'inactive', bounds: { x: 1920 - 380, y: 28, width: 380, height: 260 } });
    expect(report.popupAfterRate).toEqual({ visible: false });
    expect(report.focused).not.toContain('popup');

    // The tray: its menu, the pending count in the tooltip, and each item calling the core.
    expect(report.tray.menuAtStart).toEqual(['0 of 32 ratings pending', 'separator', 'Open dashboard', 'Pause capture', 'Train now', 'separator', 'Quit Rein']);
    expect(report.tray.tooltipAtStart).toBe('Rein: 0 of 32 ratings pending');
    expect(report.tray.tooltipAfterRate).toBe('Rein: 1 of 32 ratings pending');
    expect(report.calls.settingsPaused['capture.paused']).toBe(true);
    expect(report.tray.imageWhenPaused).toBe(path.join(ROOT, 'resources/icons/trayPaused.png'));
    expect(report.errors.captureWhilePaused).toMatch(/capture is paused/);
    expect(report.notifications[0]).toMatchObject({ title: 'Training did not start', body: expect.stringMatching(/no model is set up/) });
    // Train now on the demo model ran the built worker entry: the round finished and its version was announced.
    expect(existsSync(path.join(ROOT, 'out/main/worker.js'))).toBe(true);
    expect(report.calls.runs[0]).toMatchObject({ status: 'succeeded', trigger: 'manual' });
    expect(report.sent).toEqual(expect.arrayContaining([['rein:event', 'trainingProgress'], ['rein:event', 'adapterChanged']]));
    expect(report.notifications[1].title).toMatch(/^Adapter v1 (activated|rejected)$/);
    expect(report.notifications[1].body.length).toBeGreaterThan(0);

    // Start at login: Linux gets an XDG autostart entry that starts the app hidden; switching the setting off removes it.
    expect(report.autostartAtStart).toMatch(/^\[Desktop Entry\]\n(.*\n)*Exec=\S+ \/stub\/app --hidden\n/);
    expect(report.autostartAfterOff).toBe(false);

    // Closing the dashboard leaves the app in the tray (the popup window stays); Quit in the tray menu quits.
    expect(report.windowsAfterClose).toEqual(['popup']);
    expect(report.tray.destroyed).toBe(true);
    expect(report.quit).toBe(true);
    // runServe's close ran: the home's lock and server.json are gone, so `rein serve` or the app can start again.
    expect(existsSync(path.join(home, 'core.lock'))).toBe(false);
    expect(existsSync(path.join(home, 'server.json'))).toBe(false);
  });
});
