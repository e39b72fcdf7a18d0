// The Ratings history opens a turn in place, under the row that was clicked, in sight; and the Rate inbox holds
// what the user is asked to rate there. Screenshots go to e2e/artifacts/history-*.png and inbox-*.png.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { artifactPath, axeViolations, closeApp, openApp, openTab } from './harness.ts';
import type { App, ServeChild } from './harness.ts';

let app: App;
let serve: ServeChild;
let page: Page;
const problems: string[] = [];

beforeAll(async () => {
  app = await openApp({ problems });
  ({ serve, page } = app);
});

afterAll(() => closeApp(app));

const capture = async (n: number, over: Record<string, unknown> = {}): Promise<number> => {
  const r = await serve.post('/v1/turns', {
    source: 'claude-code',
    session: 'history-e2e',
    eventId: `history-${n}`,
    prompt: `Question ${n}: rename the helper in module ${n}`,
    response: `Renamed it in module ${n}.\nThe tests pass.`,
    ...over,
  });
  expect(r.status).toBe(201);
  return (r.body as { turn: { id: number } }).turn.id;
};

/** Where an element is against the window: its top and bottom in px, and the window's height. */
const place = (p: Page, selector: string) =>
  p.evaluate<{ top: number; bottom: number; height: number }>(`(() => {
    const r = document.querySelector(${JSON.stringify(selector)}).getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, height: window.innerHeight };
  })()`);

describe('the Ratings history opens a turn where it was clicked', () => {
  it('opens the detail right under its row, in sight, for a row at the top and one far down the page', async () => {
    // A full page of ratings (25), newest first.
    for (let n = 1; n <= 25; n++) await serve.call('rate', { turnId: await capture(n), value: n % 3 === 0 ? 'bad' : 'good' });
    await page.goto(serve.openUrl);
    await page.getByTestId('wizard').waitFor();
    await openTab(page, 'Ratings');
    const rows = page.getByTestId('rating-rows').locator(':scope > li');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(25);

    const third = rows.nth(2);
    const thirdId = await third.getAttribute('data-turn-id');
    await third.locator(':scope > button').click();
    await page.getByTestId('turn-detail').getByText(`Question ${25 - 2}:`, { exact: false }).first().waitFor();
    const row3 = await place(page, `[data-testid=rating-rows] > li[data-turn-id="${thirdId}"] > button`);
    const detail3 = await place(page, '[data-testid=turn-detail]');
    // Directly under the clicked row, and its top in the window (it was after all 25 rows, some 2,000 px down).
    expect(detail3.top - row3.bottom).toBeGreaterThanOrEqual(0);
    expect(detail3.top - row3.bottom).toBeLessThan(40);
    expect(detail3.top).toBeLessThan(detail3.height);
    await page.screenshot({ path: artifactPath('history-open-1440.png') });
    expect(await axeViolations(page)).toEqual([]);

    // A row far down: the open detail above closes, and the clicked row and its detail stay in sight.
    const far = rows.nth(21);
    const farId = await far.getAttribute('data-turn-id');
    await far.scrollIntoViewIfNeeded();
    await far.locator(':scope > button').click();
    await page.getByTestId('turn-detail').getByText(`Question ${25 - 21}:`, { exact: false }).first().waitFor();
    expect(await page.getByTestId('turn-detail').count()).toBe(1);
    const row22 = await place(page, `[data-testid=rating-rows] > li[data-turn-id="${farId}"] > button`);
    const detail22 = await place(page, '[data-testid=turn-detail]');
    expect(row22.top).toBeGreaterThanOrEqual(0);
    expect(detail22.top - row22.bottom).toBeLessThan(40);
    expect(detail22.top).toBeLessThan(detail22.height);
    await page.screenshot({ path: artifactPath('history-open-far-1440.png') });

    await page.getByTestId('turn-detail').getByRole('button', { name: 'Close' }).click();
    await page.getByTestId('turn-detail').waitFor({ state: 'detached' });
    expect(problems).toEqual([]);
  });
});
