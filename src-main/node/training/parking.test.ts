// Parked ratings against a real store: a rating whose turn a round cannot encode is parked with encodeRound's reason
// before the selection, so it is not pending (status, the scheduler's count after a rejection, the round's held-out
// draw) and says why (the rating's view); a parked rating whose reason went away (here: a model of the
// same id with a tokenizer that has the turn's ids) is pending again at the next round's start.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createCore, DEFAULT_MODEL_ID, type ReinCore } from '../core/core.ts';
import { loadTokenizer } from '../engine/tokenizer.ts';
import { writeTinyModel } from '../engine/tiny.ts';
import { resolveHome } from '../home.ts';
import { selectRound } from './data.ts';
import { parkUnencodable } from './parking.ts';

const root = mkdtempSync(path.join(os.tmpdir(), 'rein-parking-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// Llama 3's tokenizer has 128,256 ids and Qwen's 151,646 (the tiny models take the real tokenizers): an id between
// them is outside the first model's vocabulary and inside the second's.
const llamaDir = path.join(root, 'llama');
const qwenDir = path.join(root, 'qwen');
writeTinyModel(llamaDir, { arch: 'llama', layers: 1, hidden: 16, heads: 2, kvHeads: 1, intermediate: 32 });
writeTinyModel(qwenDir, { arch: 'qwen2', layers: 1, hidden: 16, heads: 2, kvHeads: 1, intermediate: 32 });
const llama = loadTokenizer(llamaDir);
const qwen = loadTokenizer(qwenDir);
const FOREIGN_ID = 140_000;

function encodeOpts(_core: ReinCore) {
  return { modelId: DEFAULT_MODEL_ID, baseWeights: null, advantageClip: 2, maxTokens: 256 };
}

describe('parking', () => {
  it('parks what cannot be encoded with its reason, leaves it out of pending and the round, and unparks it when the reason goes away', async () => {
    expect(llama.size).toBeLessThan(FOREIGN_ID);
    expect(qwen.size).toBeGreaterThan(FOREIGN_ID);
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'home') }) });
    try {
      const rate = async (eventId: string, extra: Record<string, unknown>, value: 'good' | 'bad' | 3): Promise<number> => {
        const { turn } = await core.call('captureTurn', { source: 'proxy', eventId, prompt: 'Write it.', response: 'Sure, here it is.', ...extra }, 'test');
        return (await core.call('rate', { turnId: turn!.id, value }, 'test')).rating.id;
      };
      const fine = await Promise.all(['a', 'b', 'c'].map((e) => rate(e, {}, 'good')));
      // Sampled by a model whose vocabulary has the id (stored tokens and μ, on-policy for this model id).
      const policy = { modelId: DEFAULT_MODEL_ID, temperature: 1, topP: 1 };
      const foreign = await rate('foreign', { tokens: [FOREIGN_ID, 5], logprobs: [-0.5, -0.5], policy }, 'bad');
      const neutral = await rate('neutral', {}, 3);
      expect(core.status().pending).toBe(5);

      const first = await parkUnencodable(core.store, DEFAULT_MODEL_ID, llama, await encodeOpts(core));
      expect(first.parked.map((p) => p.ratingId).sort()).toEqual([foreign, neutral].sort());
      expect(first.parked.find((p) => p.ratingId === foreign)!.why).toMatch(/token 0 has id 140000, outside the vocabulary \(size 128256\)/);
      expect(first.parked.find((p) => p.ratingId === neutral)!.why).toMatch(/neutral .* carries no preference/);
      expect(first.total).toBe(2);

      // Not pending anywhere: the status, the scheduler's count, the round's selection and its held-out draw.
      const s = core.status();
      expect([s.pending, s.parked]).toEqual([3, 2]);
      expect(core.store.runs.pendingSince(DEFAULT_MODEL_ID, 0)).toBe(3);
      const turns = await selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, heldoutFraction: 0.5, gateTurns: 0, seed: 1, lineageRuns: new Set() });
      expect(turns.map((t) => t.ratingId).sort()).toEqual([...fine].sort());
      // The reason is on the rating (the CLI and the Ratings screen show it: format.test.ts, e2e ratings-parked.test.ts).
      const views = (await core.call('listRatings', { limit: 10 }, 'test')).items;
      const view = views.find((r) => r.id === foreign)!;
      expect(view.parked).toMatch(/outside the vocabulary/);
      expect(views.find((r) => r.id === fine[0])!.parked).toBeNull();

      // Nothing changes while the reasons hold.
      const again = await parkUnencodable(core.store, DEFAULT_MODEL_ID, llama, await encodeOpts(core));
      expect([again.parked, again.unparked, again.total]).toEqual([[], [], 2]);

      // The model of this id is now one whose vocabulary has the id: the rating is pending again; the neutral one stays.
      const next = await parkUnencodable(core.store, DEFAULT_MODEL_ID, qwen, await encodeOpts(core));
      expect([next.parked, next.unparked, next.total]).toEqual([[], [foreign], 1]);
      expect([core.status().pending, core.status().parked]).toEqual([4, 1]);
      expect((await core.call('listRatings', { limit: 10 }, 'test')).items.find((r) => r.id === foreign)!.parked).toBeNull();
    } finally {
      core.close();
    }
  });
});
