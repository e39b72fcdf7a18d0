// The edit watch on real files: what it agrees to read (inside the cwd, regular, small, few) and what a revert is.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ContextMessage } from '../../common/domain.ts';
import { REVERT_MAX_FILE_BYTES, REVERT_WINDOW_MS } from '../../common/implicit/tools.ts';
import { EditWatch, MAX_WATCHED_FILES } from './edit-watch.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function project(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'rein-edit-watch-'));
  dirs.push(d);
  return d;
}

const edit = (file: string, oldText: string, newText: string): ContextMessage[] => [
  { role: 'assistant', type: 'tool_use', name: 'Edit', content: JSON.stringify({ file_path: file, old_string: oldText, new_string: newText }), tool_use_id: file },
  { role: 'tool', type: 'tool_result', content: 'ok', tool_use_id: file },
];

describe('EditWatch', () => {
  it('a file back at its content from before the edit is a revert; at the edit, further edited, or gone is not', () => {
    const cwd = project();
    const w = new EditWatch();
    for (const [name, now, reverted] of [
      ['a.ts', 'let x = 1;\n', true],
      ['b.ts', 'let x = 2;\n', false],
      ['c.ts', 'let x = 1; // kept\n', false],
      ['d.ts', null, false],
    ] as const) {
      const file = path.join(cwd, name);
      writeFileSync(file, 'let x = 2;\n');
      expect(w.watch(name, 1, 0, edit(file, 'x = 1', 'x = 2'), cwd)).toHaveLength(1);
      if (now === null) rmSync(file);
      else writeFileSync(file, now);
      expect(w.check(name, 60_000, () => false).length, name).toBe(reverted ? 1 : 0);
    }
  });

  it('only within the window, and only once', () => {
    const cwd = project();
    const file = path.join(cwd, 'a.ts');
    const w = new EditWatch();
    writeFileSync(file, 'let x = 2;\n');
    w.watch('s', 1, 0, edit(file, 'x = 1', 'x = 2'), cwd);
    writeFileSync(file, 'let x = 1;\n');
    expect(w.check('s', REVERT_WINDOW_MS + 1, () => false)).toEqual([]);
    w.watch('s', 2, 0, edit(file, 'x = 1', 'x = 2'), cwd);
    // The watch was taken at "let x = 1": the edit's new text is not there, so nothing can be undone.
    expect(w.check('s', 1, () => false)).toEqual([]);
    writeFileSync(file, 'let x = 2;\n');
    w.watch('s', 3, 0, edit(file, 'x = 1', 'x = 2'), cwd);
    writeFileSync(file, 'let x = 1;\n');
    expect(w.check('s', REVERT_WINDOW_MS, () => false)).toMatchObject([{ turnId: 3, file: { shown: 'a.ts' }, gapMs: REVERT_WINDOW_MS }]);
    expect(w.check('s', REVERT_WINDOW_MS, () => false)).toEqual([]);
  });

  it('reads no file outside the cwd, over the size cap, that is not a regular file, or past the count cap', () => {
    const cwd = project();
    const outside = project();
    const w = new EditWatch();
    writeFileSync(path.join(outside, 'o.ts'), 'x = 2');
    expect(w.watch('s', 1, 0, edit(path.join(outside, 'o.ts'), 'x = 1', 'x = 2'), cwd)).toEqual([]);
    expect(w.watch('s', 1, 0, edit('../' + path.basename(outside) + '/o.ts', 'x = 1', 'x = 2'), cwd)).toEqual([]);
    writeFileSync(path.join(cwd, 'big.ts'), 'x = 2' + ' '.repeat(REVERT_MAX_FILE_BYTES));
    expect(w.watch('s', 1, 0, edit(path.join(cwd, 'big.ts'), 'x = 1', 'x = 2'), cwd)).toEqual([]);
    mkdirSync(path.join(cwd, 'dir.ts'));
    expect(w.watch('s', 1, 0, edit(path.join(cwd, 'dir.ts'), 'x = 1', 'x = 2'), cwd)).toEqual([]);
    const many: ContextMessage[] = [];
    for (let i = 0; i < MAX_WATCHED_FILES + 5; i++) {
      writeFileSync(path.join(cwd, `f${i}.ts`), 'x = 2');
      many.push(...edit(path.join(cwd, `f${i}.ts`), 'x = 1', 'x = 2'));
    }
    expect(w.watch('s', 1, 0, many, cwd)).toHaveLength(MAX_WATCHED_FILES);
  });
});
