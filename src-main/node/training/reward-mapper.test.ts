// The user's reward mapper through the real core and store: tried on recent ratings before it is saved; one that
// throws, loops, returns NaN or leaves [-1, 1] is refused with its reason and the saved mapping stays, with every
// rating untouched; a saved one sets the rewards of the round's selection (data.ts selectRound).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BadInputError } from '../../common/errors.ts';
import { createCore, DEFAULT_MODEL_ID, type ReinCore } from '../core/core.ts';
import { resolveHome } from '../home.ts';
import { selectRound } from './data.ts';
import { MAPPER_CALL_MS, mapRewards } from './reward-mapper.ts';

const root = mkdtempSync(path.join(os.tmpdir(), 'rein-mapper-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function withRatings(name: string): Promise<ReinCore> {
  const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, name) }) });
  const rate = async (i: number, value: 'good' | 'bad' | number, extra: { tags?: string[]; comment?: string } = {}) => {
    const { turn } = await core.call('captureTurn', { source: i === 2 ? 'codex' : 'api', eventId: `e${i}`, prompt: 'p', response: 'x'.repeat(100 * (i + 1)) }, 'test');
    await core.call('rate', { turnId: turn!.id, value, ...extra }, 'test');
  };
  await rate(0, 'good', { tags: ['style'] });
  await rate(1, 'bad', { tags: ['wrong'], comment: 'off by one' });
  await rate(2, 4);
  return core;
}

const snapshot = (core: ReinCore) => core.store.stmt('SELECT id, kind, value, scale, tags, comment, undone_at, run_id FROM ratings ORDER BY id').all();

describe('training.rewardMapper', () => {
  it('is tried on recent ratings: score, tags, comment, source and length reach it', async () => {
    const core = await withRatings('try');
    try {
      const src = `(rating, turn) => rating.tags.includes('wrong') ? (rating.comment ? -0.5 : -1) : turn.source === 'codex' ? rating.score / 10 : turn.length / 1000`;
      const { results } = await core.call('testRewardMapper', { source: src }, 'test');
      // Newest first: the codex score 4, the Bad with a tag and a comment, the Good of 100 characters.
      expect(results.map((r) => [r.kind, r.defaultReward, r.reward])).toEqual([
        ['scale', 0.5, 0.4],
        ['bad', -1, -0.5],
        ['good', 1, 0.1],
      ]);
    } finally {
      core.close();
    }
  });

  // 22 sandbox processes (each mapper saved, then tried): about 3 s each on a loaded 2-core machine.
  it('refuses a mapper that throws, loops, returns NaN or leaves [-1, 1]; the saved mapping and every rating stay', { timeout: 240_000 }, async () => {
    const core = await withRatings('refuse');
    try {
      const good = '(rating) => rating.reward / 2';
      await core.call('setSettings', { values: { 'training.rewardMapper': good } }, 'test');
      const before = snapshot(core);
      const bad: [string, RegExp][] = [
        ['(rating) => { throw new Error("nope") }', /threw on rating \d+: Error: nope/],
        ['(rating) => { while (true) {} }', new RegExp(`ran longer than ${MAPPER_CALL_MS} ms on rating \\d+`)],
        ['(rating) => rating.tags.length / 0 - 1 / 0', /returned NaN for rating \d+/],
        ['(rating) => rating.reward * 3', /returned 1.5 for rating \d+; it must return a number from -1 to 1/],
        ['(rating) => String(rating.reward)', /returned string/],
        ['async (rating) => 0', /returned object/],
        ['rating => require("fs")', /threw on rating \d+: ReferenceError: require is not defined/],
        ['(rating) => process.exit(1)', /ReferenceError: process is not defined/],
        ['(r) => Function("return 1")()', /threw on rating \d+: EvalError/],
        ['1 +', /does not compile/],
        ['42', /must be a function/],
      ];
      for (const [src, why] of bad) {
        const err = await core.call('setSettings', { values: { 'training.rewardMapper': src } }, 'test').then(
          () => null,
          (e: unknown) => e,
        );
        expect(err, src).toBeInstanceOf(BadInputError);
        expect((err as BadInputError).message, src).toMatch(why);
        expect((err as BadInputError).message).toMatch(/^training\.rewardMapper: /);
        expect((await core.call('getSettings', {}, 'test'))['training.rewardMapper']).toBe(good);
        await expect(core.call('testRewardMapper', { source: src }, 'test')).rejects.toBeInstanceOf(BadInputError);
      }
      expect(snapshot(core)).toEqual(before);
      // The round still maps with the mapper that was saved.
      expect((await selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, heldoutFraction: 0, gateTurns: 0, seed: 1, lineageRuns: new Set() })).map((t) => t.reward)).toEqual([0.5, -0.5, 0.25]);
    } finally {
      core.close();
    }
  });

  it('sets the round\'s rewards once saved, and the default (stored) rewards come back when cleared', async () => {
    const core = await withRatings('round');
    try {
      const rewards = async () => (await selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, heldoutFraction: 0, gateTurns: 0, seed: 1, lineageRuns: new Set() })).map((t) => t.reward);
      expect(await rewards()).toEqual([1, -1, 0.5]);
      await core.call('setSettings', { values: { 'training.rewardMapper': "(rating, turn) => rating.tags.includes('style') ? 0.2 : rating.reward" } }, 'test');
      expect(await rewards()).toEqual([0.2, -1, 0.5]);
      // An empty text clears it.
      expect((await core.call('setSettings', { values: { 'training.rewardMapper': '  ' } }, 'test'))['training.rewardMapper']).toBe(null);
      expect(await rewards()).toEqual([1, -1, 0.5]);
    } finally {
      core.close();
    }
  });

  it('a saved mapper that fails on a newer rating fails the round with its reason instead of guessing a reward', async () => {
    const core = await withRatings('later');
    try {
      await core.call('setSettings', { values: { 'training.rewardMapper': "(rating) => rating.comment === 'boom' ? NaN : rating.reward" } }, 'test');
      const { turn } = await core.call('captureTurn', { source: 'api', eventId: 'late', prompt: 'p', response: 'r' }, 'test');
      await core.call('rate', { turnId: turn!.id, value: 'bad', comment: 'boom' }, 'test');
      const before = snapshot(core);
      await expect(selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, heldoutFraction: 0, gateTurns: 0, seed: 1, lineageRuns: new Set() })).rejects.toThrow(/training\.rewardMapper: returned NaN for rating 4/);
      expect(snapshot(core)).toEqual(before);
    } finally {
      core.close();
    }
  });

  it('holds no object of the host realm: the constructor chain ends in the sandbox', async () => {
    const src = '(rating) => { const F = rating.constructor.constructor; return typeof F("return process")() }';
    await expect(mapRewards(src, [{ ratingId: 1, turnId: 1, rating: { kind: 'good', score: null, reward: 1, tags: [], comment: null, correction: null }, turn: { source: 'api', length: 1, promptLength: 1 } }])).rejects.toThrow(/EvalError/);
  });
});
