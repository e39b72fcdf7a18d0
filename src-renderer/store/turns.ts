import type { RatingView, TurnSummary } from '../../src-main/common/domain.ts';
import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import { derive } from './derive.ts';
import type { ReinState, Slice, TurnsSlice } from './types.ts';

export const TURNS_LIMIT = 50;

const newestFirst = (a: TurnSummary, b: TurnSummary) => b.createdAt - a.createdAt || b.id - a.id;

function upsert(turns: TurnSummary[], turn: TurnSummary): TurnSummary[] {
  const rest = turns.filter((t) => t.id !== turn.id);
  return [...rest, turn].sort(newestFirst).slice(0, TURNS_LIMIT);
}

function withRating(turn: TurnSummary, rating: RatingView): TurnSummary {
  if (!rating.undone) return { ...turn, rating, state: 'rated' };
  // Only the live rating's undo clears the turn: a replaced rating's undo arrives after its successor.
  if (turn.rating?.id !== rating.id) return turn;
  return { ...turn, rating: null, state: 'unrated' };
}

export function createTurnsSlice(client: ReinClient): Slice<TurnsSlice> {
  return (set, get) => ({
    turns: [],
    turnsTotal: 0,
    turnsLoaded: false,
    turnsError: null,
    ratingTurnId: null,
    rateError: null,
    loadTurns: async () => {
      try {
        const page = await client.listTurns({ limit: TURNS_LIMIT });
        set({ turns: [...page.items].sort(newestFirst), turnsTotal: page.total, turnsLoaded: true, turnsError: null });
      } catch (e) {
        set({ turnsError: toApiError(e), turnsLoaded: true });
      }
    },
    rate: async (turnId, value) => {
      if (get().ratingTurnId !== null) return;
      set({ ratingTurnId: turnId, rateError: null });
      try {
        const { rating, status } = await client.rate({ turnId, value });
        get().applyRating(rating);
        get().setStatus(status);
      } catch (e) {
        set({ rateError: toApiError(e) });
      } finally {
        set({ ratingTurnId: null });
      }
    },
    undo: async () => {
      set({ rateError: null });
      try {
        const { undone, status } = await client.undo({});
        if (undone) get().applyRating(undone);
        get().setStatus(status);
      } catch (e) {
        set({ rateError: toApiError(e) });
      }
    },
    applyTurn: (turn) => {
      const known = get().turns.some((t) => t.id === turn.id);
      set((s) => ({ turns: upsert(s.turns, turn), turnsTotal: known ? s.turnsTotal : s.turnsTotal + 1 }));
    },
    applyRating: (rating) =>
      set((s) => ({ turns: s.turns.map((t) => (t.id === rating.turnId ? withRating(t, rating) : t)) })),
    removeTurn: (turnId) =>
      set((s) => {
        const turns = s.turns.filter((t) => t.id !== turnId);
        return { turns, turnsTotal: Math.max(0, s.turnsTotal - (s.turns.length - turns.length)) };
      }),
  });
}

export const selectTurns = (s: ReinState) => s.turns;

/** The rating card's turn: the newest captured turn that is not ignored or expired. */
export function selectCurrentTurn(s: ReinState): TurnSummary | null {
  return s.turns.find((t) => t.state === 'unrated' || t.state === 'rated') ?? null;
}

/** The list below the card: every recent turn except the card's own. */
export const selectOtherTurns = derive([selectTurns, selectCurrentTurn], (turns, current): TurnSummary[] =>
  current ? turns.filter((t) => t.id !== current.id) : turns,
);

/** The first `lines` lines of a text, each cut at `width` characters, with a marker when anything was cut. */
export function firstLines(text: string, lines = 4, width = 400): { text: string; cut: boolean } {
  const all = text.replace(/\r\n?/g, '\n').trim().split('\n');
  let cut = all.length > lines;
  const kept = all.slice(0, lines).map((l) => {
    if (l.length <= width) return l;
    cut = true;
    return l.slice(0, width) + '…';
  });
  return { text: kept.join('\n'), cut };
}
