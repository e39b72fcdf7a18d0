import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { memoryLog } from '../shared/log.ts';
import { createMemoryCore } from '../test-utils/memory-core.ts';
import { createCodexHooks } from './handler.ts';

const P = JSON.parse(readFileSync(path.join(import.meta.dirname, '../fixtures/codex/notify-payloads.json'), 'utf8')) as Record<string, Record<string, unknown>>;

describe('Codex capture', () => {
  it('notify maps to a turn: the last input message is the prompt', async () => {
    const core = createMemoryCore();
    await createCodexHooks(core, { log: memoryLog() }).handle(P.turn);
    expect(core.turns).toHaveLength(1);
    expect(core.turns[0]).toMatchObject({
      source: 'codex',
      session: '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
      eventId: '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b:1',
      prompt: 'Now fix the failing mean() test in src/stats.ts',
      response: 'Fixed mean([]) to return 0; all 42 tests pass.',
    });
  });

  it('UserPromptSubmit + Stop and notify of the same turn make one turn', async () => {
    const core = createMemoryCore();
    const h = createCodexHooks(core, { log: memoryLog() });
    await h.handle(P.prompt);
    await h.handle(P.stop);
    await h.handle(P.turn);
    expect(core.turns).toHaveLength(1);
    expect(core.turns[0]!.model).toBe('gpt-5-codex');
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
    const r = await h.handle({ ...P.prompt, prompt: '/rl 5 spot on', turn_id: '2' });
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
