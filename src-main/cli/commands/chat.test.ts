// `rein chat` and `rein arena` through the real launcher on the small LM, reading piped stdin lines: answers come
// back, inline ratings land on the chat's own turn, the version switch and the system prompt apply, and a bad
// command or version is named. Directly on the store, and against a running `rein serve` (the answer's tokens then
// arrive as chatToken events over its event stream).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SMALL_LM_DIR } from '../../node/demo/small-lm.ts';
import { runRein, startServeChild } from '../test-utils/rein.ts';
import { parseVersion } from './chat.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-chat-cli-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('rein chat', () => {
  it('reads versions as numbers, v-numbers, base or active, and names anything else', () => {
    expect([parseVersion('3'), parseVersion('v12'), parseVersion('base'), parseVersion('BASE'), parseVersion('active')]).toEqual([3, 12, 0, 0, undefined]);
    expect(() => parseVersion('latest')).toThrow(/a version is a number \(3 or v3\), base or active, not "latest"/);
  });

  it('answers piped lines, rates the last answer inline, switches version and system prompt', { timeout: 120_000 }, async () => {
    const home = path.join(root, 'direct');
    expect((await runRein(['settings', 'set', `model.active=${JSON.stringify(SMALL_LM_DIR)}`], { home })).code).toBe(0);
    const input = ['/good', 'How do I sort a list?', '/good', '/rate 4', '/version base', '/system Be brief.', 'What is a closure?', '/correct Use a function that keeps its scope.', '/rate 9', '/quit', 'never read'].join('\n');
    const r = await runRein(['chat', '--max-tokens', '24'], { home, input, timeoutMs: 110_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('rein: nothing to rate yet: ask something first');
    expect(r.stdout).toContain('(turn 1, the base: /good /bad /rate N)');
    expect(r.stdout).toContain('Rated turn 1 good.');
    expect(r.stdout).toContain('Rated turn 1 4/5.');
    expect(r.stdout).toContain('Answering with the base.');
    expect(r.stdout).toContain('Rated turn 2 with a correction.');
    expect(r.stderr).toContain('rein: /rate takes a whole number 1-5, not "9"');
    const turns = JSON.parse((await runRein(['turns', '--json'], { home })).stdout) as { items: { id: number; source: string; onPolicy: boolean }[] };
    expect(turns.items.map((t) => [t.id, t.source, t.onPolicy])).toEqual([
      [2, 'chat', true],
      [1, 'chat', true],
    ]);
    const ratings = JSON.parse((await runRein(['ratings', '--json'], { home })).stdout) as { items: { turnId: number; kind: string; scale: number | null; correction: string | null }[] };
    expect(ratings.items.map((x) => [x.turnId, x.kind, x.scale, x.correction])).toEqual([
      [2, 'bad', null, 'Use a function that keeps its scope.'],
      [1, 'scale', 4, null],
    ]);
  });

  it('against a running core: the chat goes through it (tokens subscribed on its event stream), and the arena names a missing version', { timeout: 120_000 }, async () => {
    const home = path.join(root, 'served');
    expect((await runRein(['settings', 'set', `model.active=${JSON.stringify(SMALL_LM_DIR)}`], { home })).code).toBe(0);
    const serve = await startServeChild(home);
    try {
      const r = await runRein(['chat', '--max-tokens', '24', '--json'], { home, input: 'Write a test for add()\n', timeoutMs: 110_000 });
      expect(r.code, r.stderr).toBe(0);
      const answer = JSON.parse(r.stdout.trim().split('\n').pop()!) as { turnId: number; text: string; version: number; onPolicy: boolean };
      expect(answer).toMatchObject({ turnId: 1, version: 0, onPolicy: true });
      expect(answer.text.length).toBeGreaterThan(0);
      const a = await runRein(['arena', '--versions', 'base,2'], { home, input: 'hello\n', timeoutMs: 60_000 });
      expect(a.code).toBe(0);
      expect(a.stderr).toMatch(/rein: chat: the model server answered 404: adapter version v2 does not exist/);
      const none = await runRein(['arena'], { home, input: 'hello\n' });
      expect(none.stderr).toMatch(/no trained version is active/);
    } finally {
      expect(await serve.stop()).toBe(0);
    }
  });
});
