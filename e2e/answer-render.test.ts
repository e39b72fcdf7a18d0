// An answer shows as the agent wrote it, on every surface that shows one (the Rate card, the popup page, the
// Ratings detail): literal HTML as text (never run, never dropped), single line breaks kept, any script, and the
// turn's tool calls (Bash with its output, Edit with its diff, a file Read) listed folded under the answer. The turn
// is captured the way Claude Code's is: its Stop hook posts to /hooks/claude, and the core reads the transcript JSONL
// (tool_use and tool_result blocks) that the hook names. Screenshots go to e2e/artifacts/answer-*.png.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Locator, Page } from 'playwright-core';
import { artifactPath, axeViolations, checkScreens, closeApp, openApp, openTab } from './harness.ts';
import type { App, ServeChild } from './harness.ts';

let app: App;
let serve: ServeChild;
let page: Page;
let popupPage: Page;
let dir: string;
let turnId: number;
const problems: string[] = [];

const PROMPT = 'Fix the <Parser> bug\nand keep the 日本語 messages';
// The exact example of the report, a script block on its own lines, and text in three scripts. A rendered <img>
// with a failing src runs its onerror; a rendered script would run too: either sets the flag.
const ANSWER = [
  'All 42 tests pass now.',
  'For example <img src=x onerror="window.__reinXss=1"> and <script>window.__reinXss=2</script>',
  'The count is **42**, one line below the first.',
  '<script>window.__reinXss=3</script>',
  'مرحبا بالعالم',
  '日本語のテキスト 🎉',
  '```ts',
  'const x: number = 42;',
  '```',
].join('\n');

const SESSION = 'render-e2e';
const line = (type: 'user' | 'assistant', content: unknown) => JSON.stringify({ type, isSidechain: false, sessionId: SESSION, message: { role: type, content } });
const TRANSCRIPT = [
  line('user', PROMPT),
  line('assistant', [
    { type: 'text', text: 'Running the tests first.' },
    { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'npm test -- parser', description: 'Run the parser tests' } },
  ]),
  line('user', [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'FAIL parser.test.ts\n  expected 3:14, got undefined\nTests 41 passed, 1 failed' }]),
  line('assistant', [{ type: 'tool_use', id: 'toolu_2', name: 'Read', input: { file_path: '/repo/src/parser.ts' } }]),
  line('user', [{ type: 'tool_result', tool_use_id: 'toolu_2', content: '     1\texport function parse(tokens) {\n     2\t  return tokens.map(toNode);\n     3\t}' }]),
  line('assistant', [
    {
      type: 'tool_use',
      id: 'toolu_3',
      name: 'Edit',
      input: { file_path: '/repo/src/parser.ts', old_string: 'export function parse(tokens) {\n  return tokens.map(toNode);', new_string: 'export function parse(tokens) {\n  return tokens.map((t) => toNode(t, t.pos));' },
    },
  ]),
  line('user', [{ type: 'tool_result', tool_use_id: 'toolu_3', content: 'The file /repo/src/parser.ts has been updated.' }]),
  line('assistant', [{ type: 'text', text: ANSWER }]),
].join('\n');

beforeAll(async () => {
  app = await openApp({ problems });
  ({ serve, page } = app);
  dir = mkdtempSync(path.join(tmpdir(), 'rein-render-'));
});

afterAll(async () => {
  await closeApp(app);
  rmSync(dir, { recursive: true, force: true });
});

/** The answer as written shows in `scope`: HTML as text, no element made from it, lines kept, markdown rendered. */
async function expectAnswerAsWritten(p: Page, scope: Locator): Promise<void> {
  const answer = scope.locator('.md.answer');
  await answer.getByText('All 42 tests pass now.', { exact: false }).waitFor();
  const text = await answer.innerText();
  expect(text).toContain('For example <img src=x onerror="window.__reinXss=1"> and <script>window.__reinXss=2</script>');
  expect(text).toContain('<script>window.__reinXss=3</script>');
  // Single newlines stay line breaks (innerText turns a <br> into "\n", a collapsed newline into a space).
  expect(text).toMatch(/All 42 tests pass now\.\nFor example/);
  expect(text).toContain('مرحبا بالعالم\n日本語のテキスト 🎉');
  expect(await answer.locator('img, script').count()).toBe(0);
  expect(await answer.locator('strong').textContent()).toBe('42');
  expect(await answer.locator('pre code.language-ts').count()).toBe(1);
  expect(await p.evaluate('window.__reinXss')).toBeUndefined();
  const prompt = await scope.locator('.md.prompt').innerText();
  expect(prompt).toMatch(/Fix the <Parser> bug\nand keep the 日本語 messages/);
}

/** The turn's three tool calls listed in order, folded; each opens to its input and output. */
async function expectToolCalls(scope: Locator): Promise<void> {
  const calls = scope.getByTestId('tool-calls');
  const items = calls.locator('details');
  await expect.poll(() => items.count(), { timeout: 10_000 }).toBe(3);
  for (let i = 0; i < 3; i++) expect(await items.nth(i).getAttribute('open')).toBeNull();
  const summaries = await items.locator('summary').allInnerTexts();
  expect(summaries[0]).toMatch(/Bash.*npm test -- parser/s);
  expect(summaries[1]).toMatch(/Read.*\/repo\/src\/parser\.ts/s);
  expect(summaries[2]).toMatch(/Edit.*\/repo\/src\/parser\.ts/s);
  // Folded: the output is not shown until the call is opened.
  const bashOut = items.nth(0).getByText('expected 3:14, got undefined', { exact: false });
  expect(await bashOut.isVisible()).toBe(false);
  await items.nth(0).locator('summary').click();
  await bashOut.waitFor();
  expect(await items.nth(0).innerText()).toContain('Tests 41 passed, 1 failed');
  await items.nth(1).locator('summary').click();
  await items.nth(1).getByText('return tokens.map(toNode);', { exact: false }).first().waitFor();
  await items.nth(2).locator('summary').click();
  const diff = items.nth(2).getByTestId('tool-diff');
  await diff.waitFor();
  const removed = await diff.locator('.diff-del').allInnerTexts();
  const added = await diff.locator('.diff-add').allInnerTexts();
  expect(removed.join('\n')).toContain('return tokens.map(toNode);');
  expect(added.join('\n')).toContain('return tokens.map((t) => toNode(t, t.pos));');
  // The unchanged first line is context, neither removed nor added.
  expect([...removed, ...added].join('\n')).not.toContain('export function parse');
  expect(await items.nth(2).innerText()).toContain('The file /repo/src/parser.ts has been updated.');
}

describe('an answer shows as written, with its tool calls, on the card, the popup and the Ratings detail', () => {
  it('captures a Claude Code turn with tool calls through the Stop hook and its transcript', async () => {
    await page.goto(serve.openUrl);
    await page.getByTestId('wizard').waitFor();
    await page.getByRole('button', { name: 'Rate', exact: true }).click();
    await page.getByText('No answers to rate yet').waitFor();
    await serve.call('setSettings', { values: { 'popup.timeoutSeconds': 0 } });
    const other = await app.browser.newContext({ viewport: { width: 420, height: 900 } });
    popupPage = await other.newPage();
    popupPage.on('pageerror', (e) => problems.push(`popup pageerror: ${e.message}`));
    const hash = serve.openUrl.indexOf('#');
    await popupPage.goto(`${serve.openUrl.slice(0, hash)}?window=popup${serve.openUrl.slice(hash)}`);
    await popupPage.getByText('Nothing new to rate right now.').waitFor();

    const transcript = path.join(dir, `${SESSION}.jsonl`);
    writeFileSync(transcript, TRANSCRIPT + '\n');
    const r = await serve.post('/hooks/claude', { hook_event_name: 'Stop', session_id: SESSION, prompt_id: 'p-1', transcript_path: transcript, last_assistant_message: ANSWER });
    expect(r).toEqual({ status: 200, body: {} });
    const turns = await serve.call('listTurns', {});
    expect(turns.total).toBe(1);
    turnId = turns.items[0].id;
    const stored = await serve.call('getTurn', { turnId });
    expect(stored.response).toBe(ANSWER);
    expect(stored.context.filter((m) => m.type === 'tool_use').map((m) => m.name)).toEqual(['Bash', 'Read', 'Edit']);
  });

  it('the Rate card', async () => {
    const card = page.getByTestId('rating-card');
    await expect.poll(() => card.getAttribute('data-turn-id'), { timeout: 10_000 }).toBe(String(turnId));
    await expectAnswerAsWritten(page, card);
    await expectToolCalls(card);
    // With every call open: axe in both schemes, nothing sticking out at 390 px.
    await checkScreens(page, 'card', (name) => page.screenshot({ path: artifactPath(`answer-${name}.png`), fullPage: true }));
  });

  it('the popup page', async () => {
    const popup = popupPage.getByTestId('popup');
    await popup.waitFor();
    expect(await popup.getAttribute('data-turn-id')).toBe(String(turnId));
    await expectAnswerAsWritten(popupPage, popup);
    await expectToolCalls(popup);
    await popupPage.screenshot({ path: artifactPath('answer-popup.png'), fullPage: true });
    expect(await axeViolations(popupPage)).toEqual([]);
    await popup.getByRole('button', { name: /^Good/ }).click();
    await expect.poll(async () => (await serve.call('getTurn', { turnId })).rating?.kind).toBe('good');
    await popupPage.context().close();
  });

  it('the Ratings detail', async () => {
    await openTab(page, 'Ratings');
    await page.getByTestId('rating-rows').locator(`li[data-turn-id="${turnId}"] button`).click();
    const detail = page.getByTestId('turn-detail');
    await expectAnswerAsWritten(page, detail);
    await expectToolCalls(detail);
    await checkScreens(page, 'detail', (name) => page.screenshot({ path: artifactPath(`answer-${name}.png`), fullPage: true }));
    expect(await page.evaluate('window.__reinXss')).toBeUndefined();
    expect(problems).toEqual([]);
  });
});
