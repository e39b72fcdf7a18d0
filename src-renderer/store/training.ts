import type { RunView, TrainingProgress } from '../../src-main/common/domain.ts';
import type { DeviceChoice } from '../../src-main/common/system.ts';
import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import { derive } from './derive.ts';
import type { ReinState, Slice, TrainingSlice } from './types.ts';

export const RUNS_LIMIT = 50;
const FINISHED = ['done', 'failed', 'cancelled'];

export function createTrainingSlice(client: ReinClient): Slice<TrainingSlice> {
  return (set, get) => ({
    runs: [],
    progress: null,
    liveCurve: [],
    trainingUnavailable: null,
    trainingError: null,
    trainingStarting: false,
    reward: null,
    loadReward: async () => {
      try {
        set({ reward: await client.rewardStatus({}) });
      } catch {
        // An older core without the verb, or no model yet: the panel says there is no reward model.
        set({ reward: null });
      }
    },
    loadRuns: async () => {
      try {
        set({ runs: await client.listRuns({ limit: RUNS_LIMIT }), trainingError: null });
      } catch (e) {
        const err = toApiError(e);
        if (err.code === 'not_available') set({ trainingUnavailable: err.message });
        else set({ trainingError: err });
      }
    },
    loadRunsAndAdapters: async () => {
      try {
        const [runs, adapters] = await Promise.all([client.listRuns({ limit: RUNS_LIMIT }), client.listAdapters({})]);
        set({ runs, adapters, adaptersLoaded: true, trainingError: null });
      } catch {
        await Promise.all([get().loadRuns(), get().loadAdapters()]);
      }
    },
    startTraining: async () => {
      if (get().trainingStarting) return;
      set({ trainingStarting: true, trainingError: null });
      try {
        await client.startTraining({});
        set({ trainingUnavailable: null });
        await get().loadRuns();
      } catch (e) {
        const err = toApiError(e);
        if (err.code === 'not_available') set({ trainingUnavailable: err.message });
        else set({ trainingError: err });
      } finally {
        set({ trainingStarting: false });
      }
    },
    cancelTraining: async () => {
      try {
        await client.cancelTraining({});
      } catch (e) {
        set({ trainingError: toApiError(e) });
      }
    },
    setProgress: (progress) => {
      const prev = get().progress;
      // A new run starts a new live curve; each training step adds one point.
      const curve = prev?.runId === progress.runId ? get().liveCurve : [];
      const point = progress.phase === 'training' && progress.loss !== null ? [{ step: progress.step, loss: progress.loss, kl: progress.kl ?? 0 }] : [];
      set({ progress, liveCurve: [...curve, ...point], ...(progress.phase === 'preparing' ? { trainingUnavailable: null } : {}) });
      if (FINISHED.includes(progress.phase)) void get().loadRunsAndAdapters();
    },
  });
}

export const selectRuns = (s: ReinState) => s.runs;

/** Training as the header shows it: running with a fraction, idle, or not available yet (with the core's reason). */
export type TrainingView = { kind: 'unavailable'; message: string } | { kind: 'running'; fraction: number; phase: string } | { kind: 'idle' };

export const selectTrainingView = derive(
  [(s) => s.trainingUnavailable, (s) => s.progress, (s) => s.status?.training.state],
  (unavailable, p, state): TrainingView => {
    if (p && !FINISHED.includes(p.phase)) {
      return { kind: 'running', fraction: p.steps > 0 ? Math.min(1, p.step / p.steps) : 0, phase: p.phase };
    }
    if (unavailable) return { kind: 'unavailable', message: unavailable };
    if (state === 'running') return { kind: 'running', fraction: 0, phase: 'running' };
    return { kind: 'idle' };
  },
);

/** The live progress of the running round, or null when none runs. */
export const selectLiveProgress = (s: ReinState): TrainingProgress | null => (s.progress && !FINISHED.includes(s.progress.phase) ? s.progress : null);

/** common/training/gate.ts GateMetrics; runs before the held-out gate stored scope and tolerance instead of the intervals. */
interface GateMetrics {
  heldout: number;
  accuracy: number | null;
  previousAccuracy: number | null;
  kl: number;
  klBudget: number;
  accuracyCi?: [number, number] | null;
  pairedCi?: [number, number] | null;
  klBase?: number;
  klTokens?: number;
  scope?: 'heldout' | 'trained';
  tolerance?: number;
  /** The env gate's (kind `env`, the gym's rounds): the candidate and its parent on the same held-out episodes. */
  kind?: 'ratings' | 'env';
  env?: { env: string; episodes: number; candidate: number; parent: number; change: { mean: number; ci: [number, number] } };
}
interface RunMetrics {
  steps?: { step: number; loss: number; kl: number; clipFraction: number }[];
  gate?: GateMetrics;
  tokensPerSecond?: number;
  trainSeconds?: number;
  /** mispo/kto: training sequences of each kind; offPolicy: trained ratings whose answer was text, with why (round.ts). */
  samples?: { pending: number; replay: number; heldout: number; mispo?: number; kto?: number; offPolicy?: { ratingId: number; why: string }[] };
  device?: DeviceChoice;
  /** Unconfirmed weak labels the round trained (training.implicit weighted; training/data.ts WeakMetrics). */
  weak?: { labels: number; drawn: number; meanWeight: number | null };
  /** The round stopped before its last step on its KL to the parent (round.ts). */
  stoppedEarly?: { step: number; of: number; klToParent: number; limit: number } | null;
}

/**
 * A round that stopped before its last step, in words: "Stopped after step 27 of 32: the model had moved as far from
 * the previous version as one round may (KL 0.100 a token; the stop is at 0.097, half the budget)." Null when it ran
 * every step.
 */
export function stoppedSentence(stopped: RunMetrics['stoppedEarly']): string | null {
  if (!stopped) return null;
  return `Stopped after step ${stopped.step} of ${stopped.of}: the model had moved as far from the previous version as one round may (KL ${stopped.klToParent.toFixed(3)} a token; the stop is at ${stopped.limit.toFixed(3)}, half the budget).`;
}

/**
 * What a round trained from reactions nobody confirmed (training.implicit weighted), in words, so they are not taken
 * for ratings: "2 unconfirmed weak labels trained, at weight 0.43 on average (a rating weighs 1)". Null when none did.
 */
export function weakSentence(weak: RunMetrics['weak']): string | null {
  if (!weak || weak.drawn === 0 || weak.meanWeight === null) return null;
  const n = weak.drawn === 1 ? '1 unconfirmed weak label' : `${weak.drawn} unconfirmed weak labels`;
  return `${n} trained, at weight ${weak.meanWeight.toFixed(2)} on average (a rating weighs 1)`;
}

/**
 * How a round trained, in words: "12 trained on-policy (MIS-PO), 3 as text (KTO)", and why ratings trained as text,
 * each reason once with its count, most common first. Null for a run recorded before the counts were kept.
 */
export function policySentence(samples: RunMetrics['samples']): { sentence: string; reasons: { why: string; count: number }[] } | null {
  if (samples?.mispo === undefined || samples.kto === undefined) return null;
  const counts = new Map<string, number>();
  for (const o of samples.offPolicy ?? []) counts.set(o.why, (counts.get(o.why) ?? 0) + 1);
  const reasons = [...counts].map(([why, count]) => ({ why, count })).sort((a, b) => b.count - a.count || a.why.localeCompare(b.why));
  return { sentence: `${samples.mispo} trained on-policy (MIS-PO), ${samples.kto} as text (KTO)`, reasons };
}

/** Where a round trained, in words: "on webgpu (adapter)", and with `auto` on the CPU, why no GPU was used. */
export function deviceSentence(device: DeviceChoice | undefined, verb = 'Trained'): string | null {
  if (!device) return null;
  const where = `${verb} on ${device.provider === 'cpu' ? 'the CPU' : device.provider} (${device.adapter})`;
  // The probes' own words are long and technical: the screen shows them behind "Why not a GPU?" (DeviceLine).
  return device.reason === null ? `${where}.` : `${where}: no GPU could be used.`;
}

/** A run's metrics as the trainer stores them (training/round.ts RoundMetrics), read defensively: older runs may lack fields. */
export function runMetrics(run: Pick<RunView, 'metrics'>): RunMetrics {
  return run.metrics !== null && typeof run.metrics === 'object' ? (run.metrics as RunMetrics) : {};
}

/**
 * The eval gate's verdict in words, with the numbers behind it (common/training/gate.ts decides, and its rule is
 * repeated here only to say "passes" or "fails" of a candidate): "activated: preference accuracy 0.81 [0.52, 0.95] on
 * 12 held-out turns, parent 0.78 (paired difference [−0.20, 0.31]); KL to the parent 0.004/token ≤ 0.19, 0.01 from
 * the base".
 */
export function gateSentence(gate: GateMetrics | undefined, accepted: boolean | null): string | null {
  if (gate?.env) return envGateSentence(gate.env, gate.kl, accepted);
  if (!gate || gate.accuracy === null) return null;
  if (gate.accuracyCi === undefined) return olderGateSentence({ ...gate, accuracy: gate.accuracy }, accepted);
  const ci = gate.accuracyCi ?? [0, 1];
  const klOk = gate.kl <= gate.klBudget;
  const worse = gate.pairedCi != null && gate.pairedCi[1] < 0;
  const better = gate.accuracy > 0.5 && (ci[0] > 0.5 || gate.previousAccuracy === null || gate.accuracy >= gate.previousAccuracy);
  const verdict = accepted === null ? (klOk && !worse && better ? 'passes' : 'fails') : accepted ? 'activated' : 'rejected';
  let acc = `preference accuracy ${gate.accuracy.toFixed(2)} [${ci[0].toFixed(2)}, ${ci[1].toFixed(2)}] on ${gate.heldout} held-out turns`;
  if (gate.previousAccuracy !== null) {
    acc += `, parent ${gate.previousAccuracy.toFixed(2)}`;
    if (gate.pairedCi) acc += ` (paired difference [${gate.pairedCi[0].toFixed(2)}, ${gate.pairedCi[1].toFixed(2)}])`;
  }
  const base = gate.klBase === undefined ? '' : `, ${fmtSmall(gate.klBase)} from the base`;
  return `${verdict}: ${acc}; KL to the parent ${fmtSmall(gate.kl)}/token ${klOk ? '≤' : '>'} ${fmtSmall(gate.klBudget)}${base}`;
}

/**
/**
 * Why a round's version was not used, in a plain sentence, and what to do next; null when the gate did not reject it
 * or recorded nothing. The gate's rules are those of common/training/gate.ts, in the order gateSentence checks them.
 */
export function rejectionWords(gate: GateMetrics | undefined, accepted: boolean | null): { why: string; next: string } | null {
  if (accepted !== false || gate === undefined) return null;
  if (gate.env) {
    return {
      why: `The new version did worse than the one before it on held-out ${gate.env.env} episodes, so it was not used.`,
      next: 'The version in use stays. The next round tries again from it; more episodes or a gentler preset (Careful) can help.',
    };
  }
  if (gate.kl > gate.klBudget) {
    return {
      why: 'The new version changed too much on answers it had not trained on, so it was not used.',
      next: 'Your version in use stays as it was, and these ratings count again in the next round. To move in smaller steps, choose the Careful preset in Settings, or raise the KL budget there.',
    };
  }
  return {
    why: 'The new version did not agree with your held-out ratings better than the version in use, so it was not used.',
    next: 'Your version in use stays as it was, and these ratings count again in the next round. Keep rating: with more ratings the next round has more to learn from.',
  };
}

/**
 * The env gate (the gym's rounds): "activated: mean return −0.21 against the parent's −0.25 on 400 held-out blackjack
 * episodes, paired change +0.04 [−0.01, +0.09]; KL to the parent 0.05/token". It rejects a mean change below 0.
 */
function envGateSentence(e: NonNullable<GateMetrics['env']>, kl: number, accepted: boolean | null): string {
  const worse = e.episodes === 0 || e.change.mean < 0;
  const verdict = accepted === null ? (worse ? 'fails' : 'passes') : accepted ? 'activated' : 'rejected';
  const f = (x: number): string => (x >= 0 ? '+' : '') + x.toFixed(3);
  return `${verdict}: mean return ${e.candidate.toFixed(3)} against the parent's ${e.parent.toFixed(3)} on ${e.episodes} held-out ${e.env} episodes, paired change ${f(e.change.mean)} [${f(e.change.ci[0])}, ${f(e.change.ci[1])}]; KL to the parent ${fmtSmall(kl)}/token`;
}

/** Runs before the held-out gate: accuracy against chance and a retention tolerance (0.05 unless stored). */
function olderGateSentence(gate: GateMetrics & { accuracy: number }, accepted: boolean | null): string {
  const tolerance = gate.tolerance ?? 0.05;
  const chanceOk = gate.accuracy > 0.5;
  const keepOk = gate.previousAccuracy === null || gate.accuracy >= gate.previousAccuracy - tolerance;
  const klOk = gate.kl <= gate.klBudget;
  const verdict = accepted === null ? (chanceOk && keepOk && klOk ? 'passes' : 'fails') : accepted ? 'activated' : 'rejected';
  let acc = `preference accuracy ${gate.accuracy.toFixed(2)} ${chanceOk ? '>' : '≤'} 0.50 (chance)`;
  if (gate.previousAccuracy !== null) {
    acc += `, ${keepOk ? 'within' : 'more than'} ${tolerance} ${keepOk ? 'of' : 'below'} the active version's ${gate.previousAccuracy.toFixed(2)}`;
  }
  const kl = `KL ${fmtSmall(gate.kl)} ${klOk ? '≤' : '>'} ${fmtSmall(gate.klBudget)}`;
  const where = gate.scope === 'trained' ? `the ${gate.heldout} turns it trained on` : `${gate.heldout} older rated turns`;
  return `${verdict}: ${acc}; ${kl} (${where})`;
}

export function fmtSmall(x: number): string {
  return x === 0 ? '0' : Math.abs(x) >= 0.01 ? x.toFixed(3).replace(/0+$/, '').replace(/\.$/, '') : String(Number(x.toPrecision(2)));
}

/**
 * When the next automatic round starts, in the words of the schedule that decides it (training.schedule,
 * common/training/schedule.ts): the Training screen's sentence under the pending count.
 */
export const selectScheduleWords = derive(
  [(s) => s.settings?.['training.auto'], (s) => s.settings?.['training.schedule'], (s) => s.settings?.['training.threshold']],
  (auto, schedule, threshold): string => {
    if (auto === false) return 'Automatic training is off: rounds start only when you press Train now.';
    const now = ' Train now starts one at once.';
    if (!schedule || schedule.mode === 'threshold') {
      return `A round starts by itself when ${threshold ?? 32} ratings are waiting.${now}`;
    }
    const m = `${schedule.minPending} rating${schedule.minPending === 1 ? ' is' : 's are'} waiting`;
    if (schedule.mode === 'interval') {
      const every = schedule.everyMinutes % 60 === 0 ? `${schedule.everyMinutes / 60} hour${schedule.everyMinutes === 60 ? '' : 's'}` : `${schedule.everyMinutes} minutes`;
      return `A round starts by itself at most once every ${every}, when at least ${m}.${now}`;
    }
    const [h, min] = schedule.at.split(':').map(Number) as [number, number];
    const until = `${String((h + 6) % 24).padStart(2, '0')}:${String(min).padStart(2, '0')}`;
    return `A round starts by itself once a night, between ${schedule.at} and ${until}, when at least ${m} and the computer is idle.${now}`;
  },
);

/** The reward model in words for the Training screen: its version line and how the popup asks. */
export const selectRewardWords = derive([(s) => s.reward], (r): { model: string; ask: string; scores: { good: number[]; bad: number[] } | null } | null => {
  if (r === null) return null;
  const scores = r.latest?.metrics.scores;
  const ask =
    r.ask === 'always'
      ? 'The popup asks about every answer (Settings: reward.ask).'
      : `The popup asks only when the reward model is unsure (its chance of Good between ${Math.round((0.5 - r.unsureMargin) * 100)}% and ${Math.round((0.5 + r.unsureMargin) * 100)}%); ${r.notAsked} ${r.notAsked === 1 ? 'answer was' : 'answers were'} not asked about and stay unrated.`;
  return {
    model: r.line ?? 'No reward model yet: it trains after a round, once your ratings hold a Good and a Bad answer.',
    ask,
    scores: scores === undefined || scores.good.length + scores.bad.length === 0 ? null : scores,
  };
});
