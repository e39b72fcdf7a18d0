// secureHome (issue #19): the home 0700 and the token and database 0600, repaired with one warning each, nothing
// said when all is well, and a symlink never followed.
import { chmodSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { resolveHome, secureHome } from './home.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const mode = (p: string) => statSync(p).mode & 0o777;

it('sets a readable home, token and database back to 0700/0600 with a warning naming each', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rein-home-'));
  dirs.push(dir);
  const home = resolveHome({ REIN_HOME: dir });
  writeFileSync(home.tokenPath, 'a'.repeat(64));
  writeFileSync(home.dbPath, '');
  chmodSync(dir, 0o755);
  chmodSync(home.tokenPath, 0o644);
  chmodSync(home.dbPath, 0o640);
  const lines: string[] = [];
  const given = secureHome(home, (l) => lines.push(l));
  expect([mode(dir), mode(home.tokenPath), mode(home.dbPath)]).toEqual([0o700, 0o600, 0o600]);
  expect(lines).toEqual(given);
  expect(lines).toHaveLength(3);
  expect(lines[1]).toBe(`rein: warning: ${home.tokenPath} was open to other users (mode 0644); set to 0600`);
  expect(secureHome(home, (l) => lines.push(l))).toEqual([]);
});

it('does not follow a token that is a symlink (the token reader refuses it), and skips files not there', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rein-home-'));
  const elsewhere = mkdtempSync(path.join(tmpdir(), 'rein-elsewhere-'));
  dirs.push(dir, elsewhere);
  const target = path.join(elsewhere, 'file');
  writeFileSync(target, 'x');
  chmodSync(target, 0o644);
  const home = resolveHome({ REIN_HOME: dir });
  symlinkSync(target, home.tokenPath);
  expect(secureHome(home, () => {})).toEqual([]);
  expect(mode(target)).toBe(0o644);
});
