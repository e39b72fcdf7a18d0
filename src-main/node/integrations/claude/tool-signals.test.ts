// The revert and contradiction signals through the production capture path: Claude Code's Stop hook reads the turn's
// transcript (real files, the real reader), the real core stores the turn and records the signals, and turnSignals
// reads the weak label the card shows. The project is a temporary folder the test edits as the agent and the user
// would.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REVERT_WINDOW_MS } from '../../../common/implicit/tools.ts';
import { createCore, type ReinCore } from '../../core/core.ts';
import { resolveHome } from '../../home.ts';
import { memoryLog } from '../shared/log.ts';
import { createClaudeHooks } from './handler.ts';

const cores: ReinCore[] = [];
const dirs: string[] = [];
let clock = 1_700_000_000_000;

function tmp(prefix: string): string {
  const d = mkdtempSync(path.join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

afterEach(() => {
  for (const c of cores.splice(0)) c.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const ORIGINAL = 'export function mean(xs: number[]): number {\n  return sum(xs) / xs.length;\n}\n';
const EDITED = 'export function mean(xs: number[]): number {\n  return xs.length === 0 ? 0 : sum(xs) / xs.length;\n}\n';
const EDIT = { old_string: 'return sum(xs) / xs.length;', new_string: 'return xs.length === 0 ? 0 : sum(xs) / xs.length;' };
const RED = 'Exit code 1\n FAIL  src/stats.test.ts > mean > of an empty array\nAssertionError: expected NaN to be 0\n      Tests  1 failed | 41 passed (42)';

type Step = { tool: string; input: Record<string, unknown>; result: string; isError?: boolean };

/** A Claude Code transcript of one turn: the prompt, its tool calls and their results, then the answer. */
function transcript(file: string, prompt: string, steps: Step[], answer: string): void {
  const lines: unknown[] = [{ type: 'user', message: { role: 'user', content: prompt } }];
  steps.forEach((s, i) => {
    lines.push({ type: 'assistant', message: { role: 'assistant', content: [{ type: 'tool_use', id: `toolu_${i}`, name: s.tool, input: s.input }] } });
    lines.push({ type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${i}`, content: s.result, ...(s.isError ? { is_error: true } : {}) }] } });
  });
  lines.push({ type: 'assistant', message: { role: 'assistant', content: [{ type: 'text', text: answer }] } });
  writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
}

function setup() {
  const home = tmp('rein-tool-signals-');
  const core = createCore({ home: resolveHome({ REIN_HOME: home }), now: () => clock });
  cores.push(core);
  const project = tmp('rein-project-');
  mkdirSync(path.join(project, 'src'));
  const file = path.join(project, 'src', 'stats.ts');
  const hooks = createClaudeHooks(core, { log: memoryLog(), transcriptWaitMs: 0 });
  const jsonl = path.join(home, 'session.jsonl');
  let n = 0;
  /**
   * One turn as Claude Code runs it: UserPromptSubmit (unless `submit` is false: a client without that hook), then
   * the agent's tools (`agent` applies them to the files), then Stop.
   */
  async function turn(prompt: string, steps: Step[], answer: string, over: { cwd?: string; agent?: () => void; submit?: boolean } = {}): Promise<number> {
    n++;
    const common = { session_id: 'sess-1', transcript_path: jsonl, cwd: over.cwd ?? project, prompt_id: `p${n}` };
    if (over.submit !== false) await hooks.handle({ ...common, hook_event_name: 'UserPromptSubmit', prompt });
    over.agent?.();
    transcript(jsonl, prompt, steps, answer);
    await hooks.handle({ ...common, hook_event_name: 'Stop', last_assistant_message: answer });
    const { items } = await core.call('listTurns', { session: 'sess-1' }, 'test');
    return items.find((t) => t.eventId === `sess-1:p${n}`)!.id;
  }
  return { core, project, file, turn };
}

/** The agent's first turn: it edits src/stats.ts (the file on disk is the edited one when Stop comes). */
async function agentEdits(s: ReturnType<typeof setup>, over: { submit?: boolean } = {}): Promise<number> {
  writeFileSync(s.file, ORIGINAL);
  const edit: Step = { tool: 'Edit', input: { file_path: s.file, ...EDIT }, result: 'The file has been updated.' };
  return s.turn('make mean() return 0 for an empty array', [edit], 'Done: mean([]) is now 0.', { ...over, agent: () => writeFileSync(s.file, EDITED) });
}

describe('revert signal through the Claude Code hooks', () => {
  it('a file put back exactly as it was before the edit, before the next turn, is a revert on the turn that made it', async () => {
    const s = setup();
    const first = await agentEdits(s);
    clock += 4 * 60_000 - 5_000;
    writeFileSync(s.file, ORIGINAL);
    const second = await s.turn('now add a --json flag to the cli', [], 'Added --json.');
    const out = await s.core.call('turnSignals', { turnId: first }, 'test');
    const revert = out.signals.find((x) => x.kind === 'revert');
    expect(revert).toMatchObject({ turnId: first, fromTurnId: null, evidence: "you reverted the agent's edit of src/stats.ts within 4 min", detail: { gapMs: 4 * 60_000 - 5_000, tools: ['Edit'] } });
    // The next prompt is a new request (no label from its words), so the revert is the label, above the threshold.
    expect(out.label).toMatchObject({ value: 'bad', rule: 'reverted', confidence: 0.85, signalId: revert!.id });
    expect(out.explanation).toBe("Rein read this as Bad because you reverted the agent's edit of src/stats.ts within 4 min");
    expect((await s.core.call('weakLabels', {}, 'test')).items.map((i) => i.turn.id)).toEqual([first]);
    expect((await s.core.call('turnSignals', { turnId: second }, 'test')).signals).toEqual([]);
  });

  it('not when the user edited the file further, nor past the window, nor once the next turn has looked', async () => {
    const s = setup();
    const first = await agentEdits(s);
    writeFileSync(s.file, EDITED.replace('=== 0', '<= 0'));
    await s.turn('now add a --json flag to the cli', [], 'Added --json.');
    expect((await s.core.call('turnSignals', { turnId: first }, 'test')).signals.map((x) => x.kind)).toEqual(['followup']);
    // Put back after that turn: the watch ended when it came.
    writeFileSync(s.file, ORIGINAL);
    await s.turn('and a --quiet flag', [], 'Added --quiet.');
    expect((await s.core.call('turnSignals', { turnId: first }, 'test')).signals.map((x) => x.kind)).toEqual(['followup']);

    const late = await agentEdits(s);
    clock += REVERT_WINDOW_MS + 1_000;
    writeFileSync(s.file, ORIGINAL);
    await s.turn('now add a --json flag to the cli', [], 'Added --json.');
    expect((await s.core.call('turnSignals', { turnId: late }, 'test')).signals.map((x) => x.kind)).toEqual(['followup']);
  });

  it('checked at the next prompt, so the agent editing the same file again in that turn does not hide it', async () => {
    const s = setup();
    const first = await agentEdits(s);
    writeFileSync(s.file, ORIGINAL);
    const again: Step = { tool: 'Edit', input: { file_path: s.file, old_string: 'return sum(xs) / xs.length;', new_string: 'return xs.length > 0 ? sum(xs) / xs.length : 0;' }, result: 'ok' };
    await s.turn('try it without the ternary on === 0', [again], 'Done.', { agent: () => writeFileSync(s.file, ORIGINAL.replace('return sum(xs) / xs.length;', 'return xs.length > 0 ? sum(xs) / xs.length : 0;')) });
    expect((await s.core.call('turnSignals', { turnId: first }, 'test')).signals.map((x) => x.kind)).toEqual(['revert', 'followup']);
  });

  it('without a prompt hook, checked when the next turn is stored, unless that turn itself may have put the file back', async () => {
    const s = setup();
    const first = await agentEdits(s, { submit: false });
    writeFileSync(s.file, ORIGINAL);
    await s.turn('now add a --json flag to the cli', [], 'Added --json.', { submit: false });
    expect((await s.core.call('turnSignals', { turnId: first }, 'test')).signals.map((x) => x.kind)).toEqual(['revert', 'followup']);
    // The agent undoing its own edit on request, by git: not the user's revert.
    const second = await agentEdits(s, { submit: false });
    const checkout: Step = { tool: 'Bash', input: { command: 'git checkout .' }, result: '' };
    await s.turn('undo that', [checkout], 'Reverted.', { submit: false, agent: () => writeFileSync(s.file, ORIGINAL) });
    expect((await s.core.call('turnSignals', { turnId: second }, 'test')).signals.map((x) => x.kind)).toEqual(['followup']);
    // Nor by editing the file back.
    const third = await agentEdits(s, { submit: false });
    const back: Step = { tool: 'Edit', input: { file_path: s.file, old_string: EDIT.new_string, new_string: EDIT.old_string }, result: 'ok' };
    await s.turn('undo that', [back], 'Reverted.', { submit: false, agent: () => writeFileSync(s.file, ORIGINAL) });
    expect((await s.core.call('turnSignals', { turnId: third }, 'test')).signals.map((x) => x.kind)).toEqual(['followup']);
  });

  it('records nothing at a prompt while capture is paused; the watch stays for the prompt after it', async () => {
    const s = setup();
    const first = await agentEdits(s);
    writeFileSync(s.file, ORIGINAL);
    await s.core.call('setSettings', { values: { 'capture.paused': true } }, 'test');
    expect(await s.core.call('sessionPrompted', { source: 'claude-code', session: 'sess-1' }, 'hook')).toEqual({ reverts: 0 });
    await s.core.call('setSettings', { values: { 'capture.paused': false } }, 'test');
    expect(await s.core.call('sessionPrompted', { source: 'claude-code', session: 'sess-1' }, 'hook')).toEqual({ reverts: 1 });
    expect((await s.core.call('turnSignals', { turnId: first }, 'test')).signals.map((x) => x.kind)).toEqual(['revert']);
  });

  it('not for a file outside the session\u2019s working directory, reached by its path or by a symlink inside it', async () => {
    const s = setup();
    // The session's cwd is a sibling folder: src/stats.ts is outside it.
    const cwd = path.join(s.project, 'web');
    mkdirSync(cwd);
    symlinkSync(path.join(s.project, 'src'), path.join(cwd, 'linked'));
    const agent = () => writeFileSync(s.file, EDITED);
    writeFileSync(s.file, ORIGINAL);
    const a = await s.turn('fix mean', [{ tool: 'Edit', input: { file_path: s.file, ...EDIT }, result: 'ok' }], 'Done.', { cwd, agent });
    writeFileSync(s.file, ORIGINAL);
    await s.turn('now add a --json flag to the cli', [], 'Added --json.', { cwd });
    const b = await s.turn('fix mean', [{ tool: 'Edit', input: { file_path: path.join(cwd, 'linked', 'stats.ts'), ...EDIT }, result: 'ok' }], 'Done.', { cwd, agent });
    writeFileSync(s.file, ORIGINAL);
    await s.turn('now add a --json flag to the cli', [], 'Added --json.', { cwd });
    for (const id of [a, b]) expect((await s.core.call('turnSignals', { turnId: id }, 'test')).signals.map((x) => x.kind)).toEqual(['followup']);
  });
});

describe('contradiction signal through the Claude Code hooks', () => {
  it('"All tests pass" followed by a failing npm test in the next turn is a contradiction on the claiming turn', async () => {
    const s = setup();
    const first = await s.turn('make mean() return 0 for an empty array', [], 'Fixed `mean` for empty arrays. All tests pass.');
    const second = await s.turn('add a test for NaN inputs', [{ tool: 'Bash', input: { command: 'npm test' }, result: RED, isError: true }], 'The stats test fails; want me to look?');
    const out = await s.core.call('turnSignals', { turnId: first }, 'test');
    const c = out.signals.find((x) => x.kind === 'contradiction');
    expect(c).toMatchObject({
      turnId: first,
      fromTurnId: second,
      evidence: 'the answer said "All tests pass.", but `npm test` then failed: FAIL  src/stats.test.ts > mean > of an empty array',
      detail: { source: 'claude-code', later: true },
    });
    expect(out.label).toMatchObject({ value: 'bad', rule: 'contradicted', confidence: 0.8 });
    expect(out.explanation).toBe('Rein read this as Bad because the answer said "All tests pass.", but `npm test` then failed: FAIL  src/stats.test.ts > mean > of an empty array');
  });

  it('an answer that says all tests pass over its own failing last run is a contradiction on itself', async () => {
    const s = setup();
    const t = await s.turn('fix mean', [{ tool: 'Bash', input: { command: 'npx vitest run' }, result: RED, isError: true }], 'Done. All tests pass.');
    const out = await s.core.call('turnSignals', { turnId: t }, 'test');
    expect(out.signals).toMatchObject([{ kind: 'contradiction', fromTurnId: null, evidence: 'the answer said "All tests pass.", but `npx vitest run` had failed: FAIL  src/stats.test.ts > mean > of an empty array', detail: { later: false } }]);
    expect(out.label).toMatchObject({ rule: 'contradicted' });
  });

  it('not when the later run passes, nor when the answer made no claim', async () => {
    const s = setup();
    const claimed = await s.turn('fix mean', [], 'All tests pass.');
    await s.turn('add a test for NaN', [{ tool: 'Bash', input: { command: 'npm test' }, result: ' Test Files  4 passed (4)\n      Tests  42 passed (42)' }], 'Added.');
    const quiet = await s.turn('fix median', [], 'I changed median() to sort a copy.');
    await s.turn('add a test for NaN', [{ tool: 'Bash', input: { command: 'npm test' }, result: RED, isError: true }], 'It fails.');
    for (const id of [claimed, quiet]) expect((await s.core.call('turnSignals', { turnId: id }, 'test')).signals.map((x) => x.kind)).toEqual(['followup']);
  });
});
