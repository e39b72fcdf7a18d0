// A round's time from the model's size alone, before any round has been measured: README "Round time" measured a
// Qwen2-0.5B-shaped model (494 M parameters, turns of 512 tokens) on two shared cores at 12.5 s per base forward of a
// turn and 29.2 s per policy forward+backward, and the work scales with the parameter count. describePresets answers
// it per preset (`roundTime`), so the wizard's presets and the Train now / Retrain confirmations (src-renderer/store/
// estimate.ts, which prefers measured rounds) show one figure from one formula.
import type { PresetChoice, PresetTable, TrainingConfig } from './presets.ts';
const REF_PARAMS = 494e6;
const REF_BASE_FORWARD_S = 12.5;
const REF_STEP_TURN_S = 29.2;

/** Seconds for one round of `pending` new ratings at `steps` × `batchSize`, on a model of `activeParams`. */
export function roundTimeFromSize(o: { activeParams: number; pending: number; steps: number; batchSize: number }): number {
  return (o.pending * REF_BASE_FORWARD_S + o.steps * o.batchSize * REF_STEP_TURN_S) * (o.activeParams / REF_PARAMS);
}

/** `table` with each preset's round time for `pending` new ratings; `custom` is the config training.custom resolves to. */
export function withRoundTimes(table: PresetTable, custom: Pick<TrainingConfig, 'steps' | 'batchSize'>, pending: number): PresetTable {
  const time = (c: Pick<TrainingConfig, 'steps' | 'batchSize'>) => roundTimeFromSize({ activeParams: table.shape.activeParams, pending, steps: c.steps, batchSize: c.batchSize });
  const seconds: Record<PresetChoice, number> = {
    careful: time(table.presets.careful),
    balanced: time(table.presets.balanced),
    aggressive: time(table.presets.aggressive),
    custom: time(custom),
  };
  return { ...table, roundTime: { pending, seconds } };
}
