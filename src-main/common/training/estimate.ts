// A round's size (held-out share, steps) and its time from the model's size alone, before any round has been measured: docs/learning.md "Round time" measured a
// Qwen2-0.5B-shaped model (494 M parameters, turns of 512 tokens) on two shared cores at 12.5 s per base forward of a
// turn and 29.2 s per policy forward+backward, and the work scales with the parameter count. describePresets answers
// it per preset (`roundTime`), so the wizard's presets and the Train now / Retrain confirmations (src-renderer/store/
// estimate.ts, which prefers measured rounds) show one figure from one formula.
import type { PresetChoice, PresetTable, TrainingConfig } from './presets.ts';
type RoundShape = Pick<TrainingConfig, 'steps' | 'batchSize' | 'epochs' | 'heldoutFraction'>;
const REF_PARAMS = 494e6;
const REF_BASE_FORWARD_S = 12.5;
const REF_STEP_TURN_S = 29.2;

/** Seconds for one round of `pending` new ratings at `steps` × `batchSize`, on a model of `activeParams`. */
export function roundTimeFromSize(o: { activeParams: number; pending: number; steps: number; batchSize: number }): number {
  return (o.pending * REF_BASE_FORWARD_S + o.steps * o.batchSize * REF_STEP_TURN_S) * (o.activeParams / REF_PARAMS);
}

/**
 * How many of `n` pending ratings a round holds out for its gate: round(fraction × n), at least 1 of 2 or more, and
 * at least 1 left to train (node/training/data.ts selectRound).
 */
export function heldoutCount(n: number, fraction: number): number {
  if (n < 2 || fraction <= 0) return 0;
  return Math.min(n - 1, Math.max(1, Math.round(fraction * n)));
}

/** Steps so that every trained sequence is drawn at least `epochs` times over: max(preset steps, ceil(epochs·n/batch)). */
export function roundSteps(cfg: Pick<TrainingConfig, 'steps' | 'epochs' | 'batchSize'>, sequences: number): number {
  const b = Math.max(1, Math.min(cfg.batchSize, sequences));
  return Math.max(cfg.steps, Math.ceil((cfg.epochs * sequences) / b));
}

/**
 * `table` with each preset's round for `pending` new ratings: how many it holds out, how many steps it runs and how
 * long it takes from the model's size. `custom` is the config training.custom resolves to.
 */
export function withRoundTimes(table: PresetTable, custom: RoundShape, pending: number): PresetTable {
  const round = (c: RoundShape) => {
    const heldout = heldoutCount(pending, c.heldoutFraction);
    const steps = roundSteps(c, pending - heldout);
    return { heldout, steps, seconds: roundTimeFromSize({ activeParams: table.shape.activeParams, pending, steps, batchSize: c.batchSize }) };
  };
  const rounds: Record<PresetChoice, ReturnType<typeof round>> = {
    careful: round(table.presets.careful),
    balanced: round(table.presets.balanced),
    aggressive: round(table.presets.aggressive),
    custom: round(custom),
  };
  const pick = <K extends 'heldout' | 'steps' | 'seconds'>(k: K) =>
    Object.fromEntries(Object.entries(rounds).map(([n, r]) => [n, r[k]])) as Record<PresetChoice, number>;
  return { ...table, roundTime: { pending, seconds: pick('seconds'), steps: pick('steps'), heldout: pick('heldout') } };
}
