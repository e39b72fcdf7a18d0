// Issue #14 items 1 and 2 in Chromium against a real `rein serve` (real core and store, the demo model served by
// Rein's own llama.cpp model server behind the capture proxy, a real training round):
//   - a chat answer streams (chatToken events over the SSE stream) and is rated inline: Good, then 3/5, then a
//     correction pre-filled with the answer; each stored on the chat's turn, which is on-policy with its version;
//   - an arena vote is stored as a pair (both answers rated) and shows in the version's win rate on the Versions
//     screen, with the versions revealed only after the vote.
// Screenshots of Chat, Arena and Versions at 1440 and 390 px, light and dark, go to e2e/artifacts/chat-*.png; axe
// runs on each.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { styleRule } from '../src-main/node/demo/corpus.ts';
import { TRAINING_PROMPTS } from '../src-main/node/demo/learning.ts';
import { artifactPath, checkScreens, closeApp, openApp, openTab } from './harness.ts';
import type { App, ServeChild } from './harness.ts';

let app: App;
let serve: ServeChild;
let page: Page;
const problems: string[] = [];
/** chatToken events as any client of the event stream gets them. */
const tokens: { streamId: string; text: string }[] = [];
const events = new AbortController();

beforeAll(async () => {
  app = await openApp({ problems, timeout: 30_000 });
  ({ serve, page } = app);
  await serve.call('useDemoModel', {});
  // Rounds start when this suite asks, not at 32 pending ratings.
  await serve.call('setSettings', { values: { 'training.auto': false } });
  const res = await fetch(new URL('/api/events', serve.url), { headers: { authorization: `Bearer ${serve.token}` }, signal: events.signal });
  void (async () => {
    let buf = '';
    try {
      for await (const chunk of res.body!) {
        buf += Buffer.from(chunk as Uint8Array).toString('utf8');
        let end: number;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, end);
          buf = buf.slice(end + 2);
          if (frame.startsWith('event: chatToken\n')) tokens.push(JSON.parse(frame.slice(frame.indexOf('data: ') + 6)) as { streamId: string; text: string });
        }
      }
    } catch {
      // Aborted at the end.
    }
  })();
});

afterAll(async () => {
  events.abort();
  await closeApp(app);
});

const shot = (name: string) => page.screenshot({ path: artifactPath(`chat-${name}.png`), fullPage: true });
const tab = (name: string) => openTab(page, name);

const screens = (name: string) => checkScreens(page, name, shot);

describe('chat (issue #14 item 1)', () => {
  it('streams an answer from the demo model and stores it on-policy with its version', async () => {
    await page.goto(serve.openUrl);
    await tab('Chat');
    await page.getByText('Ask your local model anything').waitFor();
    await page.getByRole('button', { name: 'System prompt' }).click();
    await page.getByLabel('System prompt (sent first').fill('You are a helpful coding assistant.');
    await page.getByLabel('Message', { exact: true }).fill('How do I reverse a list in Python?');
    await page.getByLabel('Message', { exact: true }).press('Enter');
    const answer = page.getByTestId('chat-answer').last();
    await answer.getByRole('group', { name: 'Rate this answer' }).waitFor({ timeout: 120_000 });
    const turnId = Number(await answer.getAttribute('data-turn-id'));
    expect(turnId).toBeGreaterThan(0);
    const turn = await serve.call('getTurn', { turnId });
    expect(turn).toMatchObject({ source: 'chat', adapterVersion: 0, onPolicy: true, prompt: 'How do I reverse a list in Python?' });
    expect(turn.context).toEqual([{ role: 'system', content: 'You are a helpful coding assistant.' }]);
    expect(turn.tokens!.length).toBe(turn.logprobs!.length);
    // It streamed: several chatToken events of one chat stream, which together spell the stored answer.
    const streams = [...new Set(tokens.filter((t) => t.streamId.startsWith('chat-')).map((t) => t.streamId))];
    expect(streams).toHaveLength(1);
    const pieces = tokens.filter((t) => t.streamId === streams[0]);
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.map((p) => p.text).join('')).toBe(turn.response);
    expect(await answer.innerText()).toContain('Answered by the base model (no adapter)');
  });

  it('rates the answer inline: Good, then 3 of 5, then a correction started from the answer; U takes the last back', async () => {
    const answer = page.getByTestId('chat-answer').last();
    const turnId = Number(await answer.getAttribute('data-turn-id'));
    const live = async () => (await serve.call('listRatings', {})).items.filter((r) => r.turnId === turnId);
    await answer.getByRole('button', { name: /^Good/ }).click();
    await answer.getByText('Rated Good.').waitFor();
    expect(await live()).toMatchObject([{ kind: 'good', rater: 'user' }]);
    // The same controls as the card and the popup: the score, correction, tags and comment fold under one button.
    await answer.getByRole('button', { name: 'Score, correction, tags' }).click();
    await answer.getByRole('button', { name: 'Score 3 of 5' }).click();
    await answer.getByText('Rated 3/5.').waitFor();
    expect(await live()).toMatchObject([{ kind: 'scale', scale: 3 }]);
    await answer.getByRole('button', { name: 'Score, correction, tags' }).click();
    await answer.getByRole('button', { name: 'Start from the answer' }).click();
    const box = answer.getByRole('textbox', { name: /Better answer/ });
    const { response } = await serve.call('getTurn', { turnId });
    expect(await box.inputValue()).toBe(response);
    await box.fill('Use `reversed(xs)` or `xs[::-1]`:\n\n```python\nxs = [1, 2, 3]\nprint(xs[::-1])\n```');
    await answer.getByRole('button', { name: /^Bad/ }).click();
    await answer.getByText('Rated Bad, with a correction.').waitFor();
    expect(await live()).toMatchObject([{ kind: 'bad', correction: expect.stringContaining('xs[::-1]') }]);
    // U on the Chat screen takes back the Chat's last rating: the correction goes, and the 3/5 it replaced is back.
    await page.keyboard.press('u');
    await answer.getByText(`Undid Bad on turn ${turnId}. 3/5 is back.`).waitFor();
    expect(await live()).toMatchObject([{ kind: 'scale', scale: 3, undone: false }]);
    await answer.getByText('Rated 3/5.').waitFor();
    // A second question in the same conversation carries the first exchange.
    await page.getByLabel('Message', { exact: true }).fill('And in place?');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => page.getByTestId('chat-answer').count()).toBe(2);
    await page.getByTestId('chat-answer').last().getByRole('group', { name: 'Rate this answer' }).waitFor({ timeout: 120_000 });
    const second = await serve.call('getTurn', { turnId: Number(await page.getByTestId('chat-answer').last().getAttribute('data-turn-id')) });
    expect(second.context.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
    await screens('chat');
    expect(problems).toEqual([]);
  });
});

/** The version the first arena test made live (v1, or v2 or v3 when the gate rejected a round before it). */
let live = 1;

describe('arena (issue #14 item 2)', () => {
  it('trains a first version from 32 rated chat answers (the question rule), through the API as the CLI would', { timeout: 600_000 }, async () => {
    const rule = styleRule('question');
    for (let i = 0; i < 32; i++) {
      const a = await serve.call('chat', { messages: [{ role: 'user', content: TRAINING_PROMPTS[i]! }], maxTokens: 96 });
      await serve.call('rate', { turnId: a.turnId!, value: rule(a.text) ? 'good' : 'bad', rater: 'rule' });
    }
    // The arena below needs a live version. The gate judges a round of 32 on its six or so held-out ratings, and
    // rejects now and then a round that learned (docs/learning.md); a rejected round's ratings stay pending, so a user
    // trains again, and so does this test, up to three rounds.
    for (let round = 1; round <= 3; round++) {
      const { runId } = await serve.call('startTraining', {});
      await expect
        .poll(async () => (await serve.call('listRuns', {})).find((r) => r.id === runId)?.status, { timeout: 170_000, interval: 1000 })
        .toMatch(/succeeded|failed|cancelled/);
      if ((await serve.call('listAdapters', {})).some((a) => a.status === 'active')) break;
    }
    const adapters = await serve.call('listAdapters', {});
    const active = adapters.find((a) => a.status === 'active');
    expect(active, adapters.map((a) => `v${a.version} ${a.status}: ${a.reason}`).join('; ')).toBeDefined();
    live = active!.version;
  });

  it('a vote is stored as a pair with both answers rated, reveals the versions, and shows in the live version\'s win rate', async () => {
    const v = `v${live}`;
    await page.reload();
    await tab('Arena');
    await page.getByText(`The active version (${v}) against the base.`).waitFor();
    await page.getByLabel('Prompt').fill('Write a function that checks whether a number is prime.');
    await page.getByRole('button', { name: 'Ask both' }).click();
    const vote = page.getByRole('group', { name: 'Your vote' });
    await vote.waitFor({ timeout: 120_000 });
    // Blind: nothing on the page names a version before the vote.
    expect(await page.getByTestId('arena-a').innerText()).not.toMatch(new RegExp(`\\b${v}\\b|base`));
    expect(await page.getByTestId('arena-b').innerText()).not.toMatch(new RegExp(`\\b${v}\\b|base`));
    await screens('arena');
    await vote.getByRole('button', { name: 'A is better' }).click();
    const result = page.getByTestId('arena-result');
    await result.waitFor();
    const text = await result.innerText();
    const aWas = new RegExp(`A was (${v}|the base)`).exec(text)![1];
    expect(text).toMatch(aWas === v ? /B was the base/ : new RegExp(`B was ${v}`));
    const ratings = (await serve.call('listRatings', {})).items.filter((r) => r.rater === 'arena');
    expect(ratings.map((r) => r.kind).sort()).toEqual(['bad', 'good']);
    const turns = await Promise.all(ratings.map((r) => serve.call('getTurn', { turnId: r.turnId })));
    expect(turns.every((t) => t.source === 'arena' && t.onPolicy)).toBe(true);
    const winner = turns[ratings.findIndex((r) => r.kind === 'good')]!;
    expect(winner.adapterVersion).toBe(aWas === v ? live : 0);
    await screens('arena-voted');

    const stats = (await serve.call('versionStats', {})).find((s) => s.version === live)!;
    expect(stats.vsParent).toMatchObject({ opponent: 0, votes: 1, wins: aWas === v ? 1 : 0, losses: aWas === v ? 0 : 1 });
    await result.getByRole('button', { name: 'See win rates' }).click();
    const row = page.getByTestId(`stats-${v}`);
    await row.waitFor();
    expect(await row.innerText()).toMatch(aWas === v ? /100%[\s\S]*1 won, 0 lost/ : /0%[\s\S]*0 won, 1 lost/);
    await page.getByTestId('better-chart').waitFor();
    await screens('versions');
    expect(problems).toEqual([]);
  });
});
