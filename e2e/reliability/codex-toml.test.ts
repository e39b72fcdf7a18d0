// Issue #21 item 5: `rein setup codex` on config.toml files that a line-by-line `[` test misread. The real installer
// either writes a file whose other values are byte-identical with notify at the top level, or refuses and writes
// nothing; never "already set up" on a corrupted file.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { afterAll, describe, expect, it } from 'vitest';
import { ReinError } from '../../src-main/common/errors.ts';
import { codexIntegration } from '../../src-main/node/install/codex.ts';
import { findTopLevelKey, parseStringArray } from '../../src-main/node/install/codex-toml.ts';
import { install, uninstall, type InstallEnv } from '../../src-main/node/install/installer.ts';
import { readChain } from '../../src-main/node/integrations/codex/notify.ts';
import { installEnv, QUIET } from '../../src-main/node/install/test-utils/install-env.ts';
import { figure } from './figures.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-rel-toml-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function sandbox(name: string, config: string | Buffer): { env: InstallEnv; file: string } {
  const home = path.join(root, name);
  const codex = path.join(home, '.codex');
  mkdirSync(codex, { recursive: true });
  const file = path.join(codex, 'config.toml');
  writeFileSync(file, config);
  const env = installEnv(home, path.join(home, 'rein'), { CODEX_HOME: codex });
  return { env, file };
}

const NESTED = 'model = "o3"\nmatrix = [\n  [1, 2],\n  [3, 4],\n]\n\n[profiles.x]\nmodel = "y"\n';
const INSTRUCTIONS = 'developer_instructions = """\nBe careful.\n[IMPORTANT]\nnever push to main\n"""\n\n[profiles.x]\nmodel = "y"\n';

describe('rein setup codex on tricky config.toml (issue #21 item 5)', () => {
  it('a top-level nested array: notify lands after the array, before the first table', async () => {
    const { env, file } = sandbox('nested', NESTED);
    await install(codexIntegration, env, QUIET);
    const after = readFileSync(file, 'utf8');
    const lines = after.split('\n');
    const notifyAt = lines.findIndex((l) => l.startsWith('notify = '));
    console.log(`nested array: notify on line ${notifyAt + 1}, array closes on line ${lines.indexOf(']') + 1}, first table on line ${lines.indexOf('[profiles.x]') + 1}`);
    expect(after.replace(lines[notifyAt]! + '\n', '')).toBe(NESTED);
    expect(notifyAt).toBeGreaterThan(lines.indexOf(']'));
    expect(notifyAt).toBeLessThan(lines.indexOf('[profiles.x]'));
    expect(parseStringArray(findTopLevelKey(after, 'notify')!.value).at(-1)).toBe('codex-notify');
  });

  it('[IMPORTANT] inside a """ string: the string is untouched and notify is a real top-level key', async () => {
    const { env, file } = sandbox('instructions', INSTRUCTIONS);
    await install(codexIntegration, env, QUIET);
    const after = readFileSync(file, 'utf8');
    const body = after.slice(after.indexOf('"""'), after.indexOf('"""', after.indexOf('"""') + 3) + 3);
    console.log(`""" string: ${JSON.stringify(body)}; notify found at top level: ${findTopLevelKey(after, 'notify') !== null}`);
    expect(body).toBe('"""\nBe careful.\n[IMPORTANT]\nnever push to main\n"""');
    const lines = after.split('\n');
    expect(lines.findIndex((l) => l.startsWith('notify = '))).toBeLessThan(lines.indexOf('[profiles.x]'));
    expect(lines.findIndex((l) => l.startsWith('notify = '))).toBeGreaterThan(lines.indexOf('"""'));
    // A second run finds Rein's notify and changes nothing.
    const again = await install(codexIntegration, env, QUIET);
    expect(again.changes.filter((c) => c.path === file)).toHaveLength(0);
  });

  it('a """ string that never closes: a clear refusal, the file unchanged', async () => {
    const broken = 'developer_instructions = """\n[IMPORTANT]\nno end\n';
    const { env, file } = sandbox('broken', broken);
    const err = await install(codexIntegration, env, QUIET).then(() => null, (e: Error) => e);
    console.log(`unterminated """: ${err?.message}`);
    expect(err?.message).toMatch(/not valid TOML \(line 1, column \d+: unfinished string\)/);
    expect(readFileSync(file, 'utf8')).toBe(broken);
  });
});

// `rein setup codex` exited 0 and wrote a config.toml that Codex then refused to start with, when notify was a table
// (`[notify]`, a dotted `notify.cmd`): the editor saw only `notify =` lines. Every file of the corpus
// (codex-toml-corpus/, one hostile shape each) goes through the real installer. An `edit-` file must come out as TOML
// that a maintained parser reads, with notify Rein's array at the top level, every other value meaning what it meant,
// its BOM and line endings kept, the user's notify chained, a second setup changing nothing and the uninstall giving
// the original bytes back. A `refuse-` file must be refused with a message that says why, and left byte for byte.
const CORPUS = path.join(import.meta.dirname, 'codex-toml-corpus');
const FILES = readdirSync(CORPUS).filter((f) => f.endsWith('.toml')).sort();

/** A parsed document as comparable text: keys sorted, dates, big integers, NaN and -0 tagged so JSON keeps them. */
function meaning(doc: unknown): string {
  const norm = (v: unknown): unknown => {
    if (v instanceof Date) return `date:${v.toISOString()}`;
    if (typeof v === 'bigint') return `bigint:${v}`;
    if (typeof v === 'number' && (Number.isNaN(v) || Object.is(v, -0) || !Number.isFinite(v))) return `number:${Object.is(v, -0) ? '-0' : v}`;
    if (Array.isArray(v)) return v.map(norm);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, norm((v as Record<string, unknown>)[k])]));
    return v;
  };
  return JSON.stringify(norm(doc));
}
const tomlOf = (text: string) => parseToml(text, { integersAsBigInt: 'asNeeded' }) as Record<string, unknown>;
const without = (doc: Record<string, unknown>, key: string) => Object.fromEntries(Object.entries(doc).filter(([k]) => k !== key));
const allCrlf = (t: string) => t.includes('\r\n') && !/(^|[^\r])\n/.test(t);

describe('rein setup codex on a corpus of hostile config.toml files', () => {
  it('the corpus holds at least 22 files of each outcome between them', () => {
    console.log(`corpus: ${FILES.length} files, ${FILES.filter((f) => f.startsWith('edit-')).length} to edit, ${FILES.filter((f) => f.startsWith('refuse-')).length} to refuse`);
    expect(FILES.length).toBeGreaterThanOrEqual(22);
    expect(FILES.every((f) => f.startsWith('edit-') || f.startsWith('refuse-'))).toBe(true);
  });

  const outcomes: string[] = [];
  afterAll(() => figure(`rein setup codex on ${FILES.length} hostile config.toml files: ${outcomes.filter((o) => o === 'ok').length} as expected, ${outcomes.filter((o) => o !== 'ok').length} not`));

  it.each(FILES)('%s', async (name) => {
    const original = readFileSync(path.join(CORPUS, name));
    const text = original.toString('utf8');
    const { env, file } = sandbox(`corpus-${name}`, original);
    outcomes.push('pending');
    const at = outcomes.length - 1;
    const err = await install(codexIntegration, env, QUIET).then(() => null, (e: unknown) => e);
    const after = readFileSync(file);
    if (name.startsWith('refuse-')) {
      console.log(`${name}: ${err === null ? `written: ${JSON.stringify(after.toString('utf8'))}` : (err as Error).message}`);
      expect(err).toBeInstanceOf(ReinError);
      expect((err as Error).message.startsWith(`${file}: `)).toBe(true);
      expect((err as Error).message).toMatch(/by hand/);
      expect(after.equals(original)).toBe(true);
      outcomes[at] = 'ok';
      return;
    }
    const out = after.toString('utf8');
    console.log(`${name}: ${err === null ? JSON.stringify(out) : `refused: ${(err as Error).message}`}`);
    expect(err).toBeNull();
    const before = tomlOf(text);
    const doc = tomlOf(out);
    expect(doc.notify).toEqual([...env.hookCommand, 'codex-notify']);
    expect(meaning(without(doc, 'notify'))).toBe(meaning(without(before, 'notify')));
    expect(out.startsWith('\ufeff')).toBe(text.startsWith('\ufeff'));
    if (allCrlf(text)) expect(allCrlf(out)).toBe(true);
    // The chain keeps the user's notify (an empty one runs nothing, so none is chained).
    expect(readChain(env.rein)).toEqual(Array.isArray(before.notify) && before.notify.length > 0 ? before.notify : null);
    const again = await install(codexIntegration, env, QUIET);
    expect(again.changes.filter((c) => c.path === file)).toHaveLength(0);
    uninstall(codexIntegration, env, { dryRun: false });
    expect(readFileSync(file).equals(original)).toBe(true);
    outcomes[at] = 'ok';
  });
});
