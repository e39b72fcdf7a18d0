import type { ChatSource } from '../../src-main/common/chat/arena.ts';
import type { RatingView, TurnSummary } from '../../src-main/common/domain.ts';
import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import { derive } from './derive.ts';
import type { RatingChoice, ReinState, Slice, TurnsSlice } from './types.ts';

export const TURNS_LIMIT = 50;

/**
 * Rein's own Chat and Arena answers (CHAT_SOURCES in common/chat/arena.ts; keyed by its type, so the compiler checks
 * the list). They are rated on their own screens (an arena answer by its vote, while the pair is still blind; a tie
 * rates neither), so the Rate inbox and its count leave them out (listTurns rateInbox, status.turns.toRate).
 */
const APP_SOURCES: Record<ChatSource, true> = { chat: true, arena: true };
export const isAppSource = (source: string): boolean => Object.hasOwn(APP_SOURCES, source);

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
  // A choice made while another rating is in flight (a quick 2 then 1): the person's latest word, applied when the
  // first answers. Only the newest one is kept; every caller's promise settles when it has been applied.
  let queued: { turnId: number; value: RatingChoice; settle: Array<() => void> } | null = null;
  return (set, get) => ({
    turns: [],
    turnsTotal: 0,
    turnsLoaded: false,
    turnsError: null,
    ratingTurnId: null,
    rateError: null,
    cardTurnId: null,
    undoneTurnId: null,
    inboxFilter: 'all',
    inboxTurns: [],
    inboxTotal: 0,
    showTurn: (turnId) => set({ cardTurnId: turnId, rateError: null }),
    setInboxFilter: async (filter) => {
      set({ inboxFilter: filter });
      if (filter === 'all') return set({ inboxTurns: [], inboxTotal: 0 });
      try {
        const page = await client.listTurns({ limit: TURNS_LIMIT, state: filter, rateInbox: true });
        if (get().inboxFilter === filter) set({ inboxTurns: [...page.items].sort(newestFirst), inboxTotal: page.total, turnsError: null });
      } catch (e) {
        set({ turnsError: toApiError(e) });
      }
    },
    loadTurns: async () => {
      try {
        const page = await client.listTurns({ limit: TURNS_LIMIT, rateInbox: true });
        set({ turns: [...page.items].sort(newestFirst), turnsTotal: page.total, turnsLoaded: true, turnsError: null });
      } catch (e) {
        set({ turnsError: toApiError(e), turnsLoaded: true });
      }
    },
    rate: async (turnId, value) => {
      if (get().ratingTurnId !== null) {
        return new Promise<void>((resolve) => {
          queued = { turnId, value, settle: [...(queued?.settle ?? []), resolve] };
        });
      }
      set({ ratingTurnId: turnId, rateError: null, undoneTurnId: null });
      try {
        const { rating, status } = await client.rate({ turnId, value });
        get().applyRating(rating);
        get().setStatus(status);
        // Advance: the card moves on to the next turn that asks for a rating, or stays on this one (showing its
        // rating, with Undo) when none is left.
        const next = get().turns.some((t) => t.state === 'unrated');
        set({ cardTurnId: next ? null : turnId });
        if (get().inboxFilter !== 'all') void get().setInboxFilter(get().inboxFilter);
      } catch (e) {
        set({ rateError: toApiError(e) });
      } finally {
        set({ ratingTurnId: null });
      }
      const next = queued;
      queued = null;
      if (!next) return;
      if (get().turns.find((t) => t.id === next.turnId)?.rating?.kind !== next.value) await get().rate(next.turnId, next.value);
      for (const settle of next.settle) settle();
    },
    undo: async () => {
      set({ rateError: null });
      // Only the turn on the card: U never reaches a rating the user cannot see.
      const turnId = selectCurrentTurn(get())?.id;
      if (turnId === undefined) return;
      try {
        const { undone, restored, status } = await client.undo({ turnId });
        if (undone) get().applyRating(undone);
        if (restored) get().applyRating(restored);
        set({ undoneTurnId: undone ? undone.turnId : null });
        get().setStatus(status);
      } catch (e) {
        set({ rateError: toApiError(e) });
      }
    },
    applyTurn: (turn) => {
      if (isAppSource(turn.source)) return;
      const known = get().turns.some((t) => t.id === turn.id);
      // A new answer that asks for a rating takes the card unless the card's turn still waits for one.
      const unpin = !known && turn.state === 'unrated' && selectCurrentTurn(get())?.state !== 'unrated';
      set((s) => ({
        turns: upsert(s.turns, turn),
        turnsTotal: known ? s.turnsTotal : s.turnsTotal + 1,
        inboxTurns: s.inboxTurns.map((t) => (t.id === turn.id ? turn : t)),
        ...(unpin ? { cardTurnId: null } : {}),
      }));
    },
    applyRating: (rating) =>
      set((s) => ({
        turns: s.turns.map((t) => (t.id === rating.turnId ? withRating(t, rating) : t)),
        inboxTurns: s.inboxTurns.map((t) => (t.id === rating.turnId ? withRating(t, rating) : t)),
      })),
    removeTurn: (turnId) =>
      set((s) => {
        const turns = s.turns.filter((t) => t.id !== turnId);
        return {
          turns,
          turnsTotal: Math.max(0, s.turnsTotal - (s.turns.length - turns.length)),
          inboxTurns: s.inboxTurns.filter((t) => t.id !== turnId),
          ...(s.cardTurnId === turnId ? { cardTurnId: null } : {}),
        };
      }),
  });
}

export const selectTurns = (s: ReinState) => s.turns;

/**
 * The rating card's turn: the one the user opened from a list, else the newest that asks for a rating, else the
 * newest rated one (so its rating and Undo stay in view).
 */
export function selectCurrentTurn(s: ReinState): TurnSummary | null {
  if (s.cardTurnId !== null) {
    const opened = s.turns.find((t) => t.id === s.cardTurnId) ?? s.inboxTurns.find((t) => t.id === s.cardTurnId);
    if (opened) return opened;
  }
  // Chat and Arena answers are rated on their screens (an arena one by its vote, while the pair is blind).
  const card = (t: TurnSummary) => !isAppSource(t.source);
  return s.turns.find((t) => t.state === 'unrated' && card(t)) ?? s.turns.find((t) => t.state === 'rated' && card(t)) ?? null;
}

/** The list below the card: the recent turns (or those of the chosen state), except the card's own. */
export const selectOtherTurns = derive(
  [selectTurns, (s: ReinState) => s.inboxTurns, (s: ReinState) => s.inboxFilter, selectCurrentTurn],
  (turns, inbox, filter, current): TurnSummary[] => {
    const shown = filter === 'all' ? turns : inbox;
    return current ? shown.filter((t) => t.id !== current.id) : shown;
  },
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
