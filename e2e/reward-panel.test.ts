// The reward model on the Training screen, in Chromium against a real `rein serve` with the demo model: trained on a
// handful of ratings, it says there are too few to judge and prints no interval (it printed "AUROC 0.00 [0.00, 0.00]
// on 1+1"); it explains AUROC in a sentence and plots the held-out scores for Good and Bad; axe finds nothing serious.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { artifactPath, axeViolations, closeApp, openApp, openTab } from './harness.ts';
import type { App, ServeChild } from './harness.ts';

let app: App;
let serve: ServeChild;
let page: Page;
const problems: string[] = [];

beforeAll(async () => {
  app = await openApp({ problems, timeout: 30_000 });
  ({ serve, page } = app);
  await serve.call('useDemoModel', {});
  await serve.call('setSettings', { values: { 'training.auto': false } });
});

afterAll(async () => {
  await closeApp(app);
});

describe('reward model panel', () => {
  it('with few ratings: "too few ratings to judge yet", no interval, AUROC in words and a chart of held-out scores', { timeout: 180_000 }, async () => {
    for (let i = 0; i < 12; i++) {
      const good = i % 2 === 0;
      const { turn } = await serve.call('captureTurn', {
        source: 'api',
        eventId: `reward-${i}`,
        prompt: `Question ${i}: how do I read a file in Python?`,
        response: good ? `Use \`with open(path) as f: text = f.read()\` (${i}).` : `I don't know, sorry (${i}).`,
      });
      await serve.call('rate', { turnId: turn!.id, value: good ? 'good' : 'bad' });
    }
    const trained = await serve.call('trainRewardModel', {});
    expect(trained.model, trained.reason ?? '').not.toBeNull();
    const h = trained.model!.metrics.heldout;
    expect(Math.min(h.positives, h.negatives)).toBeLessThan(5);

    await page.goto(serve.openUrl);
    await openTab(page, 'Training');
    const line = page.getByTestId('reward-line');
    await line.waitFor();
    const text = await line.innerText();
    expect(text).toMatch(/held-out AUROC: too few ratings to judge yet \(\d+ Good and \d+ Bad held out; it needs 5 of each\)/);
    expect(text).not.toMatch(/\[\d\.\d\d, \d\.\d\d\]/);
    const panel = page.getByRole('region', { name: 'Reward model' });
    if (h.positives + h.negatives > 0) {
      await panel.getByText('AUROC is the chance that the reward model scores a Good answer above a Bad one').waitFor();
      await panel.getByRole('img', { name: /chance of Good for held-out answers/ }).waitFor();
    }
    await panel.screenshot({ path: artifactPath('reward-panel-1440-light.png') });
    expect(await axeViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
  });
});
