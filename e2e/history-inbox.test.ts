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

describe('the Rate inbox holds what the user is asked to rate there', () => {
  it('leaves out Chat and Arena answers (an arena tie included) and counts only the rest; the history names them in words', async () => {
    await page.goto(serve.openUrl);
    await page.getByRole('button', { name: 'Rate', exact: true }).click();
    const agentTurn = await capture(100, { prompt: 'Add a --dry-run flag to the deploy script' });
    // What the Chat screen and an arena tie leave behind: answers stored under Rein's own sources, unrated (a tie
    // rates neither side). captureTurn is the verb the capture proxy stores them through.
    const chatIds: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await serve.call('captureTurn', { source: 'chat', session: 'app-chat-mwzrmup4-ne2yy7', eventId: `chat-${i}`, prompt: `Chat question ${i}`, response: `Chat answer ${i}` });
      chatIds.push(r.turn!.id);
    }
    for (const side of ['a', 'b']) {
      await serve.call('captureTurn', { source: 'arena', session: 'arena-1764300000-abc123', eventId: `arena-${side}`, prompt: 'Arena question', response: `Arena answer ${side}` });
    }

    const card = page.getByTestId('rating-card');
    await expect.poll(() => card.getAttribute('data-turn-id'), { timeout: 10_000 }).toBe(String(agentTurn));
    const tab = page.getByRole('navigation', { name: 'Screens' }).getByRole('button', { name: /^Rate/ });
    await expect.poll(() => tab.textContent(), { timeout: 10_000 }).toBe('Rate1');
    const recent = page.getByTestId('recent-turns');
    await recent.waitFor();
    expect(await recent.getByText(/Chat question|Arena question/).count()).toBe(0);
    await page.getByTestId('inbox-filters').getByRole('button', { name: 'Unrated' }).click();
    await page.getByText('Every answer has a rating or was set aside.').waitFor();
    expect(await page.locator('body').innerText()).not.toContain('app-chat-');
    await page.getByTestId('inbox-filters').getByRole('button', { name: 'Recent' }).click();
    await page.screenshot({ path: artifactPath('inbox-agents-only-1440.png'), fullPage: true });
    expect(await axeViolations(page)).toEqual([]);
    const status = await serve.call('status', {});
    expect(status.turns).toMatchObject({ unrated: 6, toRate: 1 });

    // A Chat answer rated on the Chat screen shows in the history as "from Chat", without its generated session id.
    await serve.call('rate', { turnId: chatIds[0]!, value: 'good' });
    await openTab(page, 'Ratings');
    const row = page.getByTestId('rating-rows').locator(`:scope > li[data-turn-id="${chatIds[0]}"]`);
    await expect.poll(() => row.locator('.turn-meta').textContent(), { timeout: 10_000 }).toMatch(/^from Chat · /);
    await row.locator(':scope > button').click();
    await expect.poll(() => page.locator('#detail-title').textContent()).toBe('from Chat ');
    expect(await page.locator('body').innerText()).not.toContain('app-chat-');
    await page.screenshot({ path: artifactPath('history-from-chat-1440.png') });
    expect(problems).toEqual([]);
  });
});
