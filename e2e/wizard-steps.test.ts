// The wizard's step list: "4. How hard to train" opened from the list shows the presets, as Next does (it showed
// only a button that loaded them); the agents step's "Run it on my local model" checkbox sits on a line of its own
// above the button (its words ran on into the button). Chromium against a real `rein serve`; screenshots go to
// e2e/artifacts/wizard-steps-*.png, axe on each.
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
});

afterAll(() => closeApp(app));

const pill = (name: string) => page.getByRole('list', { name: 'Setup steps' }).getByRole('button', { name });

describe('the wizard steps', () => {
  it("the local-model checkbox's label ends above the button after it", async () => {
    await page.goto(serve.openUrl);
    await openTab(page, 'Setup');
    await pill('2. Agents').click();
    const agents = page.getByTestId('agents');
    const label = agents.locator('label').filter({ hasText: 'Run it on my local model' }).first();
    await label.waitFor();
    const button = label.locator('xpath=following-sibling::button[1]');
    const l = (await label.boundingBox())!;
    const b = (await button.boundingBox())!;
    expect(l.y + l.height).toBeLessThanOrEqual(b.y + 0.5);
    await page.screenshot({ path: artifactPath('wizard-steps-agents.png'), fullPage: true });
    expect(await axeViolations(page)).toEqual([]);
  });

  it('"4. How hard to train" from the step list shows the presets with their times', async () => {
    await page.reload();
    await openTab(page, 'Setup');
    await pill('4. How hard to train').click();
    await expect.poll(() => page.getByTestId('preset-time-balanced').count(), { timeout: 10_000 }).toBe(1);
    expect(await page.getByRole('button', { name: 'Show the presets for the chosen model' }).count()).toBe(0);
    await page.screenshot({ path: artifactPath('wizard-steps-preset.png'), fullPage: true });
    expect(await axeViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
  });
});
