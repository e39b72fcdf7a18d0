import { describe, expect, it } from 'vitest';
import type { ContextMessage } from '../../src-main/common/domain.ts';
import { lineDiff, toolCalls } from './tool-calls.ts';

const use = (name: string, input: unknown, id?: string): ContextMessage => ({
  role: 'assistant',
  type: 'tool_use',
  name,
  content: typeof input === 'string' ? input : JSON.stringify(input),
  ...(id === undefined ? {} : { tool_use_id: id }),
});
const result = (content: string, extra: Record<string, unknown> = {}): ContextMessage => ({ role: 'tool', type: 'tool_result', content, ...extra });

describe('a turn’s tool calls', () => {
  it('pairs Claude’s calls with their results by id, whatever order the results come in', () => {
    const calls = toolCalls([
      { role: 'assistant', content: 'Looking first.' },
      use('Bash', { command: 'npm test', description: 'Run the tests' }, 'a'),
      use('Read', { file_path: '/r/x.ts' }, 'b'),
      result('     1\tconst x = 1;', { tool_use_id: 'b' }),
      result('1 failed', { tool_use_id: 'a', is_error: true }),
    ]);
    expect(calls.map((c) => [c.name, c.target, c.output, c.isError])).toEqual([
      ['Bash', 'npm test', '1 failed', true],
      ['Read', '/r/x.ts', '     1\tconst x = 1;', false],
    ]);
    // The description is more than the summary line says; a Read's path alone is all of its input.
    expect(calls[0]!.detail).toBe('description: Run the tests');
    expect(calls[1]!.detail).toBeNull();
  });

  it('pairs the proxy’s results, which name their tool and carry no id, in order', () => {
    const calls = toolCalls([use('shell', { command: ['ls', '-la'] }), use('read_file', { path: 'a' }), result('a.txt', { name: 'shell' }), result('text')]);
    expect(calls.map((c) => [c.target, c.output])).toEqual([
      ['ls -la', 'a.txt'],
      ['a', 'text'],
    ]);
  });

  it('shows an Edit as the lines it removed and added, with unchanged lines as context', () => {
    const [edit] = toolCalls([use('Edit', { file_path: '/r/p.ts', old_string: 'a\nb\nc', new_string: 'a\nB\nc' })]);
    expect(edit!.target).toBe('/r/p.ts');
    expect(edit!.diff).toEqual([
      { kind: 'same', text: 'a' },
      { kind: 'del', text: 'b' },
      { kind: 'add', text: 'B' },
      { kind: 'same', text: 'c' },
    ]);
    expect(edit!.detail).toBeNull();
    expect(edit!.output).toBeNull();
  });

  it('keeps a call whose input was cut when captured, as the text it is', () => {
    const [cut] = toolCalls([use('Write', '{"file_path":"/r/big.ts","content":"line\n…[truncated 900 chars]')]);
    expect(cut!.target).toBe('{"file_path":"/r/big.ts","content":"line');
    expect(cut!.detail).toContain('[truncated 900 chars]');
  });

  it('reads an apply_patch call as a diff', () => {
    const [patch] = toolCalls([use('apply_patch', { input: '*** Begin Patch\n*** Update File: a.ts\n-old\n+new\n*** End Patch' })]);
    expect(patch!.diff?.filter((l) => l.kind !== 'same')).toEqual([
      { kind: 'del', text: 'old' },
      { kind: 'add', text: 'new' },
    ]);
  });

  it('diffs keep at most three unchanged lines on each side', () => {
    const before = ['1', '2', '3', '4', '5', 'x', '6', '7', '8', '9'].join('\n');
    const d = lineDiff(before, before.replace('x', 'y'));
    expect(d.map((l) => l.text)).toEqual(['3', '4', '5', 'x', 'y', '6', '7', '8']);
  });
});
