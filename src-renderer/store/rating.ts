// Rating a turn, on every surface (the main window's card, the popup, a Chat answer): one action that sends the
// pressed value together with whatever was typed under "Score, correction, tags" for that turn, and one undo that
// takes back the rating just given, wherever the card or popup has moved on to since.
import type { RatingView } from '../../src-main/common/domain.ts';
import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import { ratingLabel } from './ratings.ts';
import { selectCurrentTurn } from './turns.ts';
import type { RateValue, RatingDraft, RatingSlice, RatingSurface, ReinState, Slice } from './types.ts';

const EMPTY_DRAFT: RatingDraft = { correction: '', tags: '', comment: '' };

/** "too long, wrong file" → ['too long', 'wrong file']: trimmed, deduplicated, at most the core's 32. */
export function draftTags(text: string): string[] {
  return [...new Set(text.split(',').map((t) => t.trim()).filter((t) => t.length > 0))].slice(0, 32);
}

/** The rate verb's optional fields from a draft: only what was typed. */
export function draftFields(d: RatingDraft | undefined): { correction?: string; tags?: string[]; comment?: string } {
  if (!d) return {};
  const tags = draftTags(d.tags);
  return {
    ...(d.correction.trim() ? { correction: d.correction.trim() } : {}),
    ...(tags.length > 0 ? { tags } : {}),
    ...(d.comment.trim() ? { comment: d.comment.trim() } : {}),
  };
}

const sameValue = (r: RatingView | null | undefined, v: RateValue) => (typeof v === 'number' ? r?.scale === v : r?.kind === v && r.scale === null);

function undoText(undone: RatingView | null, restored: RatingView | null): string {
  if (!undone) return 'Nothing to undo.';
  const back = restored ? ` ${ratingLabel(restored)} is back.` : '';
  return `Undid ${ratingLabel(undone)} on turn ${undone.turnId}.${back}`;
}

export function createRatingSlice(client: ReinClient): Slice<RatingSlice> {
  // A choice made while another rating is in flight (a quick 2 then 1): the person's latest word, applied when the
  // first answers. Only the newest one is kept; every caller's promise settles when it has been applied.
  let queued: { turnId: number; value: RateValue; where: RatingSurface; settle: Array<() => void> } | null = null;
  // The rating in flight: an undo pressed meanwhile waits for it, then takes it back (the core's event can move the
  // card on before the reply arrives, and U pressed then must not find the next, unrated turn).
  let inflight: Promise<unknown> = Promise.resolve();
  return (set, get) => ({
    drafts: {},
    ratingTurnId: null,
    rateError: null,
    lastRated: null,
    undoNote: null,
    setDraft: (turnId, patch) => set((s) => ({ drafts: { ...s.drafts, [turnId]: { ...(s.drafts[turnId] ?? EMPTY_DRAFT), ...patch } } })),
    rate: async (turnId, value, where) => {
      if (get().ratingTurnId !== null) {
        return new Promise<void>((resolve) => {
          queued = { turnId, value, where, settle: [...(queued?.settle ?? []), resolve] };
        });
      }
      // The popup's copy of the turn, kept so that an undo can put it back in the queue.
      const shown = get().queue.find((t) => t.id === turnId) ?? get().turns.find((t) => t.id === turnId) ?? null;
      const before = get().lastRated;
      set({ ratingTurnId: turnId, rateError: null, undoNote: null, lastRated: { turnId, where, turn: shown } });
      try {
        const call = client.rate({ turnId, value, ...draftFields(get().drafts[turnId]) });
        inflight = call.catch(() => undefined);
        const { rating, status } = await call;
        get().applyRating(rating);
        get().setStatus(status);
        get().drop(turnId);
        // Sent: the draft goes, unless another choice for this turn waits (a quick 2 then 1) and must carry it too.
        if (queued?.turnId !== turnId) {
          set((s) => {
            const { [turnId]: _sent, ...drafts } = s.drafts;
            return { drafts };
          });
        }
        if (where === 'card') get().advanceCard(turnId);
      } catch (e) {
        set({ rateError: { turnId, error: toApiError(e) }, lastRated: before });
      } finally {
        set({ ratingTurnId: null });
      }
      const next = queued;
      queued = null;
      if (!next) return;
      if (!sameValue(get().turns.find((t) => t.id === next.turnId)?.rating, next.value)) await get().rate(next.turnId, next.value, next.where);
      for (const settle of next.settle) settle();
    },
    undo: async (where, only) => {
      await inflight;
      // The rating given last on this surface; else (nothing rated here yet) the card's own turn. U never reaches a
      // rating the person cannot see: a Chat rating is not undone from the Rate screen, nor the other way round.
      const last = get().lastRated;
      const turnId = only ?? (last?.where === where ? last.turnId : where === 'card' ? selectCurrentTurn(get())?.id : undefined);
      set({ rateError: null });
      if (turnId === undefined) return set({ undoNote: { turnId: null, text: 'Nothing to undo.' } });
      try {
        const { undone, restored, status } = await client.undo({ turnId });
        if (undone) get().applyRating(undone);
        if (restored) get().applyRating(restored);
        get().setStatus(status);
        // The undone answer comes back where it was rated, to rate again; a second U undoes the rating it restored.
        if (where === 'card') get().showTurn(turnId);
        const turn = get().turns.find((t) => t.id === turnId) ?? (last?.turnId === turnId ? last.turn : null);
        if (where === 'popup' && turn && !restored) get().requeue({ ...turn, state: 'unrated', rating: null });
        const lastRated = restored ? { turnId, where, turn } : last?.turnId === turnId ? null : last;
        set({ undoNote: { turnId, text: undoText(undone, restored) }, lastRated });
      } catch (e) {
        set({ rateError: { turnId, error: toApiError(e) } });
      }
    },
  });
}

export const selectDraft = (turnId: number) => (s: ReinState): RatingDraft => s.drafts[turnId] ?? EMPTY_DRAFT;
/** Words typed for a turn's rating: the popup then waits for the person however long it takes. */
export const selectDraftTyped = (turnId: number | null) => (s: ReinState): boolean => {
  const d = turnId === null ? undefined : s.drafts[turnId];
  return d !== undefined && (d.correction.trim() !== '' || d.tags.trim() !== '' || d.comment.trim() !== '');
};
export const selectRateError = (turnId: number) => (s: ReinState) => (s.rateError?.turnId === turnId ? s.rateError.error : null);
export const selectUndoNote = (turnId: number) => (s: ReinState) => (s.undoNote?.turnId === turnId ? s.undoNote.text : null);
