// Weak labels on the Rate card: the label Rein read from what the user did after an answer (the core's turnSignals),
// confirmed, flipped or dismissed with one key. Confirming or flipping is a rating through the core (its rater names
// the rule), so the card moves on by the core's events like after any rating.
import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import type { ReinState, Slice, WeakEntry, WeakSlice } from './types.ts';

export function createWeakSlice(client: ReinClient): Slice<WeakSlice> {
  return (set) => ({
    weak: {},
    weakError: null,
    loadWeak: async (turnId) => {
      try {
        const r = await client.turnSignals({ turnId });
        const entry: WeakEntry | null = r.label === null || r.explanation === null ? null : { value: r.label.value, rule: r.label.rule, explanation: r.explanation };
        set((s) => ({ weak: { ...s.weak, [turnId]: entry } }));
      } catch {
        // No label is shown for a turn whose signals cannot be read (deleted meanwhile): the card rates it as ever.
        set((s) => ({ weak: { ...s.weak, [turnId]: null } }));
      }
    },
    answerWeak: async (turnId, action) => {
      set({ weakError: null });
      try {
        if (action === 'dismiss') await client.dismissWeakLabel({ turnId });
        else await client.confirmWeakLabel({ turnId, flip: action === 'flip' });
        set((s) => ({ weak: { ...s.weak, [turnId]: null } }));
      } catch (e) {
        set({ weakError: { turnId, message: toApiError(e).message } });
      }
    },
  });
}

export const selectWeak =
  (turnId: number) =>
  (s: ReinState): WeakEntry | null =>
    s.weak[turnId] ?? null;
