// The gate's runner on the small pretrained LM: it scores a held-out turn by the sign of its training target (the MIS-PO
// advantage, not the reward), leaves A = 0 unscored, measures the per-token k3 to the parent and the base over the
// response's trained tokens, and compares with the parent turn by turn.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { Rng } from '../../common/engine/rng.ts';
import { k3 } from '../../common/training/gate.ts';
import { Engine } from '../engine/engine.ts';
import type { TrainSequence } from './data.ts';
import { evaluateGate } from './gate.ts';
import { SMALL_LM_DIR } from '../demo/small-lm.ts';
import { sampleTurns } from './test-utils/rated-turns.ts';

let root: string;
let engine: Engine;
beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rein-gate-'));
  engine = Engine.load(SMALL_LM_DIR, { threads: 1 });
});
afterAll(async () => {
  await engine.close();
  rmSync(root, { recursive: true, force: true });
});

/** A fresh adapter with B filled in, so that it moves every logprob a little. */
function movedAdapter(seed: number): LoraAdapter {
  const a = engine.newAdapter({ r: 4, alpha: 8 }, seed);
  const rng = new Rng(seed);
  for (const p of a.pairs) for (let i = 0; i < p.b.length; i++) p.b[i] = (rng.uniform() - 0.5) * 0.2;
  return a;
}

const mean = (x: Float64Array): number => x.reduce((s, v) => s + v, 0) / x.length;

describe('the gate runner', () => {
  it('scores by the sign of the advantage, not of the reward; A = 0 is not scored; KL is per-token k3 vs the parent', { timeout: 60_000 }, async () => {
    const cand = movedAdapter(1);
    const turns = (await sampleTurns(engine, 8, 21)).filter((t) => t.tokens.length > 0);
    const seqs: TrainSequence[] = [];
    const ratios: number[] = [];
    for (const [i, t] of turns.entries()) {
      const tokens = [...t.promptIds, ...t.tokens];
      const start = t.promptIds.length;
      const ratio = mean(await engine.logprobs(tokens, { start, adapter: cand })) - mean(await engine.logprobs(tokens, { start, adapter: null }));
      ratios.push(ratio);
      // The advantage has the sign the candidate moved; the reward (`desirable`) the opposite one: a good turn below
      // the baseline (A < 0) that training pushed down, or a bad one above it. The last turn has A = 0.
      const advantage = i === turns.length - 1 ? 0 : Math.sign(ratio) * 0.3;
      seqs.push({ ratingId: i + 1, role: 'heldout', tokens, start, mask: t.tokens.map(() => 1), kind: 'mispo', mu: null, advantage, desirable: ratio < 0 });
    }
    expect(ratios.every((r) => r !== 0)).toBe(true);
    const m = await evaluateGate(engine, cand, null, seqs, 0.193);
    expect(m.heldout).toBe(seqs.length - 1);
    expect(m.correct).toBe(seqs.length - 1);
    expect(m.previousAccuracy).toBeNull();
    // With no parent adapter the parent is the base: kl and klBase agree, and equal the k3 by hand.
    let byHand = 0;
    let n = 0;
    for (const s of seqs) {
      const lc = await engine.logprobs(s.tokens, { start: s.start, adapter: cand });
      const lb = await engine.logprobs(s.tokens, { start: s.start, adapter: null });
      for (let i = 0; i < lc.length; i++) byHand += k3(lc[i]! - lb[i]!);
      n += lc.length;
    }
    expect(m.klTokens).toBe(n);
    expect(m.kl).toBeCloseTo(byHand / n, 12);
    expect(m.klBase).toBeCloseTo(m.kl, 12);

    // Against a parent: the candidate as its own parent has KL 0 and a paired difference of exactly 0.
    const self = await evaluateGate(engine, cand, structuredClone(cand), seqs, 0.193);
    expect(self.kl).toBe(0);
    expect(self.previousAccuracy).toBe(self.accuracy);
    expect(self.pairedCi).toEqual([0, 0]);
    expect(self.klBase).toBeCloseTo(m.klBase, 12);
  });

  it('counts only the trained tokens of a sequence that carries a mask', { timeout: 60_000 }, async () => {
    const cand = movedAdapter(2);
    const t = (await sampleTurns(engine, 4, 22)).find((x) => x.tokens.length >= 3)!;
    const tokens = [...t.promptIds, ...t.tokens];
    const seq = { ratingId: 1, role: 'heldout' as const, tokens, start: t.promptIds.length, kind: 'kto' as const, mu: null, advantage: 0, desirable: true };
    const mask = t.tokens.map((_, i) => (i === 1 ? 1 : 0));
    const m = await evaluateGate(engine, cand, null, [{ ...seq, mask } as TrainSequence], 0.193);
    expect(m.klTokens).toBe(1);
    const lc = await engine.logprobs(tokens, { start: seq.start, adapter: cand });
    const lb = await engine.logprobs(tokens, { start: seq.start, adapter: null });
    expect(m.kl).toBeCloseTo(k3(lc[1]! - lb[1]!), 12);
    expect(m.correct).toBe(lc[1]! - lb[1]! > 0 ? 1 : 0);
  });
});
