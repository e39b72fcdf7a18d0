// The eval gate's runner: scores a candidate (and the active adapter it would replace) on held-out rated turns and
// measures its KL to the base at probe positions, with the engine. The decision is common/training/gate.ts.
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { klDivergence, preferenceCorrect, RETENTION_TOLERANCE, wilson, type GateMetrics } from '../../common/training/gate.ts';
import type { Engine } from '../engine/engine.ts';
import type { TrainSequence } from './data.ts';

const mean = (a: Float64Array): number => a.reduce((s, x) => s + x, 0) / a.length;

async function accuracy(engine: Engine, adapter: LoraAdapter, turns: readonly TrainSequence[], base: Map<TrainSequence, Float64Array>): Promise<number> {
  let correct = 0;
  for (const s of turns) {
    const lp = await engine.logprobs(s.tokens, { start: s.start, adapter });
    const ratio = mean(lp) - mean(base.get(s)!);
    if (preferenceCorrect(ratio, s.desirable)) correct++;
  }
  return correct;
}

export async function evaluateGate(
  engine: Engine,
  candidate: LoraAdapter,
  previous: LoraAdapter | null,
  heldout: readonly TrainSequence[],
  probes: readonly TrainSequence[],
  klBudget: number,
  scope: GateMetrics['scope'],
): Promise<GateMetrics> {
  // MIS-PO turns rated 3 of 5 (advantage from reward 0) carry no direction; a KTO sequence always has one.
  const scored = heldout.filter((s) => s.kind === 'kto' || s.advantage !== 0 || s.desirable);
  const base = new Map<TrainSequence, Float64Array>();
  for (const s of scored) base.set(s, await engine.logprobs(s.tokens, { start: s.start, adapter: null }));
  const correct = await accuracy(engine, candidate, scored, base);
  const prev = previous === null || scored.length === 0 ? null : (await accuracy(engine, previous, scored, base)) / scored.length;
  // Probe positions: the first response position of each probe turn, over the whole vocabulary.
  let kl = 0;
  for (const s of probes) {
    const prefix = s.tokens.slice(0, s.start);
    kl += klDivergence(await engine.driver.nextLogprobs(prefix, candidate), await engine.driver.nextLogprobs(prefix, null));
  }
  return {
    scope,
    heldout: scored.length,
    correct,
    accuracy: scored.length === 0 ? null : correct / scored.length,
    previousAccuracy: prev,
    accuracyCi: scored.length === 0 ? null : wilson(correct, scored.length),
    kl: probes.length === 0 ? 0 : kl / probes.length,
    probes: probes.length,
    klBudget,
    tolerance: RETENTION_TOLERANCE,
  };
}
