// Counts the imports in src-main/node that run back up the order of rooms (eslint-rules/layers.js NODE_ROOMS):
// from a room into one on its own level or above, or into a room with no place in the order. Type-only imports
// count too. Tests and test-utils are left out, as the lint rule leaves them out. Prints each arrow, then the count.
// Usage: node scripts/arrows.mjs
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { NODE_ROOMS, nodeRoom, roomArrowProblem } from '../eslint-rules/layers.js';

const root = path.resolve(import.meta.dirname, '..');
const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'src-main/node'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((f) => /\.(ts|mts|mjs|js)$/.test(f) && !/\.test\.ts$|\/test-utils\/|\/fixtures\//.test(f));
const IMPORT = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"](\.[^'"]+)['"]|import\s*\(\s*['"](\.[^'"]+)['"]\s*\)|^import\s+['"](\.[^'"]+)['"]/gm;

let arrows = 0;
let imports = 0;
for (const f of files) {
  const text = readFileSync(path.join(root, f), 'utf8');
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2] ?? m[3];
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(f), spec));
    if (!target.startsWith('src-main/node/')) continue;
    imports++;
    const problem = roomArrowProblem(nodeRoom(f), nodeRoom(target));
    if (problem) {
      arrows++;
      console.log(`${f}: ${problem} ('${spec}')`);
    }
  }
}
console.log(`rooms, lowest first: ${NODE_ROOMS.map((level) => level.join(' ')).join(' < ')}`);
console.log(`${files.length} files, ${imports} imports between files of src-main/node, ${arrows} running back up the order`);
process.exitCode = arrows === 0 ? 0 : 1;
