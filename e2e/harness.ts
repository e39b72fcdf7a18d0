// e2e helpers: a real `rein serve` child on a temp REIN_HOME and a free port, an authenticated API client for it,
// and Debian Chromium through playwright-core (shared/notes/TOOLCHAIN.md, "Browser tests").
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expect } from 'vitest';
import type { VerbInput, VerbName, VerbOutput } from '../src-main/common/api.ts';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const ARTIFACTS = path.join(ROOT, 'e2e/artifacts');
const CHROMIUM = process.env.REIN_E2E_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

export interface ServeChild {
  home: string;
  /** http://127.0.0.1:PORT/ */
  url: string;
  /** The address `rein serve` printed, with `#token=…`. */
  openUrl: string;
  token: string;
  output: () => string;
  /** What it wrote to stderr alone: its log. */
  stderr: () => string;
  port: number;
  call<V extends VerbName>(verb: V, input: VerbInput<V>): Promise<VerbOutput<V>>;
  post(pathname: string, body: unknown): Promise<{ status: number; body: unknown }>;
  /** The child's pid, and whether it is still running (a crash ends it). */
  pid: number;
  alive: () => boolean;
  /** SIGKILL, as a power cut or the OOM killer would; resolves once it is gone. The home is kept. */
  kill9(): Promise<void>;
  /** SIGTERM, wait for the exit code; the home is deleted unless `keepHome`. */
  stop(opts?: { keepHome?: boolean }): Promise<number | null>;
}

/**
 * Start `rein serve` on a fresh home (or `home`, to restart on the same data) and `port` (default 0: a free one),
 * serving the built renderer; resolves once it printed its address.
 */
export async function startServe(opts: { home?: string; port?: number; env?: NodeJS.ProcessEnv; cwd?: string; renderer?: string } = {}): Promise<ServeChild> {
  const home = opts.home ?? mkdtempSync(path.join(tmpdir(), 'rein-e2e-'));
  const child: ChildProcess = spawn(
    process.execPath,
    [path.join(ROOT, 'bin/rein.mjs'), 'serve', '--show-url', '--port', String(opts.port ?? 0), '--renderer', opts.renderer ?? path.join(ROOT, 'out/renderer')],
    { cwd: opts.cwd ?? ROOT, env: { ...process.env, ...opts.env, REIN_HOME: home, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const openUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`rein serve printed no address within 20 s:\n${out}`)), 20_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /http:\/\/127\.0\.0\.1:\d+\/#token=[0-9a-f]+/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[0]);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`rein serve exited with ${code} before printing its address:\n${out}`));
    });
  });
  const url = openUrl.slice(0, openUrl.indexOf('#'));
  const token = openUrl.slice(openUrl.indexOf('#token=') + '#token='.length);
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const post = async (pathname: string, body: unknown) => {
    const res = await fetch(new URL(pathname, url), { method: 'POST', headers, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as unknown };
  };
  return {
    home,
    url,
    openUrl,
    token,
    output: () => out,
    stderr: () => err,
    port: Number(new URL(url).port),
    async call(verb, input) {
      const r = await post(`/api/${verb}`, input);
      if (r.status !== 200) throw new Error(`${verb}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
      return r.body as never;
    },
    post,
    pid: child.pid!,
    alive: () => child.exitCode === null && child.signalCode === null,
    async kill9() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    async stop(stopOpts = {}) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const code = await exited;
      if (!stopOpts.keepHome) rmSync(home, { recursive: true, force: true });
      return code;
    },
  };
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}

/**
 * Records every console error or warning and uncaught exception of `page` into `problems`, which a suite checks is
 * empty. Chromium also logs each 4xx/5xx response as a console error; suites check statuses themselves. `expected`
 * lets a suite pass a message it provokes on purpose.
 */
export function collectProblems(page: Page, problems: string[], expected: (text: string) => boolean = () => false): void {
  page.on('console', (m) => {
    if (m.text().startsWith('Failed to load resource') || expected(m.text())) return;
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console.${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
}

/** A suite's app: a real `rein serve` and Chromium with one page at 1440×900, light. */
export interface App {
  serve: ServeChild;
  browser: Browser;
  context: BrowserContext;
  page: Page;
}

/**
 * Starts `rein serve` and Chromium side by side and opens the page (not yet navigated); console errors and uncaught
 * exceptions go into `problems` (collectProblems).
 */
export async function openApp(o: { serve?: Parameters<typeof startServe>[0]; problems: string[]; expected?: (text: string) => boolean; timeout?: number }): Promise<App> {
  const [serve, browser] = await Promise.all([startServe(o.serve), launchChromium()]);
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' });
  const page = await context.newPage();
  page.setDefaultTimeout(o.timeout ?? 15_000);
  collectProblems(page, o.problems, o.expected);
  return { serve, browser, context, page };
}

/**
 * The tray popup in its own browser context at 420×640: the Electron popup is the renderer at ?window=popup, and here it
 * runs in Chromium like the main window. Returns once its event stream answers (a turn captured before that reaches it
 * only as a waiting one); its errors go into `problems`.
 */
export async function openPopupPage(app: App, problems: string[]): Promise<Page> {
  const other = await app.browser.newContext({ viewport: { width: 420, height: 640 } });
  const p = await other.newPage();
  p.setDefaultTimeout(10_000);
  p.on('pageerror', (e) => problems.push(`popup pageerror: ${e.message}`));
  p.on('console', (m) => {
    if ((m.type() === 'error' || m.type() === 'warning') && !m.text().startsWith('Failed to load resource')) problems.push(`popup console: ${m.text()}`);
  });
  const url = app.serve.openUrl;
  const hash = url.indexOf('#');
  const live = p.waitForResponse((r) => r.url().includes('/api/events'));
  await p.goto(`${url.slice(0, hash)}?window=popup${url.slice(hash)}`);
  await live;
  return p;
}

/** Closes the page's browser and stops the server, which must exit cleanly (0). */
export async function closeApp(app: App | undefined): Promise<void> {
  await app?.context.close();
  await app?.browser.close();
  if (app !== undefined) expect(await app.serve.stop()).toBe(0);
}

/** Clicks a screen's tab in the navigation. */
export function openTab(page: Page, name: string): Promise<void> {
  return page.getByRole('navigation', { name: 'Screens' }).getByRole('button', { name: new RegExp(`^${name}`) }).click();
}

/**
 * A screen at 1440 and 390 px, light and dark: a screenshot of each (`shot` gets name-1440-light and so on), axe in
 * both schemes, nothing sticking out at 390 px (charts follow a new width a frame later, so that is polled). Leaves the
 * page at 1440 px, light.
 */
export async function checkScreens(page: Page, name: string, shot: (name: string) => Promise<unknown>): Promise<void> {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.setViewportSize({ width: 1440, height: 900 });
    await shot(`${name}-1440-${scheme}`);
    expect(await axeViolations(page), `${name} (${scheme})`).toEqual([]);
    await page.setViewportSize({ width: 390, height: 844 });
    await expect.poll(() => overflowing(page), { message: `${name} at 390 px`, timeout: 5000 }).toEqual({ elements: [], pageScroll: 0 });
    await shot(`${name}-390-${scheme}`);
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1440, height: 900 });
}

export function artifactPath(name: string): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  return path.join(ARTIFACTS, name);
}

/**
 * What sticks out past the right edge of the window (issue #15 item 10): each element named with its classes, and
 * how far the page scrolls sideways. Content inside a box that scrolls or clips sideways (the tab row on a phone, a
 * code block) is that box's business, not the page's. (A string to evaluate: this file is type-checked without the
 * DOM library.)
 */
export async function overflowing(page: Page): Promise<{ elements: string[]; pageScroll: number }> {
  const elements = await page.evaluate<string[]>(`(() => {
    const edge = document.documentElement.clientWidth + 0.5;
    const clipped = (el) => {
      for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
        const o = getComputedStyle(p).overflowX;
        if (o === 'auto' || o === 'scroll' || o === 'hidden' || o === 'clip') return p.getBoundingClientRect().right <= edge;
      }
      return false;
    };
    const name = (el) => el.tagName.toLowerCase() + '.' + [...el.classList].join('.');
    const boxes = [...document.querySelectorAll('body *')]
      .filter((el) => el.getBoundingClientRect().right > edge && !clipped(el))
      .map((el) => name(el) + ' right=' + Math.round(el.getBoundingClientRect().right));
    // Text that runs past its own box (an unbreakable word) moves no element's edge: it is named by its parent.
    const texts = [];
    const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    for (let n = walk.nextNode(); n !== null; n = walk.nextNode()) {
      range.selectNodeContents(n);
      const right = range.getBoundingClientRect().right;
      if (right > edge && n.parentElement && n.parentElement.getBoundingClientRect().right <= edge && !clipped(n)) {
        texts.push('text in ' + name(n.parentElement) + ' right=' + Math.round(right) + ': ' + n.textContent.slice(0, 60));
      }
    }
    return boxes.concat(texts).slice(0, 8);
  })()`);
  const pageScroll = await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
  return { elements, pageScroll };
}

/** axe-core's serious and critical violations on the page as it is now, as "rule: selectors". */
export async function axeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate<boolean>('typeof axe !== "undefined"'))) {
    await page.evaluate(readFileSync(path.join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8'));
  }
  return page.evaluate<string[]>(`axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')))`);
}
