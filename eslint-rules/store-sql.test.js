// The store-sql rule through ESLint's RuleTester with the TypeScript parser.
import { RuleTester } from 'eslint';
import tseslint from 'typescript-eslint';
import { afterAll, describe, it } from 'vitest';
import { storeSqlRule } from './store-sql.js';

RuleTester.afterAll = afterAll;
RuleTester.describe = describe;
RuleTester.it = it;
RuleTester.itOnly = it.only;

const tester = new RuleTester({ languageOptions: { parser: tseslint.parser, ecmaVersion: 2024, sourceType: 'module' } });
const at = (p) => `/repo/${p}`;

tester.run('rein/store-sql', storeSqlRule, {
  valid: [
    { filename: at('src-main/node/store/runs.ts'), code: "this.sql.stmt('SELECT 1').get();" },
    { filename: at('src-main/node/store/db.ts'), code: "db.prepare('SELECT 1');" },
    { filename: at('src-main/node/training/round.test.ts'), code: "store.stmt('SELECT * FROM runs').all();" },
    { filename: at('src-main/node/training/test-utils/rated.ts'), code: "store.stmt('SELECT 1');" },
    { filename: at('src-main/node/training/round.ts'), code: 'store.runs.succeed(1, x); /^v(\\d+)$/.exec(e);' },
    { filename: at('bench/learning.ts'), code: "db.prepare('SELECT 1');" },
  ],
  invalid: [
    { filename: at('src-main/node/training/round.ts'), code: "store.stmt('UPDATE runs SET status = 1').run();", errors: [{ message: /SQL outside the store \('\.stmt\('\)/ }] },
    { filename: at('src-main/node/serving/publish.ts'), code: "core.store.db.prepare('SELECT 1');", errors: [{ message: /\.prepare\(/ }] },
    { filename: at('src-main/cli/commands/x.ts'), code: "s.stmt('SELECT 1')", errors: 1 },
  ],
});
