// Data selection and the round's baseline against a real store: every pending rating trains, the gate's turns are
// older ratings that were not replayed, and the baseline is the bias-corrected EMA of the live rewards.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { emaFold } from '../../common/rewards.ts';
import { createCore, DEFAULT_MODEL_ID, type ReinCore } from '../core/core.ts';
import { resolveHome } from '../home.ts';
import { roundBaseline, selectRound } from './data.ts';

const root = mkdtempSync(path.join(os.tmpdir(), 'rein-data-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function rated(core: ReinCore, values: ('good' | 'bad')[], tag: string): Promise<number[]> {
  const ids: number[] = [];
  for (const [i, value] of values.entries()) {
    const { turn } = await core.call('captureTurn', { source: 'api', eventId: `${tag}-${i}`, prompt: `p${i}`, response: `r${i}` }, 'test');
    ids.push((await core.call('rate', { turnId: turn.id, value }, 'test')).rating.id);
  }
  return ids;
}

describe('a round selects', () => {
  it('every pending rating for training, and older ratings not replayed for the gate (newest first, up to gateTurns)', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'sel') }) });
    try {
      const model = DEFAULT_MODEL_ID;
      const first = await rated(core, Array.from({ length: 32 }, (_, i) => (i % 4 === 0 ? 'good' : 'bad')), 'a');
      const one = selectRound(core.store, model, { replayRatio: 0.25, gateTurns: 64, seed: 1 });
      // A first round: all 32 pending train, nothing is replayed or held out.
      expect(one.map((t) => t.ratingId)).toEqual(first);
      expect(new Set(one.map((t) => t.role))).toEqual(new Set(['pending']));
      // Mark them trained, as a finished round does, then rate 8 more.
      const run = core.store.insertRun({ modelId: model, status: 'succeeded', trigger: 'manual', fromVersion: null }, 'system');
      core.store.write(() => {
        for (const id of first) core.store.stmt('UPDATE ratings SET run_id = ? WHERE id = ?').run(run.id, id);
      });
      const second = await rated(core, Array.from({ length: 8 }, () => 'good'), 'b');
      const two = selectRound(core.store, model, { replayRatio: 0.25, gateTurns: 10, seed: 1 });
      const by = (role: string): number[] => two.filter((t) => t.role === role).map((t) => t.ratingId);
      expect(by('pending')).toEqual(second);
      expect(by('replay')).toHaveLength(2);
      expect(by('heldout')).toHaveLength(10);
      // No rating has two roles, the held-out ones are older ratings, and they are the newest of those left.
      expect(new Set(two.map((t) => t.ratingId)).size).toBe(two.length);
      const left = first.filter((id) => !by('replay').includes(id));
      expect(by('heldout')).toEqual(left.slice(-10));
    } finally {
      core.close();
    }
  });

  it('a baseline that weighs all ratings, where the stored EMA is mostly the first one', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'base') }) });
    try {
      const model = DEFAULT_MODEL_ID;
      expect(roundBaseline(core.store, model)).toBeNull();
      // A good first rating, then 31 bad ones: the stored EMA is seeded at +1 and is still 0.46; the mean is -0.94.
      const values = ['good', ...Array.from({ length: 31 }, () => 'bad')] as ('good' | 'bad')[];
      await rated(core, values, 'c');
      const rewards = values.map((v) => (v === 'good' ? 1 : -1));
      expect(core.store.emaValue(model)).toBeCloseTo(emaFold(null, rewards)!, 12);
      expect(core.store.emaValue(model)).toBeGreaterThan(0.4);
      const b = roundBaseline(core.store, model)!;
      // Σ 0.01·0.99^(32−i)·r_i / (1 − 0.99^32), by hand.
      let num = 0;
      rewards.forEach((r, i) => (num += 0.01 * 0.99 ** (rewards.length - 1 - i) * r));
      expect(b).toBeCloseTo(num / (1 - 0.99 ** 32), 12);
      expect(b).toBeLessThan(-0.85);
      // One rating: the baseline is that reward, as the stored EMA's seed is.
      const solo = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'solo') }) });
      try {
        await rated(solo, ['bad'], 'd');
        expect(roundBaseline(solo.store, model)).toBeCloseTo(-1, 12);
      } finally {
        solo.close();
      }
    } finally {
      core.close();
    }
  });
});
