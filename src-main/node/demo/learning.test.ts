// The learning loop's own arithmetic and its held-out split; the loop itself runs in cli/commands/demo.test.ts, and
// here with follow-ups instead of some clicks (one short round on the small LM).
import { describe, expect, it } from 'vitest';
import { allPrompts } from './corpus.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Rng } from '../../common/engine/rng.ts';
import { HELD_OUT_MAX, HELD_OUT_PROMPTS, loopRule, modelCorpus, pairedChange, promptSet, ratePoint, runKl, runLearning, TRAINING_PROMPTS } from './learning.ts';
import { LANGS } from './prompted.ts';

describe('the learning loop', () => {
  it('holds out 128 of the corpus\'s 300 distinct prompts, none of which a training round draws', () => {
    const all = allPrompts();
    expect(new Set(all).size).toBe(300);
    expect(HELD_OUT_PROMPTS).toHaveLength(HELD_OUT_MAX);
    expect(new Set([...HELD_OUT_PROMPTS, ...TRAINING_PROMPTS]).size).toBe(300);
    const held = new Set(HELD_OUT_PROMPTS);
    expect(TRAINING_PROMPTS.filter((p) => held.has(p))).toEqual([]);
  });

  it('on the prompt-reading model: held-out prompts are of compositions its pretraining never saw; rounds draw the others', () => {
    expect(modelCorpus(path.resolve('resources/small-lm-prompted'))).toBe('prompted');
    expect(modelCorpus(path.resolve('resources/small-lm'))).toBe('styles');
    const set = promptSet('prompted');
    expect(new Set(set.held.map((p) => p.text)).size).toBe(HELD_OUT_MAX);
    const held = new Set(set.held.map((p) => p.text));
    const rng = new Rng(5);
    const drawn = Array.from({ length: 2000 }, () => set.train(rng));
    expect(drawn.filter((p) => held.has(p.text))).toEqual([]);
    // Every language is asked for on both sides, each prompt names the language it says it does.
    for (const ps of [set.held, drawn]) {
      expect(new Set(ps.map((p) => p.lang))).toEqual(new Set(LANGS.map((l) => l.name)));
      for (const p of ps) expect(p.text).toContain(p.lang!);
    }
  });

  it('a conditional rule is good for the style exactly where the prompt asks for one of its languages', () => {
    const rule = loopRule('question', ['Python', 'Go']);
    const py = { text: 'Sort the list in Python.', lang: 'Python' };
    const rust = { text: 'Sort the list in Rust.', lang: 'Rust' };
    expect([rule(py, 'Done. Want tests?'), rule(py, 'Done.'), rule(rust, 'Done. Want tests?'), rule(rust, 'Done.')]).toEqual([true, false, false, true]);
    const plain = loopRule('question', null);
    expect([plain(rust, 'Done. Want tests?'), plain(rust, 'Done.')]).toEqual([true, false]);
  });

  it('the paired change is the mean of after − before with a normal 95% interval; the rate has its Wilson interval', () => {
    const before = [false, false, false, true];
    const after = [true, true, false, true];
    const c = pairedChange(before, after);
    // d = [1, 1, 0, 0]: mean 0.5, sd √(1/3), half-width 1.96·sd/2.
    expect(c.mean).toBe(0.5);
    expect(c.ci[0]).toBeCloseTo(0.5 - 1.96 * Math.sqrt(1 / 3) / 2, 12);
    expect(pairedChange(before, before)).toEqual({ mean: 0, ci: [0, 0] });
    expect(ratePoint(after)).toMatchObject({ rate: 0.75, k: 3, n: 4 });
    expect(ratePoint(after).ci[0]).toBeLessThan(0.75);
  });

  it('reads the KL and its budget from a run\'s gate metrics whatever the gate names them', () => {
    expect(runKl({ gate: { scope: 'trained', accuracy: 1, kl: 0.02, probes: 8, klBudget: 0.1 } })).toEqual({ kl: 0.02, budget: 0.1 });
    expect(runKl({ gate: { klToParent: 0.03, klFromBase: 0.2, klBudgetPerToken: 0.05 } })).toEqual({ kl: 0.03, budget: 0.05 });
    expect(runKl(null)).toEqual({ kl: null, budget: null });
    expect(runKl({ samples: {} })).toEqual({ kl: null, budget: null });
  });

  it('the simulated user\'s follow-ups reach training as weak labels through the proxy, signals and the reader (training.implicit weighted)', { timeout: 400_000 }, async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'rein-learning-weak-'));
    try {
      const r = await runLearning({ root, rule: 'question', seed: 1, rounds: 1, n: 8, held: 4, teacher: 0, explicit: 0.5, implicit: 'weighted' });
      const [p] = r.rounds;
      // Half the answers are clicked; each of the other four gets a follow-up in its session through the proxy.
      expect(p!).toMatchObject({ rated: 4, clicks: 4, sampled: 8 });
      const w = p!.implicit!;
      expect(w.followups).toBe(4);
      // The run trained exactly the labels the reader gives the follow-ups the user wrote: they came through the
      // product's capture path (core/signals.ts) and data.ts weakLabelled, not from the loop.
      expect(w.read).toBeGreaterThan(0);
      expect(w.labels).toBe(w.read);
      expect(w.drawn).toBe(w.labels);
      expect(w.agree).toBe(w.readRight);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
