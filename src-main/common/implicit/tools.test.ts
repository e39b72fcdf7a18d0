// The matchers over an agent turn's tool calls: which edits can be undone, which answers claim success, which runs
// failed, and when a run contradicts a claim.
import { describe, expect, it } from 'vitest';
import type { ContextMessage } from '../domain.ts';
import { contradictionEvidence, contradictionNext, contradictionWithin, failingLine, fileEdits, runKind, successClaim, undoEdits } from './tools.ts';

let n = 0;
function call(name: string, input: unknown, result?: string, isError = false): ContextMessage[] {
  const id = `toolu_${++n}`;
  const out: ContextMessage[] = [{ role: 'assistant', type: 'tool_use', name, content: JSON.stringify(input), tool_use_id: id }];
  if (result !== undefined) out.push({ role: 'tool', type: 'tool_result', content: result, tool_use_id: id, ...(isError ? { is_error: true } : {}) });
  return out;
}
const bash = (command: string, result: string, isError = false) => call('Bash', { command }, result, isError);

const VITEST_FAIL = [
  ' FAIL  src/stats.test.ts > mean > of an empty array',
  'AssertionError: expected NaN to be 0',
  ' Test Files  1 failed | 3 passed (4)',
  '      Tests  1 failed | 41 passed (42)',
].join('\n');
const VITEST_PASS = [' ✓ src/stats.test.ts (12 tests) 4ms', ' Test Files  4 passed (4)', '      Tests  42 passed (42)'].join('\n');

describe('edits', () => {
  it('undoes Edit and MultiEdit calls on the text after them, newest first, to the text before', () => {
    const before = 'export function mean(xs) {\n  return sum(xs) / xs.length;\n}\n';
    const ctx = [
      ...call('Edit', { file_path: '/p/src/stats.ts', old_string: 'return sum(xs) / xs.length;', new_string: 'return xs.length ? sum(xs) / xs.length : 0;' }, 'The file /p/src/stats.ts has been updated.'),
      ...call('MultiEdit', { file_path: '/p/src/stats.ts', edits: [{ old_string: 'mean(xs)', new_string: 'mean(xs: number[])' }] }, 'ok'),
    ];
    const after = 'export function mean(xs: number[]) {\n  return xs.length ? sum(xs) / xs.length : 0;\n}\n';
    const [edits] = fileEdits(ctx);
    expect(edits).toMatchObject({ path: '/p/src/stats.ts', undoable: true, tools: ['Edit', 'MultiEdit'] });
    expect(undoEdits(after, edits!)).toBe(before);
  });

  it('gives up where the old text cannot be known: a Write, replace_all, a deletion, a new text found twice or not at all', () => {
    expect(fileEdits(call('Write', { file_path: '/p/a.ts', content: 'x' }, 'ok'))[0]!.undoable).toBe(false);
    expect(fileEdits(call('Edit', { file_path: '/p/a.ts', old_string: 'a', new_string: 'b', replace_all: true }, 'ok'))[0]!.undoable).toBe(false);
    expect(fileEdits(call('Edit', { file_path: '/p/a.ts', old_string: 'a', new_string: '' }, 'ok'))[0]!.undoable).toBe(false);
    const e = fileEdits(call('Edit', { file_path: '/p/a.ts', old_string: 'x = 1', new_string: 'x = 2' }, 'ok'))[0]!;
    expect(undoEdits('x = 2; y = 3', e)).toBe('x = 1; y = 3');
    expect(undoEdits('x = 2; x = 2', e)).toBeNull();
    expect(undoEdits('x = 3', e)).toBeNull();
    // An edit the tool refused changed nothing.
    expect(fileEdits(call('Edit', { file_path: '/p/a.ts', old_string: 'q', new_string: 'r' }, 'String to replace not found in file.', true))).toEqual([]);
  });
});

describe('claims', () => {
  it('reads a plain statement that the tests pass or the build succeeds', () => {
    expect(successClaim('Fixed the off-by-one in `mean`. All tests pass.')).toEqual({ kind: 'test', quote: 'All tests pass.' });
    expect(successClaim('Done: the tests are now passing and the docs are updated.')).toMatchObject({ kind: 'test' });
    expect(successClaim('All 42 tests passed.')).toMatchObject({ kind: 'test' });
    expect(successClaim('All tests pass with no errors.')).toMatchObject({ kind: 'test' });
    expect(successClaim('I bumped the version; the build succeeds.')).toMatchObject({ kind: 'build', quote: 'the build succeeds.' });
  });

  it('reads no claim in a wish, a condition, a hedge, a denial, a question or a claim taken back', () => {
    for (const text of [
      'I renamed the function. Make sure the tests pass before you merge.',
      'Run `npm test`; if the tests pass, ship it.',
      'The tests should pass now.',
      "I couldn't run them, so I don't know whether the tests pass.",
      'The tests do not pass yet.',
      'Do the tests pass on your machine?',
      'The tests pass locally but CI fails on Windows.',
      'None of the tests pass yet.',
      'Three tests pass, two fail with a timeout.',
      'I added a helper for parsing dates.',
    ]) {
      expect(successClaim(text), text).toBeNull();
    }
  });
});

describe('runs', () => {
  it('knows test and build commands by the runner at the start of a part of the line, not a file that names one', () => {
    expect(runKind('npm test')).toBe('test');
    expect(runKind('cd web && CI=1 npx vitest run src/a.test.ts')).toBe('test');
    expect(runKind('python -m pytest -q')).toBe('test');
    expect(runKind('cargo build --release')).toBe('build');
    expect(runKind('cat vitest.config.ts')).toBeNull();
    expect(runKind('grep -rn jest package.json')).toBeNull();
  });

  it("finds a runner's failure line, an exit status the client wrote, and nothing in a passing run or a refused call", () => {
    expect(failingLine(VITEST_FAIL)).toBe('FAIL  src/stats.test.ts > mean > of an empty array');
    expect(failingLine(`Exit code 1\n${VITEST_FAIL}`)).toBe('FAIL  src/stats.test.ts > mean > of an empty array');
    expect(failingLine('Exit code: 2\nWall time: 1.2 seconds\nOutput:\nTypeError: x is not a function')).toBe('TypeError: x is not a function');
    expect(failingLine('src/a.ts(3,7): error TS2322: Type string is not assignable to type number.')).toMatch(/error TS2322/);
    expect(failingLine('===== 1 failed, 12 passed in 0.31s =====')).toMatch(/1 failed/);
    expect(failingLine(VITEST_PASS)).toBeNull();
    expect(failingLine('Tests  0 failed | 42 passed')).toBeNull();
    // A log line that says "Error:" in a run that passed is no failure.
    expect(failingLine(`Exit code: 0\nError: expected warning logged\n${VITEST_PASS}`)).toBeNull();
    expect(failingLine("The user doesn't want to proceed with this tool use.")).toBeNull();
    expect(failingLine(JSON.stringify({ output: 'running 3 tests\ntest result: FAILED. 2 passed; 1 failed', metadata: { exit_code: 101 } }))).toBe('test result: FAILED. 2 passed; 1 failed');
    expect(failingLine(JSON.stringify({ output: 'test result: ok. 3 passed; 0 failed', metadata: { exit_code: 0 } }))).toBeNull();
    // A status with nothing of the run's own: a broken shell tool, not a failing test.
    expect(failingLine('Error: Exit code 1')).toBeNull();
  });

  it("reads Claude Code's result of a failing `npm test`, past npm's echo of the script", () => {
    // The shape Claude Code 2.1.330 sent back in e2e/agents/revert.scenario.ts: the status, npm's two banner lines, the
    // output; the second test's runner prints no strong line, and its script names a file that looks like an error.
    expect(failingLine(`Exit code 1\n\n> test\n> node -e "console.log('FAIL src/x.test.ts > adds'); process.exit(1)"\n\nFAIL src/x.test.ts > adds`)).toBe('FAIL src/x.test.ts > adds');
    const nodeTest = 'Exit code 1\n\n> test\n> node --test test/apiError.test.js\n\n✖ apiError answers 400 (1.2ms)\n  AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n# fail 1';
    expect(failingLine(nodeTest)).toBe('✖ apiError answers 400 (1.2ms)');
  });
});

describe('contradictions', () => {
  it('an answer that says all tests pass, then a failing npm test in the next turn before any edit', () => {
    const next = [...call('Read', { file_path: '/p/src/stats.ts' }, 'export function mean…'), ...bash('npm test', `Exit code 1\n${VITEST_FAIL}`, true)];
    const c = contradictionNext('Fixed `mean` for empty arrays. All tests pass.', next);
    expect(c).not.toBeNull();
    expect(contradictionEvidence(c!.claim, c!.run, true)).toBe('the answer said "All tests pass.", but `npm test` then failed: FAIL  src/stats.test.ts > mean > of an empty array');
  });

  it('not when the later run passes, when the answer made no claim, or when an edit came before the run', () => {
    expect(contradictionNext('All tests pass.', bash('npm test', VITEST_PASS))).toBeNull();
    expect(contradictionNext('I fixed `mean` for empty arrays.', bash('npm test', `Exit code 1\n${VITEST_FAIL}`, true))).toBeNull();
    const afterEdit = [...call('Edit', { file_path: '/p/a.ts', old_string: 'a', new_string: 'b' }, 'ok'), ...bash('npm test', `Exit code 1\n${VITEST_FAIL}`, true)];
    expect(contradictionNext('All tests pass.', afterEdit)).toBeNull();
    // A build claim is not contradicted by a failing test run.
    expect(contradictionNext('The build succeeds.', bash('npm test', `Exit code 1\n${VITEST_FAIL}`, true))).toBeNull();
  });

  it("within one turn: the answer says the tests pass over its own red last run, but not over a run an edit came after", () => {
    const red = bash('npx vitest run', `Exit code 1\n${VITEST_FAIL}`, true);
    expect(contradictionWithin(red, 'Done. All tests pass.')).toMatchObject({ claim: { kind: 'test' }, run: { command: 'npx vitest run' } });
    expect(contradictionWithin([...red, ...bash('npx vitest run', VITEST_PASS)], 'Done. All tests pass.')).toBeNull();
    expect(contradictionWithin([...red, ...call('Edit', { file_path: '/p/a.ts', old_string: 'a', new_string: 'b' }, 'ok')], 'Done. All tests pass.')).toBeNull();
  });
});
