// Issue #21 items 8 and 12: the atomic writer never follows a planted link, the database is owner-only in a 0755
// REIN_HOME, and a far-future createdAt is refused.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createCore } from '../../src-main/node/core/core.ts';
import { resolveHome } from '../../src-main/node/home.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-rel-files-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('files and fields (issue #21 items 8, 12)', () => {
  it('export never writes through a link planted at the old predictable or a guessed temporary name', async () => {
    const home = path.join(root, 'h1');
    const core = createCore({ home: resolveHome({ REIN_HOME: home }) });
    try {
      const out = path.join(root, 'export.jsonl');
      const victim = path.join(root, 'victim');
      writeFileSync(victim, 'keep');
      // The names an attacker would guess: the old `<file>.tmp-<pid>`, and the installers' old pid+clock pattern.
      symlinkSync(victim, `${out}.tmp-${process.pid}`);
      for (let t = Date.now(); t < Date.now() + 50; t++) symlinkSync(victim, path.join(root, `.export.jsonl.rein-${process.pid}-${t}.tmp`));
      const r = await core.call('exportData', { path: out }, 'test');
      console.log(`export with ${readdirSync(root).length - 3} planted links: victim=${JSON.stringify(readFileSync(victim, 'utf8'))}, export ${statSync(out).size} bytes, ${JSON.stringify(r)}`);
      expect(readFileSync(victim, 'utf8')).toBe('keep');
      expect(statSync(out).isFile()).toBe(true);
    } finally {
      core.close();
    }
  });

  it('database files are 0600 when REIN_HOME already exists as 0755', async () => {
    const home = path.join(root, 'h2');
    mkdirSync(home, { mode: 0o755 });
    chmodSync(home, 0o755);
    const core = createCore({ home: resolveHome({ REIN_HOME: home }) });
    try {
      await core.call('captureTurn', { source: 'api', eventId: 'e1', prompt: 'p', response: 'r' }, 'test');
      const modes = readdirSync(home)
        .filter((f) => f.includes('.db') || f.endsWith('.sqlite') || f.includes('-wal') || f.includes('-shm'))
        .map((f) => [f, (statSync(path.join(home, f)).mode & 0o777).toString(8)] as const);
      console.log('database file modes:', JSON.stringify(modes));
      expect(modes.length).toBeGreaterThan(0);
      for (const [, m] of modes) expect(m).toBe('600');
    } finally {
      core.close();
    }
  });

  it('a createdAt far in the future is refused; one within a day is kept', async () => {
    const now = 1_800_000_000_000;
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'h3') }), now: () => now });
    try {
      const far = core.call('captureTurn', { source: 'api', eventId: 'far', prompt: 'p', response: 'r', createdAt: 2 ** 53 - 1 }, 'test');
      await expect(far).rejects.toThrow(/createdAt/);
      const ok = await core.call('captureTurn', { source: 'api', eventId: 'near', prompt: 'p', response: 'r', createdAt: now + 3600_000 }, 'test');
      console.log(`createdAt 2^53-1: refused; now+1h: stored as turn ${ok.turn!.id}`);
      expect(ok.turn!.createdAt).toBe(now + 3600_000);
    } finally {
      core.close();
    }
  });
});
