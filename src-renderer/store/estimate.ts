// How long the next round will take, for the confirmations of Train now and Retrain (issue #15 item 9). Measured
// rounds come first: their seconds per trained turn-step (trainSeconds / (steps × batchSize)), and the time outside
// the steps (loading, base logprobs, the gate, writing). With no round measured yet, a rough figure from the model's
// size, as describePresets answers it per preset (`roundTime`, common/training/estimate.ts; the wizard's presets show
// the same figure).
import type { RunView } from '../../src-main/common/domain.ts';
import type { PresetChoice, PresetTable, TrainingConfig } from '../../src-main/common/training/presets.ts';
/** Rounds whose measurements the estimate uses (the newest). */
const MEASURED_RUNS = 5;

export interface RoundEstimate {
  seconds: number;
  /** 'runs': from the measured rounds; 'size': from the model's size alone. */
  basis: 'runs' | 'size';
  /** How many measured rounds it used. */
  runs: number;
  steps: number;
  batchSize: number;
}

interface Measured {
  stepTurnSeconds: number;
  otherSeconds: number;
}

function measured(run: RunView): Measured | null {
  const m = run.metrics as { trainSeconds?: unknown; steps?: unknown } | null;
  const c = run.config as { steps?: unknown; batchSize?: unknown } | null;
  // Any round that trained measured the speed, whether its version then passed the gate or not.
  if (run.startedAt === null || run.finishedAt === null || !m || !c) return null;
  const steps = Array.isArray(m.steps) ? m.steps.length : typeof c.steps === 'number' ? c.steps : 0;
  const batch = typeof c.batchSize === 'number' ? c.batchSize : 0;
  if (typeof m.trainSeconds !== 'number' || steps <= 0 || batch <= 0) return null;
  const total = (run.finishedAt - run.startedAt) / 1000;
  return { stepTurnSeconds: m.trainSeconds / (steps * batch), otherSeconds: Math.max(0, total - m.trainSeconds) };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** The config the next round will use: the chosen preset, or balanced with the custom fields over it (presets.ts). */
export function nextRoundConfig(presets: PresetTable | null, preset: string | undefined, custom: unknown): Pick<TrainingConfig, 'steps' | 'batchSize' | 'klBudget'> | null {
  if (!presets) return null;
  const name = preset ?? 'balanced';
  if (name !== 'custom') return presets.presets[name as keyof PresetTable['presets']] ?? null;
  const base = presets.presets.balanced;
  const c = (custom ?? {}) as Partial<TrainingConfig>;
  return { steps: c.steps ?? base.steps, batchSize: c.batchSize ?? base.batchSize, klBudget: c.klBudget ?? base.klBudget };
}

/** The next round as the core sized it: held-out count, steps and size-based seconds; null when it answered for another count. */
export interface TimedRound {
  seconds: number;
  steps: number;
  heldout: number;
}

/** The core's sizing of the round for `preset` and `pending` ratings (describePresets roundTime, common/training/estimate.ts). */
export function timedRound(presets: PresetTable | null, preset: string | undefined, pending: number): TimedRound | null {
  const t = presets?.roundTime;
  if (!t || t.pending !== pending) return null;
  const name = (preset ?? 'balanced') as PresetChoice;
  const seconds = t.seconds[name];
  const steps = t.steps[name];
  const heldout = t.heldout[name];
  if (seconds === undefined || steps === undefined || heldout === undefined) return null;
  return { seconds, steps, heldout };
}

/** The estimate, or null when neither a measured round nor the model's size is known. */
export function roundEstimate(o: { runs: RunView[]; config: Pick<TrainingConfig, 'steps' | 'batchSize'> | null; timed: TimedRound | null }): RoundEstimate | null {
  const ms = o.runs.map(measured).filter((m): m is Measured => m !== null).slice(0, MEASURED_RUNS);
  const last = o.runs.find((r) => measured(r) !== null)?.config as { steps: number; batchSize: number } | undefined;
  // A round runs enough steps to draw every trained rating (common/training/estimate.ts roundSteps): the core's count.
  const steps = o.timed?.steps ?? o.config?.steps ?? last?.steps;
  const batchSize = o.config?.batchSize ?? last?.batchSize;
  if (steps === undefined || batchSize === undefined) return null;
  if (ms.length > 0) {
    const seconds = median(ms.map((m) => m.stepTurnSeconds)) * steps * batchSize + median(ms.map((m) => m.otherSeconds));
    return { seconds, basis: 'runs', runs: ms.length, steps, batchSize };
  }
  if (o.timed === null) return null;
  return { seconds: o.timed.seconds, basis: 'size', runs: 0, steps, batchSize };
}

/**
 * Each named preset's next round as the wizard lists it: from the measured rounds when there are any (as the Train
 * now confirmation says), else the core's figure from the model's size. The size figure alone said "under a minute"
 * for the demo model, whose rounds take minutes here.
 */
export function presetEstimates(presets: PresetTable, runs: RunView[]): Record<'careful' | 'balanced' | 'aggressive', RoundEstimate | null> {
  const one = (name: 'careful' | 'balanced' | 'aggressive') =>
    roundEstimate({ runs, config: presets.presets[name], timed: timedRound(presets, name, presets.roundTime?.pending ?? -1) });
  return { careful: one('careful'), balanced: one('balanced'), aggressive: one('aggressive') };
}

/** 494 M, 1.5 B, 60 k: a parameter count in words. */
export function paramWords(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)} B`;
  if (n >= 1e6) return `${Math.round(n / 1e6)} M`;
  return `${Math.round(n / 1e3)} k`;
}

/** "about 2 h 10 min", "about 4 min", "under a minute". */
export function durationWords(seconds: number): string {
  if (seconds < 60) return 'under a minute';
  const min = Math.round(seconds / 60);
  if (min < 60) return `about ${min} min`;
  const h = Math.floor(min / 60);
  const rest = min % 60;
  return `about ${h} h${rest ? ` ${rest} min` : ''}`;
}
