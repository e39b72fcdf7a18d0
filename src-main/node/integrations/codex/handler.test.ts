import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { memoryLog } from '../shared/log.ts';
import { createMemoryCore } from '../test-utils/memory-core.ts';
import { createCodexHooks } from './handler.ts';

// `turn` and `no-answer` are notify payloads Codex 0.169.0 sent in e2e/agents (codex-notify-payloads.json; cwd
// normalised, `no-answer` with its answer nulled). `stop`/`prompt` carry that turn's ids: the e2e run shows Stop and
// notify of one turn share them (stored once); their other fields follow codex-rs/hooks, not a capture.
const P = JSON.parse(readFileSync(path.join(import.meta.dirname, '../fixtures/codex/notify-payloads.json'), 'utf8')) as Record<string, Record<string, unknown>>;
const THREAD = '01a20162-614e-7992-9fcf-a52f58a6d429';
const TURN = '01a20162-6193-7f92-afda-be599072515a';

describe('Codex capture', () => {
  it('notify maps to a turn: thread, turn, prompt and answer from the real payload', async () => {
    const core = createMemoryCore();
    await createCodexHooks(core, { log: memoryLog() }).handle(P.turn);
    expect(core.turns).toHaveLength(1);
    expect(core.turns[0]).toMatchObject({
      source: 'codex',
      session: THREAD,
      eventId: `${THREAD}:${TURN}`,
      prompt: 'Say hi to the e2e suite',
      response: 'Fake answer to: Say hi to the e2e suite',
    });
  });

  it('with several input messages (queued while the agent worked), the last is the prompt', async () => {
    const core = createMemoryCore();
    await createCodexHooks(core, { log: memoryLog() }).handle({ ...P.turn, 'input-messages': ['Run the tests', 'Now fix the failing one'] });
    expect(core.turns[0]!.prompt).toBe('Now fix the failing one');
  });

  it('UserPromptSubmit + Stop and notify of the same turn make one turn', async () => {
    const core = createMemoryCore();
    const h = createCodexHooks(core, { log: memoryLog() });
    await h.handle(P.prompt);
    await h.handle(P.stop);
    await h.handle(P.turn);
    expect(core.turns).toHaveLength(1);
    expect(core.turns[0]!.model).toBe('gpt-fake');
  });

  it('Stop without a known prompt stores nothing (notify will), and a null answer is not a turn', async () => {
    const core = createMemoryCore();
    const h = createCodexHooks(core, { log: memoryLog() });
    await h.handle(P.stop);
    await h.handle(P['no-answer']);
    expect(core.turns).toHaveLength(0);
  });

  it('/rl in UserPromptSubmit is a block decision with the rating recorded', async () => {
    const core = createMemoryCore();
    const h = createCodexHooks(core, { log: memoryLog() });
    await h.handle(P.turn);
    const r = await h.handle({ ...P.prompt, prompt: '/rl 5 spot on', turn_id: '01a20162-6a19-72d3-8dc9-01470d98f6a8' });
    expect(r).toEqual({ decision: 'block', reason: 'Rated 5/5 · 1 pending · next training at 32' });
    expect(core.ratings[0]).toMatchObject({ kind: 'scale', scale: 5, comment: 'spot on' });
  });

  it('a malformed post is logged and answered {}', async () => {
    const core = createMemoryCore();
    const log = memoryLog();
    expect(await createCodexHooks(core, { log }).handle({ type: 'agent-turn-complete', 'thread-id': 5 })).toEqual({});
    expect(log.lines[0]!.message).toMatch(/neither a notify payload nor a hook event/);
  });
});
