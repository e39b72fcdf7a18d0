// Issue #15 items 6, 8 and 10 and the time-based trigger, in Chromium against a real `rein serve` (real core, real
// store, the demo model, a real training round): the wizard (Next needs a model, presets in plain words with round
// times, jargon behind "Technical details", the graphics line, other clients, the model's name in the header); the
// charts (loss and KL apart with titled axes, the gate's KL drawn and named apart from the training batch's, per-day
// bars from the first rated day, time ticks that never repeat, a text summary of each); the Training sentence that
// follows training.schedule; and the 390 px layout (header in two rows, one scrolling tab row, badges on one line).
// Screenshots at 1440 and 390 px, light and dark, go to e2e/artifacts/cwl-*.png; axe runs on every screen shown.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { artifactPath, axeViolations, checkScreens, closeApp, openApp, openTab, overflowing } from './harness.ts';
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

const shot = (name: string) => page.screenshot({ path: artifactPath(`cwl-${name}.png`), fullPage: true });
const tab = (name: string) => openTab(page, name);
const next = () => page.getByTestId('wizard').getByRole('button', { name: 'Next' });

const screens = (name: string) => checkScreens(page, name, shot);

let n = 0;
const turn = (response: string) => ({ source: 'claude-code', session: 'cwl', eventId: `cwl-${++n}`, prompt: 'fix the bug in this file', response, model: 'demo' });

describe('the wizard (item 8)', () => {
  it('says what this computer can train with, in words that agree with the graphics line', async () => {
    await page.goto(serve.openUrl);
    await page.getByTestId('hardware').waitFor();
    const facts = await page.getByTestId('hardware').innerText();
    const trainWith = await page.getByTestId('can-train-with').innerText();
    if (/Graphics\s+none found/.test(facts)) {
      // Without a graphics card, a GPU provider is named only as what the build could use, never as available.
      expect(trainWith).toMatch(/^the processor \(cpu\)/);
      expect(trainWith.split('.')[0]).not.toMatch(/webgpu|cuda|directml|coreml/);
    }
    await screens('wizard-welcome');
    // Where to train is chosen here too, and saved as soon as it changes.
    const device = page.getByLabel('Train on');
    expect(await device.inputValue()).toBe('auto');
    await device.selectOption({ label: 'The processor (cpu)' });
    await expect.poll(async () => (await serve.call('getSettings', {}))['training.device']).toBe('cpu');
    await device.selectOption({ label: 'Automatic: a GPU that passes a test step, else the processor' });
    await expect.poll(async () => (await serve.call('getSettings', {}))['training.device']).toBe('auto');
  });

  it('offers other clients the proxy URL with a copy button and a curl line that reads the token file', async () => {
    await next().click();
    await page.getByTestId('agents').waitFor();
    const other = page.getByTestId('other-clients');
    expect(await other.getByTestId('proxy-url').textContent()).toBe('http://127.0.0.1:7434/v1');
    const curl = (await other.getByTestId('proxy-curl').textContent())!;
    expect(curl).toContain('curl http://127.0.0.1:7434/v1/chat/completions');
    expect(curl).toContain(`Authorization: Bearer $(cat ${serve.home}/token)`);
    await app.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: serve.url });
    await other.getByRole('button', { name: 'Copy URL' }).click();
    await other.getByText('Copied.').waitFor();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe('http://127.0.0.1:7434/v1');
    await screens('wizard-agents');
  });

  it('Next stays disabled until a model is chosen; the header then names the model, not its folder', async () => {
    await next().click();
    await page.getByRole('button', { name: 'Try with the demo model' }).waitFor();
    expect(await next().isDisabled()).toBe(true);
    // The step list cannot skip past it either.
    expect(await page.getByRole('button', { name: '4. How hard to train' }).isDisabled()).toBe(true);
    await screens('wizard-model-unset');
    await page.getByRole('button', { name: 'Try with the demo model' }).click();
    await page.getByTestId('model-chosen').waitFor();
    await expect.poll(() => next().isDisabled()).toBe(false);
    const status = await serve.call('status', {});
    expect(status.model.id).toMatch(/[/\\]demo$/);
    expect(await page.getByTestId('header-model').innerText()).toBe('demo');
    expect(await page.getByTestId('header-model').getAttribute('title')).toBe(status.model.id);
  });

  it('presets are plain words with a round time each; β, the KL budget and the rank wait behind Technical details', async () => {
    await next().click();
    await page.locator('[data-preset="careful"]').waitFor();
    for (const name of ['careful', 'balanced', 'aggressive']) {
      expect(await page.getByTestId(`preset-time-${name}`).innerText()).toMatch(/^A round takes (under a minute|about \d+ (min|h)( \d+ min)?)\.$/);
    }
    const wizard = page.getByTestId('wizard');
    expect(await wizard.innerText()).not.toMatch(/β|KL budget|rank|the demo model uses this/);
    await screens('wizard-preset');
    await page.getByText('Technical details').click();
    await expect.poll(() => wizard.innerText()).toMatch(/KL weight β/);
    expect(await page.locator('.preset-table tbody tr').count()).toBe(3);
    await shot('wizard-preset-details-1440-light');
    await next().click();
    await page.getByRole('button', { name: 'Send a test turn' }).waitFor();
    expect(await wizard.innerText()).toContain('Model: demo.');
  });
});

describe('the charts (item 6) and the schedule sentence', () => {
  it('a round draws loss and KL apart, with titled axes, the gate lines named apart from the training batch, and text summaries', { timeout: 300_000 }, async () => {
    await serve.call('setSettings', { values: { 'training.auto': false } });
    const good = ['please fix the bug', 'thanks run the test', 'please update the file', 'thanks check this line'];
    const bad = ['no', 'bug error', 'no the build error', 'remove that file'];
    for (let i = 0; i < 8; i++) {
      for (const [text, value] of [[good[i % 4]!, 'good'], [bad[i % 4]!, 'bad']] as const) {
        const r = await serve.post('/v1/turns', turn(text));
        await serve.call('rate', { turnId: (r.body as { turn: { id: number } }).turn.id, value });
      }
    }
    await tab('Training');
    // Every rating is from today: one day of bars, not thirteen empty days before it.
    await page.getByTestId('days-chart').waitFor();
    await expect.poll(() => page.getByTestId('days-chart').locator('.recharts-xAxis-tick-labels .recharts-cartesian-axis-tick-value').allTextContents()).toHaveLength(1);
    expect(await page.getByTestId('days-summary').textContent()).toMatch(/1 day, % Good: 50% \(8 of 16\) in all\./);
    expect(await page.getByTestId('days-latest').textContent()).toMatch(/^\d\d-\d\d, % Good: 50% \(8 of 16\)\.$/);
    // The reward baseline's time axis: ticks never read the same.
    const emaTicks = page.getByTestId('ema-chart').locator('.recharts-xAxis-tick-labels .recharts-cartesian-axis-tick-value');
    await expect.poll(() => emaTicks.count()).toBeGreaterThan(0);
    const ticks = await emaTicks.allTextContents();
    expect(new Set(ticks).size).toBe(ticks.length);
    expect(await page.getByTestId('ema-summary').textContent()).toMatch(/^Reward baseline \(the running EMA of rewards\) over time\. \d+ points from/);

    await page.getByRole('button', { name: 'Train now' }).click();
    await page.getByTestId('confirm').getByRole('button', { name: 'Start training' }).click();
    await page.getByTestId('live-run').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('live-run').textContent()).toContain('Training-batch KL');
    await expect.poll(async () => (await serve.call('listRuns', {}))[0]?.status, { timeout: 240_000, interval: 1000 }).not.toBe('running');
    await page.getByTestId('live-run').waitFor({ state: 'detached', timeout: 30_000 });
    const run = (await serve.call('listRuns', {}))[0]!;
    expect(run.status).toBe('succeeded');
    const gate = (run.metrics as { gate: { kl: number; klBudget: number } }).gate;
    await page.getByRole('button', { name: 'Curve' }).first().click();
    const loss = page.getByTestId('loss-chart');
    const kl = page.getByTestId('kl-chart');
    await kl.locator('.recharts-line').first().waitFor();
    expect(await loss.locator('.recharts-label').allTextContents()).toEqual(['Training step', 'Loss']);
    expect(await kl.locator('.recharts-label').allTextContents()).toEqual(expect.arrayContaining(['Training step', 'KL (nats)']));
    // One y-axis per chart: loss and KL no longer share a chart with two unlabelled axes.
    expect(await loss.locator('.recharts-yAxis').count()).toBe(1);
    expect(await kl.locator('.recharts-yAxis').count()).toBe(1);
    expect(await kl.locator('.recharts-reference-line').count()).toBe(2);
    expect(await page.getByTestId('kl-legend').locator('li').allInnerTexts()).toEqual(['Training-batch KL', 'Held-out KL (gate)', "Gate's KL budget"]);
    expect(await page.getByTestId('loss-summary').textContent()).toMatch(/^Loss went from -?[\d.e-]+ at step \d+ to -?[\d.e-]+ at step \d+/);
    const klSummary = (await page.getByTestId('kl-summary').textContent())!;
    expect(klSummary).toMatch(/^Training-batch KL went from/);
    expect(klSummary).toContain('Held-out KL (gate): ');
    expect(klSummary).toContain(`Gate's KL budget: ${gate.klBudget.toFixed(3)}.`);
    await screens('training-charts');
  });

  it("the Training screen's sentence follows training.schedule, and the Settings screen offers it", async () => {
    await serve.call('setSettings', { values: { 'training.auto': true, 'training.schedule': { mode: 'nightly', everyMinutes: 60, at: '02:00', minPending: 4 } } });
    await page.reload();
    await tab('Training');
    await page.getByTestId('dash-pending').waitFor();
    await expect.poll(() => page.getByTestId('training-state').textContent()).toBe(
      'A round starts by itself once a night, between 02:00 and 08:00, when at least 4 ratings are waiting and the computer is idle. Train now starts one at once.',
    );
    // The count to reach is the schedule's minimum (4), whatever is pending now (the round above may have been
    // rejected, which leaves its ratings pending).
    const { pending } = await serve.call('status', {});
    expect(await page.getByTestId('dash-pending').textContent()).toBe(pending < 4 ? `${pending} of 4 ratings waiting` : `${pending} ratings waiting, enough for a round (it needs 4)`);
    await serve.call('setSettings', { values: { 'training.schedule': { mode: 'interval', everyMinutes: 120, at: '02:00', minPending: 6 } } });
    await expect.poll(() => page.getByTestId('training-state').textContent()).toBe(
      'A round starts by itself at most once every 2 hours, when at least 6 ratings are waiting. Train now starts one at once.',
    );
    await tab('Settings');
    const row = page.locator('[data-setting="training.schedule"]');
    await row.waitFor();
    expect(await row.innerText()).toContain('When rounds start');
    expect(await row.innerText()).toMatch(/nightly: once a night/);
    await row.scrollIntoViewIfNeeded();
    await row.screenshot({ path: artifactPath('cwl-settings-schedule-1440-light.png') });
    expect(await axeViolations(page), 'Settings').toEqual([]);
  });
});

describe('390 px (item 10)', () => {
  it('the header takes two rows, every tab is in sight (two rows at most), and badges stay on one line', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.setViewportSize({ width: 390, height: 844 });
      for (const name of ['Rate', 'Training', 'Versions', 'Ratings', 'Setup', 'Settings']) {
        await tab(name);
        const header = await page.locator('header.status').boundingBox();
        expect(header!.height, `header on ${name}`).toBeLessThanOrEqual(90);
        // Every tab in sight, in at most two rows: a scrolling row hid Ratings, Setup and Settings behind a faint fade.
        const tabs = await page.locator('.nav-tab').evaluateAll((els) => els.map((e) => ({ top: Math.round(e.getBoundingClientRect().top), right: e.getBoundingClientRect().right })));
        expect(new Set(tabs.map((t) => t.top)).size, `tab rows on ${name}`).toBeLessThanOrEqual(2);
        expect(tabs.filter((t) => t.right > 390), `tabs past the edge on ${name}`).toEqual([]);
        const wrapped = await page.evaluate<string[]>(
          `[...document.querySelectorAll('.badge')].filter((e) => e.getClientRects().length > 1 || e.getBoundingClientRect().height > 2 * parseFloat(getComputedStyle(e).fontSize)).map((e) => e.textContent)`,
        );
        expect(wrapped, `wrapped badges on ${name}`).toEqual([]);
        await expect.poll(() => overflowing(page), { message: `${name} at 390 px`, timeout: 5000 }).toEqual({ elements: [], pageScroll: 0 });
        expect(await axeViolations(page), `${name} (${scheme})`).toEqual([]);
        await shot(`${name.toLowerCase()}-390-${scheme}`);
      }
    }
    await page.locator('.nav-tab').last().click();
    expect(await page.locator('h1').textContent()).toBe('Settings');
    expect(problems).toEqual([]);
  });
});
