// Probes of a one-class first round, in the real round: the committed small pretrained LM, the balanced preset as
// every user gets it, on-policy answers captured and rated through the core, one round in the real worker. Each
// compares the round's candidate (the version it wrote, live or rejected) with the base on prompts no round trains
// on (HELD_OUT_PROMPTS), sampled with the same seeds on both sides:
// - all Good: the output distribution must not narrow. An EMA baseline from 0 met these ratings at about 0, so A ≈ +1
//   and the round was supervised fine-tuning on its own samples;
// - all Bad, from a rater who only ever says Bad (to answers that do not end with a question): no style the rater
//   did not judge may rise. With A ≈ −1 the round pushed down everything it sampled, and so up what it did not.
// And a round with contrast (the same rater, Good and Bad) still learns: the rated style rises; the other styles'
// changes are printed beside it.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { modelLinearParams } from '../../common/engine/families/registry.ts';
import { meanEstimate, type MeanEstimate } from '../../common/training/intervals.ts';
import { createCore, type ReinCore } from '../core/core.ts';
import { Engine } from '../engine/engine.ts';
import { loadPeftAdapter } from '../engine/peft.ts';
import { resolveHome } from '../home.ts';
import { STYLES, styleRule, type StyleName } from '../demo/corpus.ts';
import { HELD_OUT_PROMPTS } from '../demo/learning.ts';
import { SMALL_LM_DIR } from '../demo/small-lm.ts';
import { captureAndRate, sampleTurns, SAMPLE_OPTS } from './test-utils/rated-turns.ts';

/** The default round size (training.threshold). */
const N = 32;
const MAX_TOKENS = 64;

let root: string;
let engine: Engine;
beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rein-one-class-'));
  engine = Engine.load(SMALL_LM_DIR, { threads: 1 });
});
afterAll(async () => {
  await engine.close();
  rmSync(root, { recursive: true, force: true });
});

interface Answer {
  prompt: number;
  text: string;
  /** Mean entropy (nats) of the next-token distribution at each of the answer's tokens. */
  entropy: number;
}

/** One answer per (prompt, seed) under `adapter` (null: the base), at temperature 1; the seeds are the same for every model. */
async function answers(prompts: readonly string[], perPrompt: number, adapter: LoraAdapter | null): Promise<Answer[]> {
  const tok = engine.tokenizer!;
  const out: Answer[] = [];
  for (const [p, prompt] of prompts.entries()) {
    const ids = tok.encodeChat([{ role: 'user', content: prompt }], { addGenerationPrompt: true });
    for (let k = 0; k < perPrompt; k++) {
      const s = await engine.sample(ids, { ...SAMPLE_OPTS, maxTokens: MAX_TOKENS, seed: 7_000_003 * (p + 1) + k, adapter });
      // Row t of positionLogprobs is the distribution of token t + 1: rows ids.length − 1 … scored the answer.
      const rows = (await engine.driver.positionLogprobs([...ids, ...s.tokens], adapter)).slice(ids.length - 1, ids.length - 1 + s.tokens.length);
      const h = rows.map((lp) => -Array.from(lp).reduce((acc, l) => (l === Number.NEGATIVE_INFINITY ? acc : acc + Math.exp(l) * l), 0));
      out.push({ prompt: p, text: tok.decode(s.tokens, { skipSpecialTokens: true }), entropy: h.reduce((a, b) => a + b, 0) / h.length });
    }
  }
  return out;
}

const distinct = (xs: readonly Answer[]): number => new Set(xs.map((a) => `${a.prompt}\u0000${a.text}`)).size;
const fmt = (e: MeanEstimate): string => `${e.mean.toFixed(3)} [${e.ci[0].toFixed(3)}, ${e.ci[1].toFixed(3)}]`;

/** N on-policy answers to training prompts, rated through the core by `rate` (null: not rated), then one round. */
async function oneRound(name: string, seed: number, rate: (text: string) => 'good' | 'bad' | null): Promise<{ core: ReinCore; rated: number; adapter: LoraAdapter; status: string; reason: string | null }> {
  const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, name) }) });
  await core.call('setSettings', { values: { 'model.active': SMALL_LM_DIR, 'training.auto': false, 'training.preset': 'balanced' } }, 'test');
  const turns = (await sampleTurns(engine, N, seed, MAX_TOKENS)).filter((t) => rate(t.text) !== null);
  await captureAndRate(core, turns, (text) => rate(text) === 'good', name);
  await core.call('startTraining', {}, 'test');
  await core.scheduler.idle();
  const run = (await core.call('listRuns', {}, 'test'))[0]!;
  expect(run.status, String(run.error)).toBe('succeeded');
  const v = (await core.call('listAdapters', {}, 'test'))[0]!;
  const adapter = loadPeftAdapter(path.join(v.path, 'peft'), modelLinearParams(engine.config)).adapter;
  return { core, rated: turns.length, adapter, status: v.status, reason: v.reason };
}

describe('a one-class first round', () => {
  it(`all Good (${N} ratings): the candidate's answers on held-out prompts are no less varied than the base's`, { timeout: 600_000 }, async () => {
    const { core, adapter, status, reason } = await oneRound('good', 11, () => 'good');
    try {
      const prompts = HELD_OUT_PROMPTS.slice(0, 8);
      const before = await answers(prompts, 8, null);
      const after = await answers(prompts, 8, adapter);
      // Paired by (prompt, seed): the change in mean next-token entropy along each model's own answer.
      const dH = meanEstimate(after.map((a, i) => a.entropy - before[i]!.entropy));
      const H = (xs: readonly Answer[]): MeanEstimate => meanEstimate(xs.map((a) => a.entropy));
      console.log(
        `all-Good round (${status}: ${reason}): entropy (nats/token) ${fmt(H(before))} -> ${fmt(H(after))}, change ${fmt(dH)}; ` +
          `distinct answers ${distinct(before)} -> ${distinct(after)} of ${before.length} (8 held-out prompts x 8 seeds)`,
      );
      // Collapse: the entropy measurably lower (the paired 95% interval wholly below 0), or fewer distinct answers.
      expect(dH.ci[1]).toBeGreaterThanOrEqual(0);
      expect(distinct(after)).toBeGreaterThanOrEqual(distinct(before));
    } finally {
      core.close();
    }
  });

  it(`all Bad (the "question" rule, Bad only): no style the rater did not judge rises on held-out prompts`, { timeout: 600_000 }, async () => {
    const question = styleRule('question');
    const { core, rated, adapter, status, reason } = await oneRound('bad', 12, (text) => (question(text) ? null : 'bad'));
    try {
      const prompts = HELD_OUT_PROMPTS.slice(0, 96);
      const before = await answers(prompts, 1, null);
      const after = await answers(prompts, 1, adapter);
      const rows = STYLES.map((s) => {
        // Paired by (prompt, seed): d_i ∈ {−1, 0, 1}, the change in whether answer i has the style.
        const d = meanEstimate(after.map((a, i) => Number(s.detect(a.text)) - Number(s.detect(before[i]!.text))));
        const rate = (xs: readonly Answer[]): number => xs.filter((a) => s.detect(a.text)).length / xs.length;
        return { name: s.name as StyleName, before: rate(before), after: rate(after), d };
      });
      console.log(
        `all-Bad round, ${rated} Bad ratings (${status}: ${reason}); style rates on ${prompts.length} held-out prompts, base -> candidate (paired change, 95% CI): ` +
          rows.map((r) => `${r.name} ${r.before.toFixed(2)} -> ${r.after.toFixed(2)} (${fmt(r.d)})`).join('; '),
      );
      // Raised: the paired change's 95% interval wholly above 0.
      const raised = rows.filter((r) => r.name !== 'question' && r.d.ci[0] > 0).map((r) => r.name);
      expect(raised).toEqual([]);
    } finally {
      core.close();
    }
  });
});

describe('a first round with contrast', () => {
  it(`rated by the "question" rule (${N} ratings): the question rate rises on held-out prompts; the other styles' changes are printed`, { timeout: 600_000 }, async () => {
    const question = styleRule('question');
    const { core, rated, adapter, status, reason } = await oneRound('mixed', 1, (text) => (question(text) ? 'good' : 'bad'));
    try {
      const prompts = HELD_OUT_PROMPTS.slice(0, 96);
      const before = await answers(prompts, 1, null);
      const after = await answers(prompts, 1, adapter);
      const change = (detect: (t: string) => boolean): MeanEstimate => meanEstimate(after.map((a, i) => Number(detect(a.text)) - Number(detect(before[i]!.text))));
      const rate = (xs: readonly Answer[], detect: (t: string) => boolean): string => (xs.filter((a) => detect(a.text)).length / xs.length).toFixed(2);
      console.log(
        `question-rule round, ${rated} ratings (${status}: ${reason}); style rates on ${prompts.length} held-out prompts, base -> candidate (paired change, 95% CI): ` +
          STYLES.map((s) => `${s.name} ${rate(before, s.detect)} -> ${rate(after, s.detect)} (${fmt(change(s.detect))})`).join('; '),
      );
      expect(change(question).ci[0]).toBeGreaterThan(0);
    } finally {
      core.close();
    }
  });
});
