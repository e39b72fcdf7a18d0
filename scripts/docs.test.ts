// The docs stay true to the code: README.md and docs/*.md may name only files the repository has, `rein` commands
// the CLI registers, settings the typed config declares, verbs the API declares, relative links that lead somewhere,
// and bench commands that bench/args.ts parses, with argument names the bench reads.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { benchArgs } from '../bench/args.ts';
import { VERB_NAMES } from '../src-main/common/api.ts';
import { SETTING_KEYS } from '../src-main/common/config.ts';
import { commands } from '../src-main/cli/dispatch.ts';
import '../src-main/cli/commands/index.ts';

const root = path.resolve(import.meta.dirname, '..');
const docs = ['README.md', ...readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const tracked = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean);
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };

/** Where a doc line names something: the doc, the line number, the text. */
interface Mention {
  doc: string;
  line: number;
  text: string;
}

/** Inline code spans, and each line of a fenced block as one span. */
function codeSpans(doc: string, text: string): Mention[] {
  const out: Mention[] = [];
  let fenced = false;
  text.split('\n').forEach((line, i) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return;
    }
    if (fenced) out.push({ doc, line: i + 1, text: line });
    else for (const m of line.matchAll(/`([^`]+)`/g)) out.push({ doc, line: i + 1, text: m[1]! });
  });
  return out;
}

const texts = new Map(docs.map((d) => [d, readFileSync(path.join(root, d), 'utf8')]));
const spans = docs.flatMap((d) => codeSpans(d, texts.get(d)!));
const where = (m: Mention) => `${m.doc}:${m.line}`;

// ---- files ----
const SOURCE_EXT = /\.(ts|tsx|mjs|js|sh|md|css|html|png)$/;
/** A backticked token that names a file or folder of this repository (not a path in the Rein home, not a glob). */
function repoPathOf(span: string): string | null {
  const t = span.trim();
  if (!/^[\w.@-]+(\/[\w.@-]+)*\/?$/.test(t)) return null;
  // A lone `name/` may be a folder of the Rein home (`adapters/`); a folder is checked once it has a parent.
  if (t.endsWith('/')) return t.slice(0, -1).includes('/') ? t : null;
  return SOURCE_EXT.test(t) ? t : null;
}
/** The path as written from the root, or as the tail of a tracked path (`serving/proxy.ts`, `core.ts`). */
function pathExists(p: string): boolean {
  if (isIgnored(p)) return true; // a build output or test artifact (out/, e2e/artifacts/): named, not tracked
  if (p.endsWith('/')) return tracked.some((f) => f.startsWith(p) || f.includes(`/${p}`));
  return tracked.some((f) => f === p || f.endsWith(`/${p}`)) || existsSync(path.join(root, p));
}

function isIgnored(p: string): boolean {
  try {
    execFileSync('git', ['check-ignore', '-q', '--no-index', p], { cwd: root });
    return true;
  } catch {
    return false;
  }
}

// ---- rein commands ----
const COMMANDS = new Set(commands().map((c) => c.name));
/** The words of each `rein …` in a span, up to the first flag, placeholder or shell operator. */
function reinInvocations(span: string): string[][] {
  const out: string[][] = [];
  for (const m of span.matchAll(/(?:^|[\s(;&|$])(?:npx\s+|npm run\s+)?rein\s+([a-z][^|;&><#`]*)/g)) {
    const words: string[] = [];
    for (const w of m[1]!.trim().split(/\s+/)) {
      if (!/^[a-z][\w-]*$/.test(w)) break;
      words.push(w);
    }
    out.push(words);
  }
  return out;
}
/** Whether some leading words name a registered command (the CLI's own lookup takes the longest). */
const isCommand = (words: string[]) => words.some((_, n) => COMMANDS.has(words.slice(0, n + 1).join(' ')));

// ---- settings ----
const SETTING_GROUPS = new Set(SETTING_KEYS.map((k) => k.split('.')[0]!));
const NOT_A_SETTING = /\.(ts|tsx|js|mjs|json|md|safetensors|gguf|toml|py|sh|onnx|db|jsonl|log|txt|html|png|yaml|yml|lock|bin)$/;
function settingOf(span: string): string | null {
  const m = /^([a-z]+)\.([a-zA-Z]+)$/.exec(span.trim());
  if (!m || !SETTING_GROUPS.has(m[1]!) || NOT_A_SETTING.test(span.trim())) return null;
  return span.trim();
}

// ---- API verbs ----
const VERBS = new Set<string>(VERB_NAMES);
function verbsNamed(line: string): string[] {
  return [
    ...[...line.matchAll(/POST \/api\/([A-Za-z]+)/g)].map((m) => m[1]!),
    ...[...line.matchAll(/`([A-Za-z]+)` verb/g)].map((m) => m[1]!),
    ...[...line.matchAll(/window\.rein\.([A-Za-z]+)\(/g)].map((m) => m[1]!).filter((v) => v !== 'on'),
  ];
}

// ---- bench commands ----
const BENCH_SCRIPTS = new Map(
  Object.entries(pkg.scripts)
    .filter(([name]) => name.startsWith('bench:'))
    .map(([name, cmd]) => [name, /\b(bench\/[\w-]+\.ts)\b/.exec(cmd)?.[1] ?? null]),
);
/** `node [flags] bench/x.ts args` or `npm run bench:x -- args`: the bench file and its arguments. */
function benchCommand(span: string): { file: string | null; script: string | null; args: string[] } | null {
  const cut = (s: string) => s.split(/\s*(?:\||&&|;|2?>|#)/)[0]!.trim().split(/\s+/).filter(Boolean);
  const node = /\bnode\s+(?:--[\w-]+(?:=\S+)?\s+)*(bench\/[\w-]+\.ts)\b(.*)$/.exec(span);
  if (node) return { file: node[1]!, script: null, args: cut(node[2]!) };
  const npm = /\bnpm run (bench:[\w-]+)(?:\s+--)?(.*)$/.exec(span);
  if (npm) return { file: BENCH_SCRIPTS.get(npm[1]!) ?? null, script: npm[1]!, args: cut(npm[2]!) };
  return null;
}
/** The argument names a bench reads: args.num/str/has('name'), or its own flag('name', …) over them. */
function benchReads(file: string): Set<string> {
  const src = readFileSync(path.join(root, file), 'utf8');
  return new Set([...src.matchAll(/\b(?:num|str|has|flag)\(\s*'([\w-]+)'/g)].map((m) => m[1]!));
}

/** Every problem the docs have, one line each. */
function docProblems(): string[] {
  const problems: string[] = [];
  for (const s of spans) {
    const p = repoPathOf(s.text);
    if (p && !pathExists(p)) problems.push(`${where(s)}: names the file ${p}, which the repository does not have`);
    for (const words of reinInvocations(s.text)) {
      if (words.length > 0 && !isCommand(words)) problems.push(`${where(s)}: \`rein ${words.join(' ')}\` is no command of the CLI (rein --help lists them)`);
    }
    const setting = settingOf(s.text);
    if (setting && !(SETTING_KEYS as string[]).includes(setting)) problems.push(`${where(s)}: ${setting} is no setting (src-main/common/config.ts SETTINGS)`);
    const set = /\brein settings set\s+([\w.]+)/.exec(s.text);
    if (set && !(SETTING_KEYS as string[]).includes(set[1]!)) problems.push(`${where(s)}: ${set[1]} is no setting (src-main/common/config.ts SETTINGS)`);
    const bench = benchCommand(s.text);
    if (bench) {
      if (bench.file === null || !existsSync(path.join(root, bench.file))) {
        problems.push(`${where(s)}: ${bench.script ?? bench.file} is no bench`);
        continue;
      }
      try {
        const args = benchArgs(bench.args);
        const reads = benchReads(bench.file);
        for (const a of bench.args) {
          const name = a.replace(/^--/, '').split('=')[0]!;
          if (args.has(name) && !reads.has(name)) problems.push(`${where(s)}: ${bench.file} reads no argument "${name}"`);
        }
      } catch (e) {
        problems.push(`${where(s)}: ${(e as Error).message}`);
      }
    }
  }
  for (const [doc, text] of texts) {
    text.split('\n').forEach((line, i) => {
      for (const v of verbsNamed(line)) if (!VERBS.has(v)) problems.push(`${doc}:${i + 1}: ${v} is no API verb (src-main/common/api.ts VERBS)`);
      for (const m of line.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = m[1]!;
        if (/^(https?:|mailto:|#)/.test(target)) continue;
        const file = path.resolve(path.dirname(path.join(root, doc)), decodeURIComponent(target.split('#')[0]!));
        if (!file.startsWith(root + path.sep)) problems.push(`${doc}:${i + 1}: the link ${target} leaves the repository`);
        else if (!existsSync(file)) problems.push(`${doc}:${i + 1}: the link ${target} leads nowhere`);
      }
    });
  }
  return problems;
}

describe('the docs', () => {
  it('are README.md and one file a topic under docs/', () => {
    expect(docs.length).toBeGreaterThan(1);
  });

  it('name only files, commands, settings, verbs, links and bench arguments that exist', () => {
    expect(docProblems()).toEqual([]);
  });

  it('mention each kind of name at least once, so each check above has something to check', () => {
    expect(spans.some((s) => repoPathOf(s.text) !== null)).toBe(true);
    expect(spans.some((s) => reinInvocations(s.text).length > 0)).toBe(true);
    expect(spans.some((s) => settingOf(s.text) !== null)).toBe(true);
    expect(spans.some((s) => benchCommand(s.text) !== null)).toBe(true);
    expect([...texts.values()].some((t) => t.split('\n').some((l) => verbsNamed(l).length > 0))).toBe(true);
  });
});
