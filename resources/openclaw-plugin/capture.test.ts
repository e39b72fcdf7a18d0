import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createReinPlugin, validateConfig } from './src/capture.ts';
import { parseReaction } from './src/reactions.ts';

const SECRET = 'cd'.repeat(32);
function setup(extra: Record<string, unknown> = {}) {
  const posts: Record<string, unknown>[] = [];
  let nextTurn = 100;
  const post = async (b: Record<string, unknown>) => {
    posts.push(b);
    if (b.kind === 'turn') return { ok: true, turnId: ++nextTurn };
    return { ok: true, text: `ok ${String(b.kind)}` };
  };
  const logs: string[] = [];
  const plugin = createReinPlugin({
    config: validateConfig({ captureUrl: 'http://127.0.0.1:7433', secret: SECRET, flushMs: 100, ...extra }),
    post,
    log: { info: (m) => logs.push(m), warn: (m) => logs.push(m) },
  });
  return { plugin, posts, logs };
}
const G = 'agent:main:telegram:group:-100123';
const ctx = (senderId: string) => ({ sessionKey: G, channelId: 'telegram', senderId });

describe('OpenClaw plugin', () => {
  it('pairs message_received with agent_end, posting the whole multi-chunk reply', async () => {
    const { plugin, posts } = setup();
    await plugin.onMessageReceived({ from: 'Alice', content: 'summarise the thread', messageId: '41', senderId: 'u1' }, ctx('u1'));
    await plugin.onAgentEnd(
      {
        runId: 'run-7',
        success: true,
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'summarise the thread' }] },
          { role: 'assistant', content: [{ type: 'text', text: 'Part one.' }] },
          { role: 'assistant', content: [{ type: 'text', text: 'Part two.' }] },
        ],
      },
      { sessionKey: G },
    );
    await plugin.onMessageSent({ to: 'g', content: 'Part one.', success: true, messageId: '42' }, { sessionKey: G });
    await plugin.onMessageSent({ to: 'g', content: 'Part two.', success: true, messageId: '43' }, { sessionKey: G });
    expect(posts).toEqual([{ kind: 'turn', sessionKey: G, runId: 'run-7', prompt: 'summarise the thread', response: 'Part one.\nPart two.', channel: 'telegram', senderId: 'u1' }]);
    // A reaction by the prompter on either chunk rates that turn; someone else's does not.
    await plugin.onPromptText('System: Telegram reaction added: 👍 by Bob on msg 43\nSystem: Telegram reaction added: 👎 by Alice on msg 42', { sessionKey: G });
    await plugin.idle();
    expect(posts.slice(1)).toEqual([{ kind: 'rate', turnId: 101, value: 'bad', rater: 'openclaw:Alice' }]);
    // The same system line seen again is not a second rating.
    await plugin.onPromptText('Telegram reaction added: 👎 by Alice on msg 42', { sessionKey: G });
    expect(posts).toHaveLength(2);
  });

  it('agent_end alone (gateway and agent run in separate plugin instances) is captured from its own messages; /rl then leaves the turn to Rein', async () => {
    // The agent_end shape recorded from OpenClaw 2026.9 through chat.send (e2e/agents/artifacts).
    const S = 'agent:main:main';
    const { plugin, posts } = setup();
    await plugin.onAgentEnd(
      {
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Say hi to the e2e suite' }], timestamp: 1, idempotencyKey: 'e2e-1:user' },
          { role: 'assistant', content: [{ type: 'text', text: 'Hi, suite.' }], stopReason: 'stop' },
        ],
        success: true,
        durationMs: 5819,
        runId: 'e2e-1',
      },
      { sessionKey: S, senderId: 'cli', channelId: 'webchat' },
    );
    expect(posts).toEqual([{ kind: 'turn', sessionKey: S, runId: 'e2e-1', prompt: 'Say hi to the e2e suite', response: 'Hi, suite.', channel: 'webchat', senderId: 'cli' }]);
    const other = setup();
    expect((await other.plugin.onCommand({ args: 'good', senderId: 'cli', sessionKey: S })).text).toBe('ok command');
    expect(other.posts[0]).toEqual({ kind: 'command', sessionKey: S, args: 'good', rater: 'openclaw:cli', adminAllowed: false });
  });

  it('agent_end with the messages as OpenClaw 2026.9.6 keeps them: user content a plain string, assistant text blocks', async () => {
    // The first turn of e2e/agents' chat.history (openclaw-history.json, paths normalised): the user message is a
    // string with timestamp/idempotencyKey/__openclaw beside it; the reply carries api/provider/model/usage.
    const FIX = path.join(import.meta.dirname, '../../src-main/node/integrations/fixtures/openclaw/history-turn.json');
    const messages = JSON.parse(readFileSync(FIX, 'utf8')) as Record<string, unknown>[];
    const S = 'agent:main:main';
    const { plugin, posts } = setup();
    await plugin.onAgentEnd({ messages, success: true, runId: 'e2e-1' }, { sessionKey: S, senderId: 'cli', channelId: 'webchat' });
    expect(posts).toEqual([
      {
        kind: 'turn',
        sessionKey: S,
        runId: 'e2e-1',
        prompt: 'Say hi to the e2e suite',
        response: 'Fake answer to: [Sun 2026-11-22 03:53 UTC] Say hi to the e2e suite\n\nRuntime: agent=main | session=agent:main:main | sessionId=d5fea999-d',
        channel: 'webchat',
        senderId: 'cli',
      },
    ]);
  });

  it('without agent_end, message_sent chunks are posted after a quiet spell', async () => {
    const { plugin, posts } = setup();
    await plugin.onMessageReceived({ from: 'Alice', content: 'hi', messageId: '1' }, ctx('u1'));
    await plugin.onMessageSent({ content: 'Hel', success: true, messageId: '2' }, { sessionKey: G });
    await plugin.onMessageSent({ content: 'lo!', success: true, messageId: '3' }, { sessionKey: G });
    await new Promise((r) => setTimeout(r, 250));
    await plugin.idle();
    expect(posts).toMatchObject([{ kind: 'turn', prompt: 'hi', response: 'Hel\nlo!' }]);
  });

  it('/rl rates the sender\'s own newest turn; admin commands need the allowlist', async () => {
    const { plugin, posts } = setup({ admins: ['owner1'] });
    await plugin.onMessageReceived({ from: 'Alice', content: 'q1', messageId: '1' }, ctx('u1'));
    await plugin.onAgentEnd({ runId: 'r1', messages: [{ role: 'assistant', content: 'a1' }] }, { sessionKey: G });
    await plugin.onMessageReceived({ from: 'Bob', content: 'q2', messageId: '2' }, ctx('u2'));
    await plugin.onAgentEnd({ runId: 'r2', messages: [{ role: 'assistant', content: 'a2' }] }, { sessionKey: G });
    await plugin.onCommand({ args: 'good', senderId: 'u1', sessionKey: G });
    expect(posts.at(-1)).toEqual({ kind: 'command', sessionKey: G, args: 'good', rater: 'openclaw:u1', turnId: 101, adminAllowed: false });
    expect((await plugin.onCommand({ args: 'bad', senderId: 'u3', sessionKey: G })).text).toMatch(/no reply to a message of yours/);
    await plugin.onCommand({ args: 'train', senderId: 'owner1', sessionKey: G });
    expect(posts.at(-1)).toMatchObject({ args: 'train', adminAllowed: true });
  });

  it('parses reaction system events and refuses a bad config', () => {
    expect(parseReaction('Telegram reaction added: 👍 by Jane Doe on msg 42')).toEqual({ channel: 'telegram', added: true, emoji: '👍', by: 'Jane Doe', messageId: '42' });
    expect(parseReaction('Slack reaction removed: 👎 by bob on msg 1700000000.123')).toMatchObject({ added: false, messageId: '1700000000.123' });
    expect(parseReaction('just chatting about reactions')).toBeNull();
    expect(() => validateConfig({ captureUrl: 'http://evil.example:80', secret: SECRET })).toThrow(/loopback/);
    expect(() => validateConfig({ captureUrl: 'http://127.0.0.1:7433', secret: 'short' })).toThrow(/secret/);
  });
});
