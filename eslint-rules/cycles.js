// Import loops among the files of src-main and src-renderer, of any length, type-only imports included: a loop
// means neither file can be read, tested or moved without the other, and it hides which one is the lower room.
// Shared by the lint rule below (a loop through the file being linted is an error at its import) and by
// scripts/arrows.mjs (every loop in the tree, for CI and for a reader).
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** Relative module specifiers in a file's text: static imports and re-exports, side-effect imports, import(). */
const IMPORT = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"](\.[^'"]+)['"]|import\s*\(\s*['"](\.[^'"]+)['"]\s*\)|^import\s+['"](\.[^'"]+)['"]/gm;

/** Comment lines (`//`, `/*`, ` * `), which may show an import as an example. */
const COMMENT_LINE = /^\s*(?:\/\/|\/\*|\*).*$/gm;

export function relativeSpecifiers(text) {
  return [...text.replace(COMMENT_LINE, '').matchAll(IMPORT)].map((m) => m[1] ?? m[2] ?? m[3]);
}

const inScope = (file) => /(?:^|\/)(src-main|src-renderer)\//.test(file.split(path.sep).join('/'));

/** The file a relative specifier names (the repo writes extensions; an extensionless one is tried as .ts/.tsx/index). */
export function resolveSpecifier(fromFile, spec) {
  const base = path.resolve(path.dirname(fromFile), spec);
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, path.join(base, 'index.ts'), path.join(base, 'index.tsx')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return null;
}

const edgeCache = new Map(); // absolute path -> { mtimeMs, targets }

/** The in-scope files that `file` imports, read from disk (cached by modification time). */
export function importsOnDisk(file) {
  let mtimeMs;
  try {
    mtimeMs = statSync(file).mtimeMs;
  } catch {
    return [];
  }
  const hit = edgeCache.get(file);
  if (hit && hit.mtimeMs === mtimeMs) return hit.targets;
  const targets = relativeSpecifiers(readFileSync(file, 'utf8'))
    .map((spec) => resolveSpecifier(file, spec))
    .filter((t) => t !== null && inScope(t));
  edgeCache.set(file, { mtimeMs, targets });
  return targets;
}

/**
 * The shortest loop that leaves `file` by an import to `first` and comes back to `file`, as the list of files
 * [file, first, …, file]; null when `first` never leads back.
 */
export function loopBack(file, first, importsOf = importsOnDisk) {
  const parent = new Map([[first, null]]);
  const queue = [first];
  while (queue.length > 0) {
    const at = queue.shift();
    if (at === file) {
      const chain = [];
      for (let f = at; f !== null; f = parent.get(f)) chain.unshift(f);
      return [file, ...chain];
    }
    for (const next of importsOf(at)) {
      if (!parent.has(next)) {
        parent.set(next, at);
        queue.push(next);
      }
    }
  }
  return null;
}

/**
 * Every loop among `files` (absolute paths), one per strongly connected component (Tarjan), each given as one
 * concrete path through it [a, b, …, a].
 */
export function findLoops(files, importsOf = importsOnDisk) {
  const index = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const loops = [];
  let next = 0;
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of importsOf(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v), index.get(w)));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    const selfLoop = importsOf(v).includes(v);
    if (component.length > 1 || selfLoop) {
      const members = new Set(component);
      const start = component.sort()[0];
      const first = importsOf(start).find((t) => members.has(t));
      loops.push(loopBack(start, first, (f) => importsOf(f).filter((t) => members.has(t))));
    }
  };
  for (const f of files) if (!index.has(f)) visit(f);
  return loops;
}

/** `a.ts → b.ts → a.ts`, paths relative to `root`. */
export const describeLoop = (loop, root) => loop.map((f) => path.relative(root, f).split(path.sep).join('/')).join(' → ');

export const cyclesRule = {
  meta: {
    type: 'problem',
    docs: { description: 'No import loops among the files of src-main and src-renderer (type-only imports count).' },
    schema: [],
  },
  create(context) {
    const file = path.resolve(context.filename);
    if (!inScope(file)) return {};
    const root = file.replace(/[\\/](src-main|src-renderer)[\\/].*$/, '');
    const seen = new Set();
    function check(node, spec) {
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const target = resolveSpecifier(file, spec);
      if (target === null || !inScope(target) || seen.has(target)) return;
      seen.add(target);
      const loop = loopBack(file, target);
      if (loop) context.report({ node, message: `import loop: ${describeLoop(loop, root)}` });
    }
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node, node.source.value),
    };
  },
};
