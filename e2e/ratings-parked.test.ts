// A rating the rounds cannot encode is parked with its reason (training/parking.ts), and the Ratings screen shows it:
// in Chromium against a real `rein serve` with the demo model, two such ratings (a neutral score of text that is not
// the model's own, and an on-policy turn whose stored token id is outside the model's vocabulary) go through a real
// training round, which parks them before it selects (and then has nothing to train, so it fails saying so); the
// Ratings screen says how many are parked, what to do, and each one's reason; the status counts them apart from
// pending. Screenshot: e2e/artifacts/ratings-parked.png.
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
  await serve.call('useDemoModel', {});
  await serve.call('setSettings', { values: { 'training.auto': false } });
});

afterAll(() => closeApp(app));

async function rated(eventId: string, extra: Record<string, unknown>, value: 'good' | 'bad' | 3): Promise<number> {
  const r = await serve.post('/v1/turns', { source: 'api', session: 'parked', eventId, ...extra });
  expect(r.status).toBe(201);
  const turnId = (r.body as { turn: { id: number } }).turn.id;
  return (await serve.call('rate', { turnId, value })).rating.id;
}

describe('parked ratings', () => {
  it('a round parks what it cannot encode, and the Ratings screen shows each with its reason', async () => {
    const modelId = (await serve.call('status', {})).model.id;
    const neutral = await rated('p-1', { prompt: 'reverse a list', response: 'Use a loop.' }, 3);
    const foreign = await rated('p-2', { prompt: 'sort a list', response: 'Use sorted().', tokens: [999_999], logprobs: [-0.5], policy: { modelId, temperature: 1, topP: 1 } }, 'good');
    expect((await serve.call('status', {})).pending).toBe(2);

    const { runId } = await serve.call('startTraining', {});
    await expect.poll(async () => (await serve.call('listRuns', {})).find((r) => r.id === runId)?.status, { timeout: 120_000, interval: 500 }).toBe('failed');
    const run = (await serve.call('listRuns', {})).find((r) => r.id === runId)!;
    expect(run.error).toMatch(/no rated turn to train on .*2 parked/);
    const status = await serve.call('status', {});
    expect([status.pending, status.parked]).toEqual([0, 2]);

    await page.goto(serve.openUrl);
    await openTab(page, 'Ratings');
    const note = page.getByTestId('parked-note');
    await expect.poll(() => note.innerText()).toMatch(/^2 ratings are parked: a round could not encode their answers, so they do not count toward the next round\. .*rate it Good or Bad instead/);
    const reasonOf = (ratingId: number) => page.locator(`[data-rating-id="${ratingId}"]`).getByTestId('rating-parked').innerText();
    await expect.poll(() => reasonOf(neutral)).toMatch(/^Parked: a neutral \(3 of 5\) rating of off-policy text carries no preference$/);
    await expect.poll(() => reasonOf(foreign)).toMatch(/^Parked: stored response token 0 has id 999999, outside the vocabulary \(size \d+\)$/);
    expect(await page.locator(`[data-rating-id="${foreign}"]`).innerText()).toMatch(/parked: not counted toward a round/);
    await page.screenshot({ path: artifactPath('ratings-parked.png'), fullPage: true });
    expect(await axeViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
  }, 180_000);
});
