import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { memoryLog } from '../shared/log.ts';
import { createMemoryCore } from '../test-utils/memory-core.ts';
import { createClaudeHooks } from './handler.ts';
import { interruptedTurn, parseTranscriptTurn, readTranscriptLines } from './transcript.ts';

const FIX = path.join(import.meta.dirname, '../fixtures/claude');
// payloads.json: user-prompt-submit, stop and rl-submit are what Claude Code 2.1.330 posted in e2e/agents
// (claude-hook-payloads.json), and tool-turn.jsonl is that turn's transcript (claude-transcript-tool-turn.jsonl),
// with the sandbox paths normalised to /home/dev and Claude's bookkeeping lines cut short. subagent-stop and
// rl-expansion follow the hooks reference in the same shape (the suite fires neither: `claude -p "/rl good"` sends
// only UserPromptSubmit). edge-cases.jsonl and subagent.jsonl are written by hand for lines the run does not show
// (meta lines, local commands, a long tool output, sidechains).
const payloads = JSON.parse(readFileSync(path.join(FIX, 'payloads.json'), 'utf8')) as Record<string, Record<string, unknown>>;
// The payloads carry the real client's paths; the tests read the fixtures through the real reader instead.
const readFixture = (file: string) =>
  readTranscriptLines(path.join(FIX, file.includes('/subagents/') ? 'subagent.jsonl' : 'tool-turn.jsonl'));

function setup() {
  const core = createMemoryCore();
  const log = memoryLog();
  const hooks = createClaudeHooks(core, { log, readTranscript: readFixture });
  return { core, log, hooks };
}

describe('Claude transcript fallback', () => {
  it('reads the real tool turn: prompt, final answer, the Bash call and its result, past the bookkeeping lines', () => {
    // The real file also holds queue-operation, attachment, api-request(-blob), last-prompt and cost-state lines;
    // an api-request-blob carries a role:user tool_result message and must not pass for a prompt or context.
    const t = parseTranscriptTurn(readTranscriptLines(path.join(FIX, 'tool-turn.jsonl')));
    expect(t.prompt).toBe(payloads['user-prompt-submit']!.prompt);
    expect(t.answer).toBe(payloads.stop!.last_assistant_message);
    expect(t.context).toEqual([
      { role: 'assistant', name: 'Bash', content: '{"command":"echo rein-e2e-tool-output","description":"Echo a marker"}', tool_use_id: 'toolu_fake_1', type: 'tool_use' },
      { role: 'tool', content: 'rein-e2e-tool-output', tool_use_id: 'toolu_fake_1', type: 'tool_result' },
    ]);
  });

  it('finds the human prompt past tool results, meta lines, local commands and sidechains', () => {
    const t = parseTranscriptTurn(readTranscriptLines(path.join(FIX, 'edge-cases.jsonl')));
    expect(t.prompt).toBe('The test for `mean` fails on an empty array. Fix it in src/stats.ts.');
    expect(t.answer).toBe('Fixed: `mean([])` now returns 0 instead of NaN. The stats tests pass.');
    expect(t.context.map((m) => [m.role, m.name ?? m.type ?? null])).toEqual([
      ['assistant', null],
      ['assistant', 'Bash'],
      ['tool', 'tool_result'],
      ['assistant', 'Edit'],
      ['tool', 'tool_result'],
    ]);
    expect(t.context[0]!.content).toBe('Let me run the tests first.');
    expect(JSON.parse(t.context[1]!.content)).toEqual({ command: 'npm test -- stats', description: 'Run stats tests' });
    // The 5 kB tool output is cut with a visible marker.
    expect(t.context[2]!.content.length).toBeLessThanOrEqual(4_000);
    expect(t.context[2]!.content).toMatch(/truncated \d+ chars/);
    expect(t.context[2]!.is_error).toBe(true);
    expect(t.context.some((m) => m.content.includes('Found 3 callers'))).toBe(false);
  });

  it('takes a subagent transcript, where every line is a sidechain', () => {
    const t = parseTranscriptTurn(readTranscriptLines(path.join(FIX, 'subagent.jsonl')), { subagent: true });
    expect(t.prompt).toBe('Find every caller of mean() in src/ and list the files.');
    expect(t.answer).toBe('mean() is called from src/report.ts and src/summary.ts.');
    expect(t.context.map((m) => m.name ?? m.type)).toEqual(['Grep', 'tool_result']);
  });

  it('skips a half-written last line', () => {
    const lines = readTranscriptLines(path.join(FIX, 'tool-turn.jsonl')).filter((l) => l !== '');
    lines.push('{"type":"assistant","message":{"content":[{"type":"te');
    expect(parseTranscriptTurn(lines).prompt).toBe(payloads['user-prompt-submit']!.prompt);
  });

  it('refuses a path that is not a .jsonl transcript', () => {
    expect(() => readTranscriptLines('/etc/passwd')).toThrow(/not a transcript/);
  });
});

describe('Claude hooks: capture', () => {
  it('Stop after UserPromptSubmit stores prompt, answer, session and the tool calls', async () => {
    const { core, hooks } = setup();
    expect(await hooks.handle(payloads['user-prompt-submit'])).toEqual({});
    expect(await hooks.handle(payloads.stop)).toEqual({});
    expect(core.turns).toHaveLength(1);
    const t = core.turns[0]!;
    expect(t.source).toBe('claude-code');
    expect(t.session).toBe(payloads.stop!.session_id);
    expect(t.eventId).toBe(`${payloads.stop!.session_id}:${payloads.stop!.prompt_id}`);
    expect(t.prompt).toBe(payloads['user-prompt-submit']!.prompt);
    expect(t.response).toBe(payloads.stop!.last_assistant_message);
    expect(t.context?.map((m) => m.type)).toEqual(['tool_use', 'tool_result']);
    expect(t.context?.[0]!.name).toBe('Bash');
  });

  it('Stop waits for a transcript that Claude has not finished writing, then keeps its tool calls', async () => {
    const all = readTranscriptLines(path.join(FIX, 'tool-turn.jsonl'));
    // The real transcript's last answer is the hook's last_assistant_message: with it on disk there is no wait.
    expect(parseTranscriptTurn(all).answer).toBe(payloads.stop!.last_assistant_message);
    const cut = all.findIndex((l) => l.includes('"tool_use"'));
    expect(cut).toBeGreaterThan(0);
    let lines = all.slice(0, cut); // the prompt only: the tool call and the answer are still being written
    const core = createMemoryCore();
    const hooks = createClaudeHooks(core, { log: memoryLog(), readTranscript: () => lines, transcriptWaitMs: 2_000 });
    await hooks.handle(payloads['user-prompt-submit']);
    setTimeout(() => (lines = all), 60);
    const t0 = Date.now();
    await hooks.handle(payloads.stop);
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(core.turns[0]!.context?.map((m) => m.type)).toEqual(['tool_use', 'tool_result']);
    // A transcript that never catches up costs at most the wait, and the turn is still stored.
    const late = createMemoryCore();
    const never = createClaudeHooks(late, { log: memoryLog(), readTranscript: () => all.slice(0, cut), transcriptWaitMs: 100 });
    await never.handle(payloads['user-prompt-submit']);
    await never.handle(payloads.stop);
    expect(late.turns[0]!.response).toBe(payloads.stop!.last_assistant_message);
  });

  it('a retried Stop is one turn', async () => {
    const { core, hooks } = setup();
    await hooks.handle(payloads['user-prompt-submit']);
    await hooks.handle(payloads.stop);
    await hooks.handle(payloads.stop);
    expect(core.turns).toHaveLength(1);
  });

  it('Stop with no UserPromptSubmit seen (Rein restarted) takes the prompt from the transcript', async () => {
    const { core, hooks } = setup();
    await hooks.handle(payloads.stop);
    expect(core.turns[0]?.prompt).toBe('please-run-the-echo-tool and tell me what it printed');
  });

  it('without prompt_id the event id is a stable hash, so retries still dedupe', async () => {
    const { core, hooks } = setup();
    const { prompt_id: _a, ...stop } = payloads.stop!;
    await hooks.handle(stop);
    await hooks.handle(stop);
    expect(core.turns).toHaveLength(1);
    expect(core.turns[0]!.eventId).toMatch(new RegExp(`^${payloads.stop!.session_id}:h:[0-9a-f]{24}$`));
  });

  it('SubagentStop reads agent_transcript_path and is its own turn', async () => {
    const { core, hooks } = setup();
    await hooks.handle(payloads['user-prompt-submit']);
    await hooks.handle(payloads['subagent-stop']);
    await hooks.handle(payloads.stop);
    expect(core.turns.map((t) => t.eventId)).toEqual([
      `${payloads.stop!.session_id}:agent:a7f3`,
      `${payloads.stop!.session_id}:${payloads.stop!.prompt_id}`,
    ]);
    expect(core.turns[0]!.prompt).toBe('Find every caller of mean() in src/ and list the files.');
    expect(core.turns[0]!.response).toBe('mean() is called from src/report.ts and src/summary.ts.');
  });

  it('an unreadable transcript and no remembered prompt stores nothing, logs why, never blocks', async () => {
    const core = createMemoryCore();
    const log = memoryLog();
    const hooks = createClaudeHooks(core, { log });
    expect(await hooks.handle({ ...payloads.stop, transcript_path: '/nonexistent/x.jsonl' })).toEqual({});
    expect(core.turns).toHaveLength(0);
    expect(log.lines.map((l) => l.message)).toContain('Claude turn not captured: no prompt in the hook state or the transcript');
  });

  it.each([
    ['not an object', 'hello'],
    ['null', null],
    ['no session', { hook_event_name: 'Stop', last_assistant_message: 'x' }],
    ['wrong types', { ...({} as object), hook_event_name: 'Stop', session_id: 42 }],
    ['unknown event', { hook_event_name: 'PreToolUse', session_id: 's' }],
  ])('a malformed post (%s) answers {} and logs the reason', async (_name, body) => {
    const { core, log, hooks } = setup();
    expect(await hooks.handle(body)).toEqual({});
    expect(core.turns).toHaveLength(0);
    expect(log.lines[0]?.message).toMatch(/does not match its schema/);
  });

  it('a core failure while capturing is logged and answered {}', async () => {
    const { core, log, hooks } = setup();
    await hooks.handle(payloads['user-prompt-submit']);
    // An oversized session id fails the captureTurn schema inside the core.
    const res = await hooks.handle({ ...payloads.stop, session_id: 's'.repeat(600) });
    expect(res).toEqual({});
    expect(core.turns).toHaveLength(0);
    expect(log.lines.some((l) => l.level !== 'info')).toBe(true);
  });
});

describe('Claude hooks: /rl', () => {
  it('a one-shot /rl good (its own session, same directory) rates the turn; Expansion then Submit of it is one rating, both block', async () => {
    // As in the real run: the turn's session and the /rl session differ (claude -p twice), the cwd is the same.
    expect(payloads['rl-submit']!.session_id).not.toBe(payloads.stop!.session_id);
    const { core, hooks } = setup();
    await hooks.handle(payloads['user-prompt-submit']);
    await hooks.handle(payloads.stop);
    const a = await hooks.handle(payloads['rl-expansion']);
    const b = await hooks.handle(payloads['rl-submit']);
    expect(a).toEqual({ decision: 'block', reason: 'Rated 👍 · 1 pending · next training at 32' });
    expect(b).toEqual(a);
    expect(core.ratings).toHaveLength(1);
    expect(core.ratings[0]!.turnId).toBe(core.turns[0]!.id);
  });

  it('rates the newest unrated turn of that session only', async () => {
    const { core, hooks } = setup();
    const s1 = payloads['rl-submit']!.session_id as string;
    await core.call('captureTurn', { source: 'claude-code', session: s1, eventId: 'a', prompt: 'p1', response: 'r1' }, 'test');
    await core.call('captureTurn', { source: 'claude-code', session: 'other', eventId: 'b', prompt: 'p2', response: 'r2' }, 'test');
    const r = await hooks.handle({ ...payloads['rl-submit'], prompt: '/rl 👎', prompt_id: 'p-9' });
    expect(r.reason).toBe('Rated 👎 · 1 pending · next training at 32');
    expect(core.ratings[0]!.turnId).toBe(1);
    const again = await hooks.handle({ ...payloads['rl-submit'], prompt: '/rl good', prompt_id: 'p-10' });
    expect(again.reason).toMatch(/^Nothing to rate in this session yet/);
    expect(core.ratings).toHaveLength(1);
  });

  it('fix, undo and status answer with real numbers', async () => {
    const { core, hooks } = setup();
    const s = payloads['rl-submit']!.session_id as string;
    await core.call('captureTurn', { source: 'claude-code', session: s, eventId: 'a', prompt: 'p', response: 'r' }, 'test');
    const fix = await hooks.handle({ ...payloads['rl-submit'], prompt: '/rl fix "use a guard clause"', prompt_id: 'q1' });
    expect(fix.reason).toBe('Saved your correction (👎 + fix) · 1 pending · next training at 32');
    expect(core.ratings[0]).toMatchObject({ kind: 'bad', correction: 'use a guard clause' });
    const st = await hooks.handle({ ...payloads['rl-submit'], prompt: '/rl status', prompt_id: 'q2' });
    expect(st.reason).toBe('Rein · 1 pending · next training at 32 · 1 ratings (0 👍 · 1 👎 · 0 scored) · 0 unrated turns · base model (no adapter yet)');
    const undo = await hooks.handle({ ...payloads['rl-submit'], prompt: '/rl undo', prompt_id: 'q3' });
    expect(undo.reason).toBe('Undid 👎 · 0 pending · next training at 32');
  });

  it('a malformed /rl blocks with the usage (it must not reach the model)', async () => {
    const { core, hooks } = setup();
    const r = await hooks.handle({ ...payloads['rl-submit'], prompt: '/rl 9' });
    expect(r.decision).toBe('block');
    expect(r.reason).toMatch(/1 to 5/);
    expect(core.ratings).toHaveLength(0);
  });

  it('other prompts and other slash commands pass through with {}', async () => {
    const { hooks } = setup();
    expect(await hooks.handle({ ...payloads['rl-submit'], prompt: 'please /rl good this' })).toEqual({});
    expect(await hooks.handle({ ...payloads['rl-expansion'], command_name: 'review', command_args: '', prompt: '/review' })).toEqual({});
  });

  it('without prompt_id the same /rl text twice within seconds is one rating, later it is a new one', async () => {
    let t = 1_000_000;
    const core = createMemoryCore();
    const hooks = createClaudeHooks(core, { log: memoryLog(), now: () => t });
    const s = payloads['rl-submit']!.session_id as string;
    for (const id of ['a', 'b']) await core.call('captureTurn', { source: 'claude-code', session: s, eventId: id, prompt: 'p', response: 'r' }, 'test');
    const { prompt_id: _x, ...exp } = payloads['rl-expansion']!;
    const { prompt_id: _y, ...sub } = payloads['rl-submit']!;
    await hooks.handle(exp);
    await hooks.handle(sub);
    expect(core.ratings).toHaveLength(1);
    t += 30_000;
    await hooks.handle(sub);
    expect(core.ratings.map((r) => r.turnId)).toEqual([2, 1]);
  });
});

describe('Claude Code interrupts', () => {
  // interrupted.jsonl is written by hand in the shape of the real lines above: the user pressed Esc on a tool call,
  // so Claude Code wrote the rejected tool result and its mark "[Request interrupted by user for tool use]", and ran
  // no Stop hook for the turn.
  const INT = path.join(FIX, 'interrupted.jsonl');

  it('finds the interrupted turn before the next prompt: its prompt, its answer so far, its tool call, and the mark', () => {
    const lines = readTranscriptLines(INT);
    const cut = interruptedTurn(lines, 'no, just rename it');
    expect(cut).toMatchObject({
      prompt: 'Rename getUser to fetchUser across the repo',
      answer: "I'll start by deleting the old users module and rewriting it from scratch.",
      mark: '[Request interrupted by user for tool use]',
    });
    expect(cut!.context.map((m) => m.name ?? m.type)).toEqual(['Bash', 'tool_result']);
    // The next prompt already in the transcript changes nothing; a transcript whose newest line is an answer has no cut.
    const withNext = [...lines, JSON.stringify({ type: 'user', message: { role: 'user', content: 'no, just rename it' } })];
    expect(interruptedTurn(withNext, 'no, just rename it')).toMatchObject({ mark: '[Request interrupted by user for tool use]' });
    expect(interruptedTurn(readTranscriptLines(path.join(FIX, 'tool-turn.jsonl')), 'next')).toBeNull();
  });

  it('captures the interrupted turn at the next UserPromptSubmit, with the interrupt as the client reported it, once', async () => {
    const core = createMemoryCore();
    const hooks = createClaudeHooks(core, { log: memoryLog(), readTranscript: () => readTranscriptLines(INT) });
    const submit = { session_id: 'sess-int', transcript_path: '/t/sess-int.jsonl', hook_event_name: 'UserPromptSubmit', prompt: 'no, just rename it' };
    expect(await hooks.handle(submit)).toEqual({});
    expect(await hooks.handle(submit)).toEqual({});
    expect(core.turns).toHaveLength(1);
    expect(core.turns[0]).toMatchObject({
      source: 'claude-code',
      session: 'sess-int',
      prompt: 'Rename getUser to fetchUser across the repo',
      response: "I'll start by deleting the old users module and rewriting it from scratch.",
      interrupted: '[Request interrupted by user for tool use]',
    });
    expect(core.turns[0]!.eventId).toMatch(/^sess-int:interrupted:/);
  });

  it("takes a session's first prompt, whose transcript Claude Code has not written yet, as no interrupt and no warning", async () => {
    const core = createMemoryCore();
    const log = memoryLog();
    // The real reader on a path that does not exist, as the real client's first UserPromptSubmit names it.
    const hooks = createClaudeHooks(core, { log });
    const submit = { session_id: 'sess-new', transcript_path: path.join(FIX, 'no-such-session.jsonl'), hook_event_name: 'UserPromptSubmit', prompt: 'hello' };
    expect(await hooks.handle(submit)).toEqual({});
    expect(core.turns).toHaveLength(0);
    // (The in-memory core has no sessionPrompted: that warning is not this test's business.)
    expect(log.lines.filter((l) => l.message.includes('transcript'))).toEqual([]);
  });
});
