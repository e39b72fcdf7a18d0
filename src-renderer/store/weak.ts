// Weak labels on the Rate card: the label Rein read from what the user did after an answer (the core's turnSignals),
// confirmed, flipped or dismissed with one key. Confirming or flipping is a rating through the core (its rater names
// the rule), so the card moves on by the core's events like after any rating. The popup shows the same label: an answer
// still on screen when the next prompt of its session arrives gets its label then (reloadWeakBefore).
import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import type { ReinState, Slice, WeakEntry, WeakSlice } from './types.ts';

export function createWeakSlice(client: ReinClient): Slice<WeakSlice> {
  // The latest read of each turn's label: an older read that answers after a newer one (the card asked as the turn
  // showed, the next prompt's capture asked again) must not put back a label from before that prompt.
  const reads = new Map<number, number>();
  return (set, get) => ({
    weak: {},
    weakError: null,
    loadWeak: async (turnId) => {
      const n = (reads.get(turnId) ?? 0) + 1;
      reads.set(turnId, n);
      let entry: WeakEntry | null = null;
      try {
        const r = await client.turnSignals({ turnId });
        entry = r.label === null || r.explanation === null ? null : { value: r.label.value, rule: r.label.rule, explanation: r.explanation };
      } catch {
        // No label is shown for a turn whose signals cannot be read (deleted meanwhile): the card rates it as ever.
      }
      if (reads.get(turnId) === n) set((s) => ({ weak: { ...s.weak, [turnId]: entry } }));
    },
    reloadWeakBefore: (turn) => {
      if (turn.session === null) return;
      // The answer the new prompt reacts to: the newest earlier one of its session and agent that this window knows
      // (the core's rule, store/signals.ts previousInSession), read again if it is unrated.
      const s = get();
      const before = [...s.queue, ...s.turns, ...s.inboxTurns]
        .filter((t) => t.id !== turn.id && t.session === turn.session && t.source === turn.source && t.createdAt <= turn.createdAt)
        .sort((x, y) => y.createdAt - x.createdAt || y.id - x.id)[0];
      if (before !== undefined && before.state === 'unrated') void get().loadWeak(before.id);
    },
    answerWeak: async (turnId, action) => {
      set({ weakError: null });
      try {
        if (action === 'dismiss') await client.dismissWeakLabel({ turnId });
        else await client.confirmWeakLabel({ turnId, flip: action === 'flip' });
        reads.set(turnId, (reads.get(turnId) ?? 0) + 1);
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
