// Chat conversations are kept in the store, in Chromium against a real `rein serve` (the demo model answering through
// Rein's own model server): a reload reopens the conversation with its system prompt, answers and their ratings; the
// list reopens an earlier conversation after "New chat"; a deleted one is gone from the list and from the store, and
// its answer stays a rated turn.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { closeApp, openApp, openTab } from './harness.ts';
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

const SYSTEM = 'You are a terse reviewer.';
const QUESTION = 'How do I sort a dict by value in Python?';
const log = () => page.getByTestId('chat-log');

describe('chat conversations are kept', () => {
  it('a reload reopens the conversation: system prompt, question, answer and its rating', { timeout: 240_000 }, async () => {
    await page.goto(serve.openUrl);
    await openTab(page, 'Chat');
    await page.getByRole('button', { name: 'System prompt' }).click();
    await page.getByLabel('System prompt (sent first').fill(SYSTEM);
    await page.getByLabel('Message', { exact: true }).fill(QUESTION);
    await page.getByLabel('Message', { exact: true }).press('Enter');
    const answer = page.getByTestId('chat-answer').last();
    await answer.getByRole('group', { name: 'Rate this answer' }).waitFor({ timeout: 180_000 });
    // Who answered and the answer itself: everything above the rating controls, which change when it is rated.
    const answered = async (a: typeof answer) => (await a.innerText()).split('\nGood\n')[0]!;
    const text = await answered(answer);
    expect(text).toContain('Answered by');
    await answer.getByRole('button', { name: /^Good/ }).click();
    await answer.getByText('Rated Good.').waitFor();

    await page.reload();
    await openTab(page, 'Chat');
    await expect.poll(() => log().getByTestId('chat-question').innerText()).toBe(QUESTION);
    expect(await page.getByLabel('System prompt (sent first').inputValue()).toBe(SYSTEM);
    const again = page.getByTestId('chat-answer').last();
    expect(await answered(again)).toBe(text);
    await again.getByText('Rated Good.').waitFor();
  });

  it('lists conversations: "New chat" starts another, the list reopens the first, and Delete forgets it', async () => {
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByText('Ask your local model anything').waitFor();
    await page.getByText('Conversations').click();
    const list = page.getByRole('list', { name: 'Conversations' });
    await list.getByRole('button', { name: QUESTION, exact: true }).click();
    await expect.poll(() => log().getByTestId('chat-question').innerText()).toBe(QUESTION);
    const [kept] = await serve.call('listChats', {});
    expect(kept).toMatchObject({ title: QUESTION, count: 2 });
    const turnId = (await serve.call('getChat', { id: kept!.id })).messages[1]!.turnId!;
    await list.getByRole('button', { name: `Delete conversation: ${QUESTION}` }).click();
    await page.getByText('Ask your local model anything').waitFor();
    expect(await serve.call('listChats', {})).toEqual([]);
    // Its answer is still a turn with its rating: deleting a conversation forgets only the conversation.
    expect((await serve.call('getTurn', { turnId })).rating).toMatchObject({ kind: 'good' });
    await page.reload();
    await openTab(page, 'Chat');
    await page.getByText('Ask your local model anything').waitFor();
    expect(problems).toEqual([]);
  });
});
