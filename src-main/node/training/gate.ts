// The eval gate's runner: scores a candidate and its parent on the round's held-out rated turns and measures the
// candidate's per-token k3 KL to the parent and to the base there, with the engine. The rule and its reasons are
// common/training/gate.ts.
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { k3, pairedCi, preferenceCorrect, wilson, type GateMetrics } from '../../common/training/gate.ts';
import type { Engine } from '../engine/engine.ts';
import type { TrainSequence } from './data.ts';
import { batchLogprobs } from './step.ts';

/**
 * The indices (into the response's logprobs) of the tokens that train: the sequence's mask (data.ts: 1 on an
 * assistant segment, 0 on a tool result) is over the response tokens. Scores and KL count only these.
 */
function trainedTokens(s: TrainSequence, n: number): number[] {
  if (s.mask.length !== n) throw new Error(`gate: rating ${s.ratingId} has a mask of ${s.mask.length} for ${n} response tokens`);
  return Array.from({ length: n }, (_, i) => i).filter((i) => s.mask[i] === 1);
}

/** The training target's direction: the sign of the MIS-PO advantage, or KTO's label; 0 when it has none. */
export function targetDirection(s: TrainSequence): 1 | -1 | 0 {
  if (s.kind === 'kto') return s.desirable ? 1 : -1;
  return s.advantage > 0 ? 1 : s.advantage < 0 ? -1 : 0;
}

const meanAt = (idx: readonly number[], f: (i: number) => number): number => idx.reduce((s, i) => s + f(i), 0) / Math.max(1, idx.length);

export async function evaluateGate(
  engine: Engine,
  candidate: LoraAdapter,
  parent: LoraAdapter | null,
  heldout: readonly TrainSequence[],
  klBudget: number,
): Promise<GateMetrics> {
  const cand: boolean[] = [];
  const prev: boolean[] = [];
  let kl = 0;
  let klBase = 0;
  let klTokens = 0;
  // Held-out agent turns share their prefix: it runs once per pack (step.ts batchLogprobs).
  const bases = await batchLogprobs(engine, heldout, null);
  const cands = await batchLogprobs(engine, heldout, candidate);
  const parents = parent === null ? bases : await batchLogprobs(engine, heldout, parent);
  for (const [k, s] of heldout.entries()) {
    const base = bases[k]!;
    const lc = cands[k]!;
    const lp = parents[k]!;
    const idx = trainedTokens(s, lc.length);
    for (const i of idx) {
      // ρ = π_cand / π_parent per token (common/training/gate.ts).
      kl += k3(lc[i]! - lp[i]!);
      klBase += k3(lc[i]! - base[i]!);
    }
    klTokens += idx.length;
    const dir = targetDirection(s);
    if (dir === 0 || idx.length === 0) continue;
    cand.push(preferenceCorrect(meanAt(idx, (i) => lc[i]! - base[i]!), dir));
    if (parent !== null) prev.push(preferenceCorrect(meanAt(idx, (i) => lp[i]! - base[i]!), dir));
  }
  const n = cand.length;
  const correct = cand.filter(Boolean).length;
  return {
    kind: 'ratings',
    heldout: n,
    correct,
    accuracy: n === 0 ? null : correct / n,
    accuracyCi: n === 0 ? null : wilson(correct, n),
    previousAccuracy: parent === null || n === 0 ? null : prev.filter(Boolean).length / n,
    pairedCi: parent === null || n === 0 ? null : pairedCi(cand, prev),
    kl: klTokens === 0 ? 0 : kl / klTokens,
    klBase: klTokens === 0 ? 0 : klBase / klTokens,
    klTokens,
    klBudget,
  };
}
