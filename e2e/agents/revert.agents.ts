// The revert and contradiction signals from the real Claude Code (revert.scenario.ts does the driving): a file the
// agent edited and the user put back before the next prompt is a `revert` on that turn, read as a Bad weak label; a
// file the user kept and edited further is none; an answer that says all tests pass is a `contradiction` when its own
// `npm test` failed, and when the next turn's first `npm test` fails.
import { beforeAll, describe, expect, it } from 'vitest';
import { EDIT_NEW, EDIT_OLD, TEST_CLAIM } from './fake-models.ts';
import { inNetns, skipReason } from './netns.ts';

interface Signal {
  kind: string;
  fromTurnId: number | null;
  evidence: string;
  createdAt: number;
  detail: Record<string, unknown> | null;
}
interface Facts {
  prompts: string[];
  original: string;
  runs: { code: number | null; session_id?: string; result?: string; stderr: string }[];
  notesAfterEdit: string;
  otherAfterEdit: string;
  turns: { id: number; prompt: string; response: string; session: string | null; createdAt: number | null; context: { type?: string; name?: string; content: string; is_error?: boolean }[] }[];
  signals: { signals: Signal[]; label: { value: string; rule: string; quote: string } | null; explanation: string | null }[];
  editSchema: { properties?: Record<string, unknown>; required?: string[] } | null;
  toolResults: { content: unknown; is_error?: boolean }[];
  log: string;
}

const skip = skipReason();
describe.skipIf(skip !== null)(`the revert and contradiction signals from Claude Code${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let f: Facts;
  beforeAll(async () => {
    f = (await inNetns<Facts>('revert.scenario.ts', 300_000)).result;
  });

  it('the four prompts run in one session, and the real Edit tool changed both files', () => {
    expect(f.runs.map((r) => [r.code, r.session_id])).toEqual([0, 1, 2, 3].map(() => [0, f.runs[0]!.session_id]));
    expect(f.turns.map((t) => [t.prompt, t.session])).toEqual(f.prompts.map((p) => [p, f.runs[0]!.session_id]));
    const edited = f.original.replace(EDIT_OLD, EDIT_NEW);
    expect([f.notesAfterEdit, f.otherAfterEdit]).toEqual([edited, edited]);
    // The input Claude Code declares for Edit is the one core/edit-watch.ts undoes.
    expect(f.editSchema?.required).toEqual(['file_path', 'old_string', 'new_string']);
    expect(f.turns[0]!.context.filter((m) => m.type === 'tool_use').map((m) => m.name)).toEqual(['Read', 'Edit']);
    // The first prompt of a session names a transcript Claude Code has not written yet; that is no warning.
    expect(f.log).toContain('the user reverted an edit of the previous Claude Code turn');
    expect(f.log).not.toContain('rein hooks warn');
  });

  it('the restored src/notes.txt is a revert on the first turn, seen at the next prompt, and a Bad label', () => {
    const s = f.signals[0]!;
    const revert = s.signals.filter((x) => x.kind === 'revert');
    expect(revert).toEqual([expect.objectContaining({ fromTurnId: null, evidence: expect.stringMatching(/^you reverted the agent's edit of src\/notes\.txt within 1 min$/) })]);
    expect(revert[0]!.detail).toMatchObject({ tools: ['Edit'] });
    // UserPromptSubmit checked the file before the second turn ran, not its Stop.
    expect(revert[0]!.createdAt).toBeLessThan(f.turns[1]!.createdAt!);
    expect(s.label).toMatchObject({ value: 'bad', rule: 'reverted', quote: revert[0]!.evidence });
    expect(s.explanation).toBe(`Rein read this as Bad because ${revert[0]!.evidence}`);
  });

  it('other.txt, kept and edited further, is no revert', () => {
    expect(f.signals[1]!.signals.map((x) => x.kind)).toEqual(['followup']);
    expect(f.signals[1]!.label).toBeNull();
  });

  it("an answer that says all tests pass over its own failing npm test is a contradiction, read from Claude Code's result", () => {
    // Claude Code's Bash result for a failing command: "Exit code 1", npm's echo of the script, the output; is_error.
    const bash = f.turns[3]!.context.find((m) => m.type === 'tool_result')!;
    expect(bash).toMatchObject({ is_error: true, content: expect.stringMatching(/^Exit code 1\n\n> test\n> node -e [\s\S]*\nFAIL src\/x\.test\.ts > adds$/) });
    expect(f.turns[3]!.response).toBe(TEST_CLAIM);
    const s = f.signals[3]!;
    expect(s.signals.filter((x) => x.kind === 'contradiction')).toEqual([
      expect.objectContaining({ fromTurnId: null, evidence: 'the answer said "All tests pass.", but `npm test` had failed: FAIL src/x.test.ts > adds' }),
    ]);
    expect(s.label).toMatchObject({ value: 'bad', rule: 'contradicted' });
  });

  it('an answer that says all tests pass with no run is a contradiction when the next turn first runs them and they fail', () => {
    expect(f.turns[2]!.context.filter((m) => m.type === 'tool_use')).toEqual([]);
    const s = f.signals[2]!;
    expect(s.signals.filter((x) => x.kind === 'contradiction')).toEqual([
      expect.objectContaining({ fromTurnId: f.turns[3]!.id, evidence: 'the answer said "All tests pass.", but `npm test` then failed: FAIL src/x.test.ts > adds' }),
    ]);
    expect(s.label).toMatchObject({ value: 'bad', rule: 'contradicted' });
  });
});
