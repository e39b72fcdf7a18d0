// Issue #13 item 4 in Chromium against a real `rein serve`: the wizard's model step lists the models on this computer
// the way `rein model list` does (the same discoverModels verb), here an Ollama store written in Ollama's layout (a
// tiny Qwen2 quantized to Q8_0 by our own writer), a manifest whose blob is missing, and an LM Studio file: each with
// where it is, its architecture, weight type, parameters and size, and either "Train this one" or why Rein cannot.
// Next stays disabled until one is chosen; choosing the Ollama model makes `ollama:tiny:q8` the model being trained,
// and the header names it as Ollama does. Screenshots at 1440 and 390 px, light and dark: e2e/artifacts/models-*.png.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { hfToGguf } from '../src-main/node/engine/gguf/convert.ts';
import { writeTinyModel } from '../src-main/node/engine/tiny.ts';
import { writeOllamaModel } from '../src-main/node/system/test-utils/ollama-fixture.ts';
import { artifactPath, checkScreens, closeApp, openApp } from './harness.ts';
import type { App, ServeChild } from './harness.ts';

let root: string;
let app: App;
let serve: ServeChild;
let page: Page;
const problems: string[] = [];

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'rein-e2e-models-'));
  const user = path.join(root, 'user');
  const ollama = path.join(root, 'ollama');
  writeTinyModel(path.join(root, 'tiny'), { arch: 'qwen2', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 128 });
  const q8 = path.join(root, 'tiny-q8_0.gguf');
  hfToGguf(path.join(root, 'tiny'), q8, { type: 'q8_0' });
  writeOllamaModel(ollama, 'tiny', 'q8', q8);
  const gone = path.join(ollama, 'manifests', 'registry.ollama.ai', 'library', 'qwen2.5', '7b');
  mkdirSync(path.dirname(gone), { recursive: true });
  writeFileSync(gone, JSON.stringify({ layers: [{ mediaType: 'application/vnd.ollama.image.model', digest: `sha256:${'c'.repeat(64)}`, size: 4_683_087_332 }] }));
  const lms = path.join(user, '.lmstudio', 'models', 'acme', 'tiny-GGUF');
  mkdirSync(lms, { recursive: true });
  copyFileSync(q8, path.join(lms, 'tiny-Q8_0.gguf'));
  app = await openApp({ serve: { env: { HOME: user, OLLAMA_MODELS: ollama, HF_HUB_CACHE: path.join(root, 'no-hf-cache') } }, problems });
  ({ serve, page } = app);
}, 180_000);

afterAll(async () => {
  await closeApp(app);
  rmSync(root, { recursive: true, force: true });
});

const next = () => page.getByTestId('wizard').getByRole('button', { name: 'Next' });
const choice = (id: string) => page.locator(`[data-testid="model-choice"][data-model-id="${id}"]`);

const screens = (name: string) => checkScreens(page, name, (n) => page.screenshot({ path: artifactPath(`models-${n}.png`), fullPage: true }));

describe('the wizard\'s model step (issue #13 item 4)', () => {
  it('lists Ollama and LM Studio models with what they are and whether Rein can train them; Next waits for a choice', async () => {
    await page.goto(serve.openUrl);
    await page.getByTestId('wizard').waitFor();
    await next().click();
    await next().click();
    await choice('ollama:tiny:q8').waitFor();
    expect(await next().isDisabled()).toBe(true);
    const listed = await serve.call('discoverModels', {});
    // The step shows what the verb (and `rein model list`) answers, one row per model.
    expect(await page.getByTestId('model-choice').count()).toBe(listed.length);
    expect(await choice('ollama:tiny:q8').innerText()).toMatch(/^tiny:q8\s+Ollama · qwen2 · Q8_0 · 10 M parameters · 16 MB\s+Train this one$/);
    const lms = listed.find((m) => m.source === 'lmstudio')!;
    expect(await choice(lms.id).innerText()).toMatch(/LM Studio · qwen2 · Q8_0/);
    expect(await choice('ollama:qwen2.5:7b').innerText()).toMatch(/Rein cannot train it: the Ollama manifest .* points to blob sha256-c{64}, which is not in .* \(an interrupted pull\? `ollama pull qwen2\.5:7b` again\)/);
    expect(await choice('ollama:qwen2.5:7b').getByRole('button').count()).toBe(0);
    await screens('step-unset');
  });

  it('choosing the Ollama model trains it by its id, enables Next, and the header names it as Ollama does', async () => {
    await choice('ollama:tiny:q8').getByRole('button', { name: 'Train this one: tiny:q8' }).click();
    await page.getByTestId('model-chosen').waitFor();
    await expect.poll(() => next().isDisabled()).toBe(false);
    expect(await choice('ollama:tiny:q8').getByRole('button').innerText()).toBe('Chosen');
    const status = await serve.call('status', {});
    expect(status.model).toEqual({ id: 'ollama:tiny:q8', configured: true });
    expect(await page.getByTestId('header-model').innerText()).toBe('tiny:q8');
    await screens('step-chosen');
    expect(problems).toEqual([]);
  });
});
