import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import { derive } from './derive.ts';
import type { ReinState, Slice, TrainingSlice } from './types.ts';

export function createTrainingSlice(client: ReinClient): Slice<TrainingSlice> {
  return (set, get) => ({
    runs: [],
    progress: null,
    trainingUnavailable: null,
    trainingError: null,
    trainingStarting: false,
    loadRuns: async () => {
      try {
        set({ runs: await client.listRuns({ limit: 10 }), trainingError: null });
      } catch (e) {
        const err = toApiError(e);
        if (err.code === 'not_available') set({ trainingUnavailable: err.message });
        else set({ trainingError: err });
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
    setProgress: (progress) => set({ progress }),
  });
}

export const selectRuns = (s: ReinState) => s.runs;

/** Training as the header shows it: running with a fraction, idle, or not available yet (with the core's reason). */
export type TrainingView = { kind: 'unavailable'; message: string } | { kind: 'running'; fraction: number; phase: string } | { kind: 'idle' };

export const selectTrainingView = derive(
  [(s) => s.trainingUnavailable, (s) => s.progress, (s) => s.status?.training.state],
  (unavailable, p, state): TrainingView => {
    if (unavailable) return { kind: 'unavailable', message: unavailable };
    if (p && !['done', 'failed', 'cancelled'].includes(p.phase)) {
      return { kind: 'running', fraction: p.steps > 0 ? Math.min(1, p.step / p.steps) : 0, phase: p.phase };
    }
    if (state === 'running') return { kind: 'running', fraction: 0, phase: 'running' };
    return { kind: 'idle' };
  },
);
