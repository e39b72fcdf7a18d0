// Lists every function in src-main longer than the limit (default 150 lines, from its first line to its closing
// brace), measured with the TypeScript compiler's parser. Tests are left out; the documented engine kernels
// (KERNELS below: one model's whole forward, top to bottom, as house style rule 5 asks) are listed apart.
// Usage: node scripts/long-functions.mjs [limit]
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(import.meta.dirname, '..');
const limit = Number(process.argv[2] ?? 150);
/** file:function of the engine kernels allowed past the limit, each with why. */
const KERNELS = new Map([]);

const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'src-main'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((f) => /\.(ts|tsx)$/.test(f) && !/\.test\.tsx?$|\/test-utils\/|\/fixtures\/|\.d\.ts$/.test(f));

function nameOf(node) {
  if (node.name && ts.isIdentifier(node.name)) return node.name.text;
  if (node.name) return node.name.getText();
  let p = node.parent;
  if (p && ts.isVariableDeclaration(p) && ts.isIdentifier(p.name)) return p.name.text;
  if (p && ts.isPropertyAssignment(p)) return p.name.getText();
  if (p && ts.isCallExpression(p)) return `(callback of ${p.expression.getText().slice(0, 40)})`;
  return '(anonymous)';
}

const long = [];
const kernels = [];
for (const f of files) {
  const src = ts.createSourceFile(f, readFileSync(path.join(root, f), 'utf8'), ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = src.getLineAndCharacterOfPosition(node.getStart(src)).line;
      const end = src.getLineAndCharacterOfPosition(node.end).line;
      const lines = end - start + 1;
      if (lines > limit) {
        const name = nameOf(node);
        const entry = { where: `${f}:${start + 1}`, name, lines };
        (KERNELS.has(`${f}:${name}`) ? kernels : long).push(entry);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
}
for (const e of long.sort((a, b) => b.lines - a.lines)) console.log(`${String(e.lines).padStart(4)}  ${e.name}  ${e.where}`);
for (const e of kernels) console.log(`${String(e.lines).padStart(4)}  ${e.name}  ${e.where}  (engine kernel: ${KERNELS.get(`${e.where.split(':')[0]}:${e.name}`)})`);
console.log(`${files.length} files: ${long.length} functions over ${limit} lines${kernels.length ? `, plus ${kernels.length} documented engine kernels` : ''}`);
process.exitCode = long.length === 0 ? 0 : 1;
