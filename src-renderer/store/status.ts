import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import { derive } from './derive.ts';
import type { ReinState, Slice, StatusSlice } from './types.ts';

export function createStatusSlice(client: ReinClient): Slice<StatusSlice> {
  // Every status that arrives bumps the epoch. A load answered after a newer status arrived (an event carries
  // one) is stale and is dropped, so a slow reload never turns the counts back.
  let epoch = 0;
  return (set) => ({
    status: null,
    statusError: null,
    connected: true,
    loadStatus: async () => {
      const asked = epoch;
      try {
        const status = await client.status({});
        if (asked !== epoch) return;
        epoch++;
        set({ status, statusError: null });
      } catch (e) {
        if (asked === epoch) set({ statusError: toApiError(e) });
      }
    },
    setStatus: (status) => {
      epoch++;
      set({ status, statusError: null });
    },
    setConnected: (connected) => set({ connected }),
  });
}

export const selectStatus = (s: ReinState) => s.status;

/** Ratings waiting for the next training round, as a fraction of the threshold (0..1, capped). */
export const selectPendingProgress = derive([selectStatus], (status): { pending: number; threshold: number; fraction: number } | null => {
  if (!status) return null;
  const { pending, threshold } = status;
  return { pending, threshold, fraction: threshold > 0 ? Math.min(1, pending / threshold) : 0 };
});

export const selectCounts = derive([selectStatus], (status): { good: number; bad: number; total: number } | null => {
  if (!status) return null;
  const { good, bad, total } = status.ratings;
  return { good, bad, total };
});

/** What the app calls the EMA a round compares rewards against (ReinforceClaw's baseline), and what it is, in one line. */
export const BASELINE_LABEL = 'Reward baseline';
export const BASELINE_HELP = 'The running EMA of your rewards (+1 Good, −1 Bad). A round compares each rating with the mean reward of its other ratings, so a round rated all Good or all Bad has nothing to learn from and waits for a rating that differs.';

/** The reward baseline as a signed number with two decimals, or null before the first rating. */
export function selectEmaText(s: ReinState): string | null {
  const ema = s.status?.ema;
  if (!ema) return null;
  const shown = Math.abs(ema.value).toFixed(2);
  // A value that rounds to 0.00 has no sign worth showing ("−0.00" after 8 Good and 8 Bad reads as a negative).
  if (Number(shown) === 0) return '0.00';
  return (ema.value >= 0 ? '+' : '−') + shown;
}

export function selectAdapterText(s: ReinState): string {
  const a = s.status?.activeAdapter;
  return a ? `v${a.version}` : 'base model';
}

/**
 * After a rejected round: its ratings are pending again, and automatic training waits for as many new ones as the
 * threshold (training/scheduler.ts), so a round is not retried on the same ratings. Null when the last round went live.
 */
export function selectRejectedText(s: ReinState): string | null {
  const r = s.status?.rejected;
  if (!r) return null;
  return `Round ${r.runId} was rejected by the eval gate, so the ${r.pending} ratings it trained on count as not trained: they are pending again. An automatic round waits for ${s.status!.threshold} new ratings.`;
}

/**
 * A model as people name it, not its folder: "Qwen/Qwen2-0.5B" for a Hugging Face cache snapshot
 * (…/models--Qwen--Qwen2-0.5B/snapshots/<hash>), the folder's name for any other path, the id itself otherwise.
 */
export function modelName(id: string): string {
  // An Ollama model's id is ollama:<name>:<tag>; people know it as <name>:<tag>.
  if (id.startsWith('ollama:')) return id.slice('ollama:'.length);
  const hf = /models--([^/\\]+?)--([^/\\]+)[/\\]snapshots[/\\]/.exec(id);
  if (hf) return `${hf[1]}/${hf[2]}`;
  if (!/[/\\]/.test(id)) return id;
  const parts = id.split(/[/\\]+/).filter(Boolean);
  return parts[parts.length - 1] ?? id;
}
