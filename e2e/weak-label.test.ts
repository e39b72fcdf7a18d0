// Weak labels on the Rate card in Chromium against a real `rein serve`: the next prompt of a session is read as a
// label on the answer before it, the card says so ("Rein read this as Bad because you wrote: '…'"), and one key
// confirms it (Y), flips it (F) or dismisses it (D). The tray popup shows the same label on the answer it is showing
// when the next prompt of that session arrives, with the same keys. Every check reads what the core STORED.
// Screenshots: e2e/artifacts/weak-label.png, weak-label-popup-420.png and weak-label-popup-390.png.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { artifactPath, axeViolations, closeApp, openApp, openPopupPage, openTab, overflowing } from './harness.ts';
import type { App, ServeChild } from './harness.ts';

let app: App;
let serve: ServeChild;
let page: Page;
const problems: string[] = [];

beforeAll(async () => {
  app = await openApp({ problems, timeout: 10_000 });
  ({ serve, page } = app);
});

afterAll(() => closeApp(app));

let n = 0;
async function capture(session: string, prompt: string): Promise<number> {
  n++;
  const r = await serve.post('/v1/turns', { source: 'claude-code', session, eventId: `weak-${n}`, prompt, response: `Answer ${n}: done, see the diff.` });
  expect(r.status).toBe(201);
  return (r.body as { turn: { id: number } }).turn.id;
}

const card = () => page.getByTestId('rating-card');
const stored = async (turnId: number) => (await serve.call('getTurn', { turnId })).rating;

describe('weak labels on the card', () => {
  it('shows the label read from the next prompt, and Y confirms it as the rating', async () => {
    await page.goto(serve.openUrl);
    await page.getByTestId('wizard').waitFor();
    await openTab(page, 'Rate');
    const first = await capture('weak-1', 'make the parser accept trailing commas');
    const second = await capture('weak-1', "no, that's wrong, the test still fails");
    await expect.poll(() => card().getAttribute('data-turn-id')).toBe(String(second));
    // The newest answer has no reaction yet: no label.
    expect(await page.getByTestId('weak-label').count()).toBe(0);
    await page.keyboard.press('1');
    await expect.poll(async () => (await stored(second))?.kind).toBe('good');
    // The card moves on to the answer the second prompt reacted to, with what Rein read from it.
    await expect.poll(() => card().getAttribute('data-turn-id')).toBe(String(first));
    const label = page.getByTestId('weak-label');
    await expect.poll(() => label.locator('p').textContent()).toBe("Rein read this as Bad because you wrote: 'no, that's wrong'");
    await page.screenshot({ path: artifactPath('weak-label.png') });
    expect(await axeViolations(page)).toEqual([]);
    await page.keyboard.press('y');
    await expect.poll(async () => (await stored(first))?.kind).toBe('bad');
    expect(await stored(first)).toMatchObject({ rater: 'implicit:says-wrong' });
    await expect.poll(() => page.getByTestId('weak-label').count()).toBe(0);
  });

  it('F rates it the other way, D dismisses the label and leaves the answer unrated', async () => {
    const a = await capture('weak-2', 'rename getUser to fetchUser');
    const b = await capture('weak-2', 'perfect, thanks');
    await expect.poll(() => card().getAttribute('data-turn-id')).toBe(String(b));
    await page.keyboard.press('2');
    await expect.poll(async () => (await stored(b))?.kind).toBe('bad');
    await expect.poll(() => card().getAttribute('data-turn-id')).toBe(String(a));
    await expect.poll(() => page.getByTestId('weak-label').locator('p').textContent()).toBe("Rein read this as Good because you wrote: 'perfect'");
    await page.keyboard.press('f');
    await expect.poll(async () => (await stored(a))?.kind).toBe('bad');
    expect(await stored(a)).toMatchObject({ rater: 'implicit-flipped:praise' });

    const c = await capture('weak-3', 'add a retry loop');
    const d = await capture('weak-3', 'nope, still broken');
    await expect.poll(() => card().getAttribute('data-turn-id')).toBe(String(d));
    await page.keyboard.press('1');
    await expect.poll(async () => (await stored(d))?.kind).toBe('good');
    await expect.poll(() => card().getAttribute('data-turn-id')).toBe(String(c));
    await page.getByTestId('weak-label').waitFor();
    await page.keyboard.press('d');
    await expect.poll(() => page.getByTestId('weak-label').count()).toBe(0);
    expect(await stored(c)).toBeNull();
    expect((await serve.call('turnSignals', { turnId: c })).label).toBeNull();
    expect(problems).toEqual([]);
  });

  it('the popup shows the label read from the next prompt on the answer it shows, and the key on screen answers it', async () => {
    const popup = await openPopupPage(app, problems);
    try {
      const box = popup.getByTestId('popup');
      const label = box.getByTestId('weak-label');
      const key = async (name: string) => (await label.getByRole('button', { name: new RegExp(`^${name}`) }).locator('kbd').textContent())!;
      const a = await capture('weak-4', 'make the date parser accept ISO weeks');
      await expect.poll(() => box.getAttribute('data-turn-id'), { timeout: 20_000 }).toBe(String(a));
      expect(await label.count()).toBe(0);
      // The user's next prompt in the same session: the popup, still on the first answer, reads it as a label there.
      const b = await capture('weak-4', "no, that's wrong, the test still fails");
      await expect.poll(() => label.locator('p').textContent(), { timeout: 20_000 }).toBe("Rein read this as Bad because you wrote: 'no, that's wrong'");
      expect(await box.getAttribute('data-turn-id')).toBe(String(a));
      expect(await axeViolations(popup), 'popup with a weak label').toEqual([]);
      await popup.screenshot({ path: artifactPath('weak-label-popup-420.png'), fullPage: true });
      await popup.setViewportSize({ width: 390, height: 640 });
      await expect.poll(() => overflowing(popup), { message: 'popup at 390 px', timeout: 5000 }).toEqual({ elements: [], pageScroll: 0 });
      await popup.screenshot({ path: artifactPath('weak-label-popup-390.png'), fullPage: true });
      // The key the Confirm button shows confirms it: the rating is the label's, and the popup moves on.
      expect(await key('Confirm')).toBe('Y');
      await popup.keyboard.press(await key('Confirm'));
      await expect.poll(async () => (await stored(a))?.kind).toBe('bad');
      expect(await stored(a)).toMatchObject({ rater: 'implicit:says-wrong' });
      await expect.poll(() => box.getAttribute('data-turn-id')).toBe(String(b));

      // Flip: the popup is on b when "perfect, thanks" comes in; F rates b the other way.
      const c = await capture('weak-4', 'perfect, thanks');
      await expect.poll(() => label.locator('p').textContent(), { timeout: 20_000 }).toBe("Rein read this as Good because you wrote: 'perfect'");
      expect(await key('Flip')).toBe('F');
      await popup.keyboard.press(await key('Flip'));
      await expect.poll(async () => (await stored(b))?.kind).toBe('bad');
      expect(await stored(b)).toMatchObject({ rater: 'implicit-flipped:praise' });
      await expect.poll(() => box.getAttribute('data-turn-id')).toBe(String(c));

      // Dismiss: the label goes, the answer stays on the popup unrated.
      await capture('weak-4', 'nope, still broken');
      await label.waitFor({ timeout: 20_000 });
      expect(await key('Dismiss')).toBe('D');
      await popup.keyboard.press(await key('Dismiss'));
      await expect.poll(() => label.count()).toBe(0);
      expect(await stored(c)).toBeNull();
      expect(await box.getAttribute('data-turn-id')).toBe(String(c));
      expect(problems).toEqual([]);
    } finally {
      await popup.context().close();
    }
  });
});
