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
afterAll(() => rmSync(home, { recursive: true, force: true }));

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

describe('the built Electron main, driven through a stand-in electron module', () => {
  it('starts the core, opens a sandboxed window, serves verbs over IPC to that window only, and quits cleanly', async () => {
    const env = { ...process.env, REIN_HOME: home, NO_COLOR: '1' };
    // The app listens on the server.port setting; point it at a free port so it cannot collide with anything.
    const set = spawnSync(process.execPath, [path.join(ROOT, 'bin/rein.mjs'), 'settings', 'set', `server.port=${await freePort()}`], { env, encoding: 'utf8' });
    expect(set.status, set.stderr).toBe(0);

    const run = spawnSync(process.execPath, ['--import', path.join(ROOT, 'e2e/electron-stub/register.mjs'), path.join(ROOT, 'out/main/index.js')], {
      env,
      encoding: 'utf8',
      timeout: 30_000,
    });
    const line = run.stdout.split('\n').find((l) => l.startsWith('REPORT '));
    expect(line, `no report; exit ${run.status}\n${run.stdout}\n${run.stderr}`).toBeDefined();
    const report = JSON.parse(line!.slice('REPORT '.length));
    expect(run.status).toBe(0);

    expect(report.windows).toHaveLength(1);
    expect(report.windows[0].webPreferences).toMatchObject({ sandbox: true, contextIsolation: true, nodeIntegration: false });
    expect(report.preloadExists).toBe(true);
    expect(report.windows[0].webPreferences.preload).toBe(path.join(ROOT, 'out/preload/index.cjs'));
    expect(report.loaded).toEqual([{ file: path.join(ROOT, 'out/renderer/index.html'), exists: true }]);
    expect(report.permissionGranted).toBe(false);
    expect(report.openHandler).toEqual({ action: 'deny' });

    expect(report.calls.capture).toMatchObject({ created: true, turn: { source: 'api', eventId: 'stub-1' } });
    expect(report.calls.rate.status.ratings.good).toBe(1);
    expect(report.errors.stranger).toMatch(/^rein-error:\{"code":"forbidden"/);
    expect(report.errors.unknownVerb).toMatch(/^rein-error:\{"code":"bad_input".*"field":"verb"/);
    expect(report.sent).toEqual(expect.arrayContaining([['rein:event', 'turnCaptured'], ['rein:event', 'ratingAdded']]));

    expect(report.quit).toBe(true);
    // runServe's close ran: the home's lock and server.json are gone, so `rein serve` or the app can start again.
    expect(existsSync(path.join(home, 'core.lock'))).toBe(false);
    expect(existsSync(path.join(home, 'server.json'))).toBe(false);
  });
});
