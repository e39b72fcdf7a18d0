// The screenshot sweep, in Chromium against a real `rein serve` with the demo model and a few rated answers: every
// screen at 1440 and 390 px, light and dark, saved as e2e/artifacts/screens/<screen>-<width>-<theme>.png (the folder
// CI keeps), with axe at 0 serious or critical violations and nothing sticking out sideways on each (checkScreens).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { ARTIFACTS, checkScreens, closeApp, openApp, openTab } from './harness.ts';
import type { App, ServeChild } from './harness.ts';

let app: App;
let serve: ServeChild;
let page: Page;
const problems: string[] = [];
const DIR = path.join(ARTIFACTS, 'screens');
const SCREENS = ['Rate', 'Chat', 'Arena', 'Training', 'Versions', 'Ratings', 'Setup', 'Settings'];

beforeAll(async () => {
  app = await openApp({ problems });
  ({ serve, page } = app);
  mkdirSync(DIR, { recursive: true });
  await serve.call('useDemoModel', {});
  await serve.call('setSettings', { values: { 'training.auto': false } });
  for (let i = 0; i < 6; i++) {
    const { turn } = await serve.call('captureTurn', {
      source: 'api',
      eventId: `sweep-${i}`,
      prompt: `How do I reverse a list in Python? (${i})`,
      response: i % 2 === 0 ? 'Use `xs[::-1]` or `list(reversed(xs))`.' : 'Lists cannot be reversed.',
    });
    if (i < 5) await serve.call('rate', { turnId: turn!.id, value: i % 2 === 0 ? 'good' : 'bad' });
  }
});

afterAll(async () => {
  await closeApp(app);
});

describe('screenshot sweep', () => {
  it('at 390 px every tab is in sight, none hidden past the edge', async () => {
    await page.goto(serve.openUrl);
    await page.setViewportSize({ width: 390, height: 844 });
    const hidden = await page.evaluate<string[]>(
      `[...document.querySelectorAll('.nav-tab')].filter((t) => t.getBoundingClientRect().right > document.documentElement.clientWidth).map((t) => t.textContent)`,
    );
    expect(hidden).toEqual([]);
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('every screen at 1440 and 390 px, light and dark, with axe clean', { timeout: 300_000 }, async () => {
    await page.goto(serve.openUrl);
    for (const screen of SCREENS) {
      await openTab(page, screen);
      await page.waitForTimeout(500);
      await checkScreens(page, screen.toLowerCase(), (name) => page.screenshot({ path: path.join(DIR, `${name}.png`), fullPage: true }));
    }
    expect(problems).toEqual([]);
  });
});
