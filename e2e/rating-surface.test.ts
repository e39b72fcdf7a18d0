// The rating surface in Chromium against a real `rein serve`: whatever a person presses first (the big Good/Bad, the
// key shown on it), what they typed under "Score, correction, tags" is stored with the rating; U takes back the
// rating just given (not the next, unrated turn the card moved on to) and says what it undid; the main window's card
// offers the same options as the popup; the popup rates answers that were waiting before it opened; the card's
// rating bar stays on screen while a long answer is read; "Show more" lists every earlier answer the badge counts.
// Every check reads the STORED rating through the core's API. Screenshots go to e2e/artifacts/surface-*.png.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { artifactPath, axeViolations, checkScreens, closeApp, openApp, openPopupPage, openTab } from './harness.ts';
import type { App, ServeChild } from './harness.ts';

let app: App;
let serve: ServeChild;
let page: Page;
let popup: Page;
/** The answers that waited before the popup opened, oldest first. */
let waiting: number[] = [];
const problems: string[] = [];

beforeAll(async () => {
  app = await openApp({ problems, timeout: 10_000 });
  ({ serve, page } = app);
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()} ${r.url()}`);
  });
});

afterAll(() => closeApp(app));

let n = 0;
async function capture(over: Record<string, unknown> = {}): Promise<number> {
  n++;
  const r = await serve.post('/v1/turns', {
    source: 'claude-code',
    session: 'surface-1',
    eventId: `surface-${n}`,
    prompt: `Question ${n}: why does the parser drop the last token?`,
    response: `Answer ${n}: the loop stops one short; use <= instead of <.`,
    ...over,
  });
  expect(r.status).toBe(201);
  return (r.body as { turn: { id: number } }).turn.id;
}

const stored = async (turnId: number) => (await serve.call('getTurn', { turnId })).rating;
const card = () => page.getByTestId('rating-card');

const openPopup = () => openPopupPage(app, problems);

describe('the main window card', () => {
  it('offers score, correction, tags and a comment, and key 2 stores them with the Bad', async () => {
    await page.goto(serve.openUrl);
    await page.getByTestId('wizard').waitFor();
    await openTab(page, 'Rate');
    const id = await capture();
    await expect.poll(() => card().getAttribute('data-turn-id')).toBe(String(id));
    await card().getByRole('button', { name: 'Score, correction, tags' }).click({ timeout: 3000 });
    await card().getByRole('textbox', { name: /Better answer/ }).fill('Use <= so the last token is kept.');
    await card().getByRole('textbox', { name: /Tags/ }).fill('off by one, parser');
    await card().getByRole('textbox', { name: /Comment/ }).fill('Right idea, wrong line.');
    // The card with its options open: axe finds nothing serious, and nothing sticks out at 390 px, light or dark.
    await checkScreens(page, 'surface-card-open', (name) => page.screenshot({ path: artifactPath(`${name}.png`), fullPage: true }));
    // Out of the text field (a key typed there is text), then the key shown on the Bad button.
    await card().getByRole('heading').click();
    await page.keyboard.press('2');
    await expect.poll(() => stored(id)).toMatchObject({ kind: 'bad', correction: 'Use <= so the last token is kept.', tags: ['off by one', 'parser'], comment: 'Right idea, wrong line.' });
    await page.screenshot({ path: artifactPath('surface-card-details-1440.png'), fullPage: true });
  });

  it('U takes back the rating just given, after the card moved on, and says what it undid', async () => {
    const older = await capture();
    const newer = await capture();
    await expect.poll(() => card().getAttribute('data-turn-id')).toBe(String(newer));
    await page.keyboard.press('1');
    // Rated, the card moves on to the answer that still waits.
    await expect.poll(() => card().getAttribute('data-turn-id')).toBe(String(older));
    expect(await stored(newer)).toMatchObject({ kind: 'good' });
    await page.keyboard.press('u');
    await expect.poll(async () => (await serve.call('getTurn', { turnId: newer })).state).toBe('unrated');
    expect(await stored(older)).toBeNull();
    // The undone answer is back on the card, to rate again, with what U did.
    await expect.poll(() => card().getAttribute('data-turn-id')).toBe(String(newer));
    expect(await page.getByTestId('undo-note').textContent()).toBe(`Undid Good on turn ${newer}.`);
    // The Undo button does the same as U.
    await card().getByRole('button', { name: /^Bad/ }).click();
    await expect.poll(() => stored(newer)).toMatchObject({ kind: 'bad' });
    await expect.poll(() => card().getAttribute('data-turn-id')).toBe(String(older));
    await card().getByRole('button', { name: /^Undo/ }).click();
    await expect.poll(async () => (await serve.call('getTurn', { turnId: newer })).state).toBe('unrated');
    await expect.poll(() => page.getByTestId('undo-note').textContent()).toBe(`Undid Bad on turn ${newer}.`);
  });
});

describe('the popup', () => {
  it('the big Bad keeps the typed correction and tags; so does key 1', async () => {
    popup = await openPopup();
    await popup.getByText('Nothing new to rate right now.').waitFor();
    const box = popup.getByTestId('popup');
    const first = await capture();
    // The turn reaches the popup over its event stream (slow on a busy machine).
    await expect.poll(() => box.getAttribute('data-turn-id'), { timeout: 20_000 }).toBe(String(first));
    await box.getByRole('button', { name: 'Score, correction, tags' }).click();
    await box.getByRole('textbox', { name: /Better answer/ }).fill('Keep the last token.');
    await box.getByRole('textbox', { name: /Tags/ }).fill('off by one');
    await popup.screenshot({ path: artifactPath('surface-popup-correction.png'), fullPage: true });
    await box.getByRole('button', { name: /^Bad/ }).click();
    await expect.poll(() => stored(first)).toMatchObject({ kind: 'bad', correction: 'Keep the last token.', tags: ['off by one'] });

    const second = await capture();
    await expect.poll(() => box.getAttribute('data-turn-id'), { timeout: 20_000 }).toBe(String(second));
    await box.getByRole('button', { name: 'Score, correction, tags' }).click();
    await box.getByRole('textbox', { name: /Comment/ }).fill('Short and right.');
    await box.getByRole('heading').click();
    await popup.keyboard.press('1');
    await expect.poll(() => stored(second)).toMatchObject({ kind: 'good', comment: 'Short and right.' });
  });

  it('rates the answers that were waiting before it opened', async () => {
    // Two answers wait from the main window's test (the older one, and the newer one whose rating was undone).
    waiting = (await serve.call('listTurns', { state: 'unrated' })).items.map((t) => t.id).sort((a, b) => a - b);
    expect(waiting).toHaveLength(2);
    await popup.getByText('2 answers wait for a rating.').waitFor({ timeout: 3000 });
    expect(await axeViolations(popup), 'popup with nothing new').toEqual([]);
    await popup.screenshot({ path: artifactPath('surface-popup-empty.png') });
    await popup.getByRole('button', { name: 'Rate them here' }).click();
    const box = popup.getByTestId('popup');
    await expect.poll(() => box.getAttribute('data-turn-id')).toBe(String(waiting[0]));
    expect(await popup.getByTestId('popup-queue').textContent()).toBe('1 of 2');
    expect(await axeViolations(popup), 'popup').toEqual([]);
    await popup.screenshot({ path: artifactPath('surface-popup-waiting.png') });
    await popup.keyboard.press('1');
    await expect.poll(() => stored(waiting[0]!)).toMatchObject({ kind: 'good' });
  });

  it('U takes back the popup\'s last rating and shows that answer again', async () => {
    const box = popup.getByTestId('popup');
    const older = waiting[0]!;
    await popup.keyboard.press('u');
    await expect.poll(async () => (await serve.call('getTurn', { turnId: older })).state).toBe('unrated');
    await expect.poll(() => box.getAttribute('data-turn-id')).toBe(String(older));
    expect(await popup.getByTestId('undo-note').textContent()).toBe(`Undid Good on turn ${older}.`);
    await box.getByRole('button', { name: 'Score, correction, tags' }).click();
    expect(await axeViolations(popup), 'popup with its options open').toEqual([]);
    await popup.screenshot({ path: artifactPath('surface-popup-undone.png') });
    await popup.context().close();
  });
});

describe('reading and listing', () => {
  it('the rating bar stays on screen while a long answer is read', async () => {
    // The answers still waiting are rated elsewhere first, so the new one takes the card.
    for (const t of (await serve.call('listTurns', { state: 'unrated' })).items) await serve.call('rate', { turnId: t.id, value: 'good' });
    const lines = Array.from({ length: 160 }, (_, i) => `- step ${i + 1}: check the lexer output for case ${i + 1}`);
    const id = await capture({ response: ['## Plan', '', ...lines].join('\n') });
    await expect.poll(() => card().getAttribute('data-turn-id')).toBe(String(id));
    await card().getByRole('button', { name: /^Show more/ }).click();
    // Scrolled to the middle of the answer: the Good button is still in the window.
    await page.evaluate('document.querySelector("[data-testid=rating-card] .md.answer").scrollIntoView({ block: "center" })');
    await page.evaluate('window.scrollBy(0, 800)');
    const inView = await page.evaluate<boolean>(`(() => {
      const b = [...document.querySelectorAll('[data-testid=rating-card] button')].find((x) => x.textContent.trim().startsWith('Good')).getBoundingClientRect();
      return b.top >= 0 && b.bottom <= window.innerHeight;
    })()`);
    await page.screenshot({ path: artifactPath('surface-sticky-1440.png') });
    expect(inView).toBe(true);
    await page.keyboard.press('1');
    await expect.poll(() => stored(id)).toMatchObject({ kind: 'good' });
  });

  it('"Show more" lists every earlier answer the badge counts', async () => {
    for (let i = 0; i < 56; i++) await capture();
    const total = (await serve.call('listTurns', { limit: 1 })).total;
    expect(total).toBeGreaterThan(60);
    await page.evaluate('window.scrollTo(0, 0)');
    // The card shows one answer; the list and its badge count the others.
    await expect.poll(() => page.locator('#recent-title .count').textContent()).toBe(String(total - 1));
    const rows = page.getByTestId('recent-turns').locator('li');
    const more = page.getByRole('button', { name: /^Show more answers/ });
    await more.scrollIntoViewIfNeeded({ timeout: 3000 });
    await page.screenshot({ path: artifactPath('surface-recent-more-1440.png') });
    await more.click();
    await expect.poll(() => rows.count()).toBe(total - 1);
    await expect(more.count()).resolves.toBe(0);
    await rows.last().scrollIntoViewIfNeeded();
    await page.screenshot({ path: artifactPath('surface-recent-all-1440.png') });
    expect(await axeViolations(page), 'Rate').toEqual([]);
    expect(problems).toEqual([]);
  });
});
