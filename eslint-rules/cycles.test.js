// The loop rule and the loop finder behind scripts/arrows.mjs, on real files in a temporary tree: the rule reads
// the other files of a loop from disk, as it does in the repository.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RuleTester } from 'eslint';
import tseslint from 'typescript-eslint';
import { afterAll, describe, expect, it } from 'vitest';
import { cyclesRule, describeLoop, findLoops } from './cycles.js';

RuleTester.afterAll = afterAll;
RuleTester.describe = describe;
RuleTester.it = it;
RuleTester.itOnly = it.only;

const root = mkdtempSync(path.join(tmpdir(), 'rein-cycles-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const files = {
  // a three-file loop, one link of it type-only
  'src-main/node/x/a.ts': "import { b } from './b.ts';\nexport const a = b;\n",
  'src-main/node/x/b.ts': "import type { C } from '../y/c.ts';\nexport const b = 1 as C;\n",
  'src-main/node/y/c.ts': "export type C = number;\nexport { a } from '../x/a.ts';\n",
  // a chain with no loop, and a file that names its importer only in a comment
  'src-main/node/z/top.ts': "import { low } from './low.ts';\nexport const top = low;\n",
  'src-main/node/z/low.ts': "// import { top } from './top.ts';\nexport const low = 1;\n",
  // the renderer's files are in scope too
  'src-renderer/store/s.ts': "import type { T } from './t.ts';\nexport type S = T;\n",
  'src-renderer/store/t.ts': "import type { S } from './s.ts';\nexport type T = S | 1;\n",
};
for (const [f, text] of Object.entries(files)) {
  mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
  writeFileSync(path.join(root, f), text);
}
const at = (f) => path.join(root, f);
const code = (f) => files[f];

const tester = new RuleTester({ languageOptions: { parser: tseslint.parser, ecmaVersion: 2024, sourceType: 'module' } });
tester.run('rein/no-cycles', cyclesRule, {
  valid: [
    { filename: at('src-main/node/z/top.ts'), code: code('src-main/node/z/top.ts') },
    { filename: at('src-main/node/z/low.ts'), code: code('src-main/node/z/low.ts') },
  ],
  invalid: [
    {
      filename: at('src-main/node/x/a.ts'),
      code: code('src-main/node/x/a.ts'),
      errors: [{ message: 'import loop: src-main/node/x/a.ts → src-main/node/x/b.ts → src-main/node/y/c.ts → src-main/node/x/a.ts' }],
    },
    { filename: at('src-main/node/y/c.ts'), code: code('src-main/node/y/c.ts'), errors: [{ message: /^import loop: src-main\/node\/y\/c\.ts → src-main\/node\/x\/a\.ts/ }] },
    { filename: at('src-renderer/store/s.ts'), code: code('src-renderer/store/s.ts'), errors: [{ message: 'import loop: src-renderer/store/s.ts → src-renderer/store/t.ts → src-renderer/store/s.ts' }] },
    // the file as edited now, not as it lies on disk: a new import that closes a loop is caught before it is saved
    { filename: at('src-main/node/z/low.ts'), code: "import { top } from './top.ts';\nexport const low = top;\n", errors: [{ message: /import loop: src-main\/node\/z\/low\.ts → src-main\/node\/z\/top\.ts → src-main\/node\/z\/low\.ts/ }] },
  ],
});

describe('findLoops', () => {
  it('finds each loop once, whatever its length, and nothing in a chain', () => {
    const loops = findLoops(Object.keys(files).map(at)).map((l) => describeLoop(l, root)).sort();
    expect(loops).toEqual([
      'src-main/node/x/a.ts → src-main/node/x/b.ts → src-main/node/y/c.ts → src-main/node/x/a.ts',
      'src-renderer/store/s.ts → src-renderer/store/t.ts → src-renderer/store/s.ts',
    ]);
  });
});
