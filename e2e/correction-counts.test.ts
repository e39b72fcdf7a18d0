// A rating with a correction trains the answer as Bad and the correction as Good, whatever was pressed with it
// (training/data.ts encodeRound): the card says so and shows Bad as the rating in force. Checked in Chromium
// against a real `rein serve`, reading the stored rating through the core's API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { axeViolations, closeApp, openApp, openTab } from './harness.ts';
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

describe('a rating with a correction', () => {
  it('shows which it counts as: Bad, with the better answer as Good', async () => {
    const r = await serve.post('/v1/turns', { source: 'claude-code', session: 'cc', eventId: 'cc-1', prompt: 'reverse a list', response: 'Use a loop.' });
    const turnId = (r.body as { turn: { id: number } }).turn.id;
    await page.goto(serve.openUrl);
    await openTab(page, 'Rate');
    const card = page.getByTestId('rating-card');
    await card.getByRole('button', { name: 'Score, correction, tags' }).click();
    await card.getByRole('textbox', { name: /Better answer/ }).fill('Use `xs[::-1]`.');
    await card.getByRole('button', { name: 'Score 3 of 5' }).click();
    await expect.poll(async () => (await serve.call('getTurn', { turnId })).rating).toMatchObject({ kind: 'scale', scale: 3, correction: 'Use `xs[::-1]`.' });
    // The only answer: the card stays on it.
    const state = card.getByTestId('card-state');
    await expect.poll(() => state.innerText()).toMatch(/Rated 3\/5, with a correction: it counts as Bad, and your better answer as Good\./);
    const group = card.getByRole('group', { name: 'Rate this answer' });
    expect(await group.getByRole('button', { name: /^Bad/ }).getAttribute('aria-pressed')).toBe('true');
    expect(await group.getByRole('button', { name: /^Good/ }).getAttribute('aria-pressed')).toBe('false');
    expect(await axeViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
  });
});
