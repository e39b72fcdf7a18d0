// Two checks of the import structure, each printed arrow by arrow, then counted; exits non-zero when either finds one.
// 1. The imports in src-main/node that run back up the order of rooms (eslint-rules/layers.js NODE_ROOMS): from a
//    room into one on its own level or above, or into a room with no place in the order. Type-only imports count
//    too. Tests and test-utils are left out, as the lint rule leaves them out.
// 2. Import loops of any length among all files of src-main and src-renderer, tests included, type-only imports
//    included (eslint-rules/cycles.js; the lint rule rein/no-cycles reports the same loops file by file).
// Usage: node scripts/arrows.mjs
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { NODE_ROOMS, nodeRoom, roomArrowProblem } from '../eslint-rules/layers.js';
import { describeLoop, findLoops, relativeSpecifiers } from '../eslint-rules/cycles.js';

const root = path.resolve(import.meta.dirname, '..');
const tracked = (...dirs) =>
  execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', ...dirs], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter((f) => /\.(ts|tsx|mts|mjs|js)$/.test(f));
const files = tracked('src-main/node').filter((f) => !/\.test\.ts$|\/test-utils\/|\/fixtures\//.test(f));

let arrows = 0;
let imports = 0;
for (const f of files) {
  for (const spec of relativeSpecifiers(readFileSync(path.join(root, f), 'utf8'))) {
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

const all = tracked('src-main', 'src-renderer').map((f) => path.join(root, f));
const loops = findLoops(all);
for (const loop of loops) console.log(`import loop: ${describeLoop(loop, root)}`);
console.log(`${all.length} files of src-main and src-renderer, ${loops.length} import loops`);
process.exitCode = arrows === 0 && loops.length === 0 ? 0 : 1;
