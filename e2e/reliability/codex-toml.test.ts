// Issue #21 item 5: `rein setup codex` on config.toml files that a line-by-line `[` test misread. The real installer
// either writes a file whose other values are byte-identical with notify at the top level, or refuses and writes
// nothing; never "already set up" on a corrupted file.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { codexIntegration } from '../../src-main/node/install/codex.ts';
import { findTopLevelKey, parseStringArray } from '../../src-main/node/install/codex-toml.ts';
import { install, type InstallEnv } from '../../src-main/node/install/installer.ts';
import { installEnv, QUIET } from '../../src-main/node/install/test-utils/install-env.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-rel-toml-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function sandbox(name: string, config: string): { env: InstallEnv; file: string } {
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
    expect(err?.message).toMatch(/never ends/);
    expect(readFileSync(file, 'utf8')).toBe(broken);
  });
});
