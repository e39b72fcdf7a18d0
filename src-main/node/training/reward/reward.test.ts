// The reward model on the small LM (issue #14 item 3): 64 of the model's own answers are captured and rated by a
// style rule through the core, a version is trained from the store (features: the frozen base's pooled last hidden
// state on ONNX Runtime), and it is scored on 128 more answers to held-out prompts it never saw.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../../common/engine/rng.ts';
import { auroc, chanceOfGood } from '../../../common/training/reward.ts';
import { createCore, type ReinCore } from '../../core/core.ts';
import { Engine } from '../../engine/engine.ts';
import { resolveHome } from '../../home.ts';
import { styleRule } from '../../demo/corpus.ts';
import { HELD_OUT_PROMPTS, TRAINING_PROMPTS } from '../../demo/learning.ts';
import { SMALL_LM_DIR } from '../../demo/small-lm.ts';
import { rewardGate, rewardGateBlocks } from './gate.ts';
import { heldOutRating, scoreAnswer, trainRewardModel } from './train.ts';

const RULE = 'question' as const;
const rule = styleRule(RULE);
let dir: string;
let core: ReinCore;
let engine: Engine;

async function answer(prompt: string, seed: number): Promise<string> {
  const tok = engine.tokenizer!;
  const s = await engine.sample(tok.encodeChat([{ role: 'user', content: prompt }], { addGenerationPrompt: true }), { seed, maxTokens: 96, temperature: 1 });
  return tok.decode(s.tokens, { skipSpecialTokens: true });
}

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rein-reward-'));
  core = createCore({ home: resolveHome({ REIN_HOME: dir }) });
  engine = Engine.load(SMALL_LM_DIR, { threads: 1 });
});

afterAll(async () => {
  core.close();
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the reward model on the small LM', () => {
  it(`reaches held-out AUROC >= 0.8 after 64 ratings by the "${RULE}" rule`, async () => {
    await core.call('setSettings', { values: { 'model.active': SMALL_LM_DIR, 'training.auto': false } }, 'cli');
    const rng = new Rng(14).fork('reward prompts');
    for (let i = 0; i < 64; i++) {
      const prompt = TRAINING_PROMPTS[Math.floor(rng.uniform() * TRAINING_PROMPTS.length)]!;
      const text = await answer(prompt, i);
      const { turn } = await core.call('captureTurn', { source: 'api', eventId: `e${i}`, prompt, response: text }, 'cli');
      await core.call('rate', { turnId: turn!.id, value: rule(text) ? 'good' : 'bad', rater: 'rule' }, 'cli');
    }
    const m = await trainRewardModel({ store: core.store, modelId: SMALL_LM_DIR, modelDir: SMALL_LM_DIR, engine });
    expect(m).not.toBeNull();
    expect(m!.version).toBe(1);
    // The product holds out a fixed fifth of the ratings; the rest are fitted.
    const ids = (await core.call('listRatings', { limit: 100 }, 'cli')).items.map((r) => r.id);
    expect(m!.ratings).toBe(ids.filter((id) => !heldOutRating(id)).length);

    const scores: number[] = [];
    const labels: (0 | 1)[] = [];
    for (const [i, prompt] of HELD_OUT_PROMPTS.entries()) {
      const text = await answer(prompt, 100_000 + i);
      scores.push(await scoreAnswer(engine, m!, [{ role: 'user', content: prompt }], text));
      labels.push(rule(text) ? 1 : 0);
    }
    const a = auroc(scores, labels)!;
    console.log(`reward model after 64 "${RULE}" ratings: held-out AUROC ${a.auroc.toFixed(3)} [${a.ci[0].toFixed(3)}, ${a.ci[1].toFixed(3)}] on ${a.positives}+${a.negatives} answers; product's own held-out: ${JSON.stringify(m!.metrics.auroc)}`);
    expect(a.positives).toBeGreaterThanOrEqual(5);
    expect(a.auroc).toBeGreaterThanOrEqual(0.8);
    expect(a.ci[0]).toBeGreaterThan(0.5);
    // The same scores against labels shuffled away from the answers: the bar is not met by chance.
    const shuffled = [...labels];
    const srng = new Rng(3);
    for (let i = shuffled.length - 1; i > 0; i--) {
      const j = Math.floor(srng.uniform() * (i + 1));
      [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
    }
    expect(auroc(scores, shuffled)!.ci[0]).toBeLessThan(0.5);
  }, 300_000);

  it('the verbs: status shows the held-out metrics; rewardAsk asks always by default, and when unsure only near 0.5, recording the score and never a rating', async () => {
    const st = await core.call('rewardStatus', {}, 'cli');
    expect(st.latest?.version).toBe(1);
    expect(st.latest?.baseModel).toBe(SMALL_LM_DIR);
    expect(st.latest?.adapterVersion).toBeNull();
    expect(st.ask).toBe('always');
    expect('head' in (st.latest as object)).toBe(false);

    const capture = async (id: string, text: string): Promise<number> =>
      (await core.call('captureTurn', { source: 'api', eventId: id, prompt: HELD_OUT_PROMPTS[0]!, response: text }, 'cli')).turn!.id;
    const clear = await capture('ask-1', 'Sure. You can open the file and read it line by line. That should work.');
    const q = await capture('ask-2', 'Sure. You can open the file and read it line by line. That should work. Should I explain the edge cases?');
    expect(await core.call('rewardAsk', { turnId: clear }, 'cli')).toMatchObject({ ask: true, p: null, rewardModelVersion: 1 });

    await core.call('setSettings', { values: { 'reward.ask': 'unsure' } }, 'cli');
    const a = await core.call('rewardAsk', { turnId: clear }, 'cli');
    const b = await core.call('rewardAsk', { turnId: q }, 'cli');
    // The rule's answer without a question is scored low, the one ending in a question high; neither is labelled.
    expect(a.p!).toBeLessThan(0.5);
    expect(b.p!).toBeGreaterThan(0.5);
    for (const r of [a, b]) expect(r.reason).toBe(r.ask ? `the reward model is unsure: ${chanceOfGood(r.p!)}` : `the reward model is confident: ${chanceOfGood(r.p!)}; not asked, and not labelled`);
    expect((await core.call('getTurn', { turnId: clear }, 'cli')).state).toBe('unrated');
    // The score shows on the turn whether or not the popup asked (the Ratings detail reads it from getTurn).
    for (const [id, r] of [[clear, a], [q, b]] as const) {
      expect((await core.call('getTurn', { turnId: id }, 'cli')).rewardPrediction).toEqual({ p: r.p, asked: r.ask, version: 1 });
    }
    expect((await core.call('getTurn', { turnId: q }, 'cli')).rating).toBeNull();
    expect((await core.call('rewardStatus', {}, 'cli')).notAsked).toBe([a, b].filter((r) => !r.ask).length);
    // A margin of 0.5 asks about everything; the stored score is reused.
    await core.call('setSettings', { values: { 'reward.unsureMargin': 0.5 } }, 'cli');
    expect(await core.call('rewardAsk', { turnId: clear }, 'cli')).toMatchObject({ ask: true, p: a.p });

    // trainRewardModel: a second version on the same ratings.
    const t = await core.call('trainRewardModel', {}, 'cli');
    expect(t.model?.version).toBe(2);
    expect((await core.call('rewardStatus', {}, 'cli')).history.map((h) => h.version)).toEqual([1]);
  }, 120_000);

  it('the gate metric: an adapter against itself differs by exactly 0 and never blocks', async () => {
    const m = core.store.rewardModels.latest(SMALL_LM_DIR)!;
    const adapter = engine.newAdapter({ r: 4 }, 1);
    const g = (await rewardGate(engine, m, adapter, null, [[{ role: 'user', content: HELD_OUT_PROMPTS[1]! }], [{ role: 'user', content: HELD_OUT_PROMPTS[2]! }], [{ role: 'user', content: HELD_OUT_PROMPTS[3]! }]], 5, 2))!;
    // B = 0: the fresh adapter is the base, and both sides sample with the same seeds.
    expect(g.prompts).toBe(2);
    expect(g.difference).toEqual({ mean: 0, ci: [0, 0] });
    expect(g.candidate).toBe(g.parent);
    expect(rewardGateBlocks(g, true)).toBeNull();
    const worse = { ...g, difference: { mean: -0.3, ci: [-0.5, -0.1] as [number, number] } };
    expect(rewardGateBlocks(worse, false)).toBeNull();
    expect(rewardGateBlocks(worse, true)).toMatch(/below its parent's: -0.300 \[-0.500, -0.100\] on 2 held-out prompts/);
  }, 120_000);
});
