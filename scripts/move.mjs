// Moves files or folders with `git mv` and rewrites every reference to them: relative specifiers in code (imports,
// `new URL(…)`, `path.resolve(import.meta.dirname, …)`) from both moved and unmoved files, and repo paths in code
// comments, docs and configs (`src-main/node/serve.ts`, `node/serve.ts`, `server/server.ts`: any suffix of two or
// more segments). Usage: node scripts/move.mjs OLD NEW [OLD NEW …]
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
if (args.length === 0 || args.length % 2 !== 0) throw new Error('usage: move.mjs OLD NEW [OLD NEW …]');
const pairs = [];
for (let i = 0; i < args.length; i += 2) pairs.push([args[i].replace(/\/$/, ''), args[i + 1].replace(/\/$/, '')]);

const git = (...a) => execFileSync('git', a, { cwd: root, encoding: 'utf8' });
const tracked = git('ls-files').split('\n').filter(Boolean);
const oldDirs = new Set();
for (const f of tracked) for (let d = path.posix.dirname(f); d !== '.'; d = path.posix.dirname(d)) oldDirs.add(d);

/** New repo path of an old repo path (file or folder), or the same path when nothing moves it. */
function mapPath(p) {
  for (const [from, to] of pairs) {
    if (p === from) return to;
    if (p.startsWith(from + '/')) return to + p.slice(from.length);
  }
  return p;
}
const fileMap = new Map(tracked.map((f) => [f, mapPath(f)]));
const movedFiles = [...fileMap].filter(([a, b]) => a !== b);
if (movedFiles.length === 0) throw new Error('nothing to move');

const CODE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;
const TEXT = /\.(ts|tsx|mts|cts|js|mjs|cjs|md|json|html|css|sh|py|yml|yaml)$|^\.ci\/run$/;
const SKIP = /(^|\/)(fixtures|node_modules)\/|package-lock\.json$|scripts\/move\.mjs$/;

// 1. Relative specifiers, computed against the tree before the move.
const edits = new Map();
for (const oldFile of tracked) {
  if (!CODE.test(oldFile) || SKIP.test(oldFile)) continue;
  const newFile = fileMap.get(oldFile);
  const text = readFileSync(path.join(root, oldFile), 'utf8');
  const out = text.replace(/(['"`])(\.\.?\/[^'"`\s$]*)\1/g, (m, q, spec) => {
    if (spec === './' || spec === '../') return m;
    const oldTarget = path.posix.normalize(path.posix.join(path.posix.dirname(oldFile), spec));
    const isFile = fileMap.has(oldTarget);
    const isDir = oldDirs.has(oldTarget) || oldTarget === '.';
    if (!isFile && !isDir) return m;
    const newTarget = isFile ? fileMap.get(oldTarget) : mapPath(oldTarget);
    if (newTarget === oldTarget && newFile === oldFile) return m;
    let rel = path.posix.relative(path.posix.dirname(newFile), newTarget) || '.';
    if (!rel.startsWith('.')) rel = './' + rel;
    if (spec.endsWith('/') && !rel.endsWith('/')) rel += '/';
    return q + rel + q;
  });
  if (out !== text) edits.set(oldFile, out);
}

// 2. Repo paths in text (docs, comments, configs): longest suffixes first.
const subs = [];
const seen = new Set();
function addSuffixes(from, to) {
  const a = from.split('/');
  const b = to.split('/');
  for (let n = a.length; n >= 2; n--) {
    // The suffix's prefix must also lead the new path (the suffix covers every renamed segment).
    const prefix = a.slice(0, a.length - n);
    if (prefix.some((seg, i) => b[i] !== seg)) continue;
    const s = a.slice(-n).join('/');
    const t = b.slice(prefix.length).join('/');
    if (s !== t && !seen.has(s)) {
      seen.add(s);
      subs.push([s, t]);
    }
  }
}
for (const [from, to] of movedFiles) addSuffixes(from, to);
for (const [from, to] of pairs) addSuffixes(from, to);
subs.sort((x, y) => y[0].length - x[0].length);
const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
// A match must start a path (not inside a longer segment) and end one (no more name characters after it).
const re = new RegExp(`(?<![A-Za-z0-9_.-])(${subs.map(([s]) => esc(s)).join('|')})(?![A-Za-z0-9_-]|\\.[A-Za-z])`, 'g');
const subMap = new Map(subs);
for (const f of tracked) {
  if (!TEXT.test(f) || SKIP.test(f)) continue;
  const text = edits.get(f) ?? readFileSync(path.join(root, f), 'utf8');
  const out = text.replace(re, (m) => subMap.get(m) ?? m);
  if (out !== text) edits.set(f, out);
}

// 3. Move, then write the edited text at each file's new place.
for (const [from, to] of pairs) {
  if (!existsSync(path.join(root, from))) throw new Error(`${from} does not exist`);
  const dest = path.join(root, to);
  if (existsSync(dest) && statSync(dest).isDirectory() && statSync(path.join(root, from)).isDirectory()) {
    for (const [a, b] of movedFiles) if (a.startsWith(from + '/') && existsSync(path.join(root, a))) {
      execFileSync('mkdir', ['-p', path.dirname(path.join(root, b))]);
      git('mv', a, b);
    }
  } else {
    execFileSync('mkdir', ['-p', path.dirname(dest)]);
    git('mv', from, to);
  }
}
for (const [oldFile, text] of edits) writeFileSync(path.join(root, fileMap.get(oldFile)), text);
console.log(`moved ${movedFiles.length} files, rewrote ${edits.size}`);
