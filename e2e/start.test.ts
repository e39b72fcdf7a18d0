// `npm start` where Electron cannot run (this machine: no Electron binary, no network, no display): it must try the
// download once, say why it failed in one line, fall back to headless mode serving the UI, and stop cleanly on Ctrl-C.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './harness.ts';

const home = mkdtempSync(path.join(tmpdir(), 'rein-start-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe('npm start without a usable Electron', () => {
  it('falls back to headless mode, serves the UI, and stops on SIGINT', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, REIN_HOME: home, NO_COLOR: '1', DISPLAY: '', WAYLAND_DISPLAY: '' };
    // Point Electron's downloader at a closed local port, so the attempt fails fast and never downloads for real.
    env.ELECTRON_MIRROR = 'http://127.0.0.1:9/';
    const child = spawn(process.execPath, [path.join(ROOT, 'scripts/start.mjs'), '--port', '0'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));

    const url = await new Promise<string>((resolve, reject) => {
      const timer = setInterval(() => {
        const m = /Press Ctrl-C/.test(out) && /^\s+(http:\/\/127\.0\.0\.1:\d+\/)#token=[0-9a-f]+$/m.exec(out);
        if (m) {
          clearInterval(timer);
          resolve(m[1]);
        }
      }, 50);
      void exited.then((code) => {
        clearInterval(timer);
        reject(new Error(`start.mjs exited with ${code}:\n${out}`));
      });
    });
    expect(out).toMatch(/Electron cannot run here: .+\. Starting headless mode instead/);
    expect(out.match(/Electron cannot run here/g)).toHaveLength(1);

    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="root"></div>');
    expect(existsSync(path.join(home, 'server.json'))).toBe(true);

    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(out).toContain('rein start: stopped.');
    expect(existsSync(path.join(home, 'server.json'))).toBe(false);
    expect(existsSync(path.join(home, 'core.lock'))).toBe(false);
  });
});
