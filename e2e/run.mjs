// `npm run e2e`: the browser suite alone (the same run scripts/test.sh does after the unit tests). Extra arguments
// go to vitest, e.g. `npm run e2e -- e2e/rating.test.ts`.
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const vitest = path.join(root, 'node_modules/vitest/vitest.mjs');
const r = spawnSync(process.execPath, [vitest, 'run', '--config', path.join(root, 'e2e/vitest.config.ts'), ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(r.status ?? 1);
