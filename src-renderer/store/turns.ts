import type { ChatSource } from '../../src-main/common/chat/arena.ts';
import type { RatingView, TurnSummary } from '../../src-main/common/domain.ts';
import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import { derive } from './derive.ts';
import type { ReinState, Slice, TurnsSlice } from './types.ts';

export const TURNS_LIMIT = 50;

/**
 * Rein's own Chat and Arena answers (CHAT_SOURCES in common/chat/arena.ts; keyed by its type, so the compiler checks
 * the list). They are rated on their own screens (an arena answer by its vote, while the pair is still blind; a tie
 * rates neither), so the Rate inbox and its count leave them out (listTurns rateInbox, status.turns.toRate).
 */
const APP_SOURCES: Record<ChatSource, true> = { chat: true, arena: true };
export const isAppSource = (source: string): boolean => Object.hasOwn(APP_SOURCES, source);

const newestFirst = (a: TurnSummary, b: TurnSummary) => b.createdAt - a.createdAt || b.id - a.id;

function upsert(turns: TurnSummary[], turn: TurnSummary, limit: number): TurnSummary[] {
  const rest = turns.filter((t) => t.id !== turn.id);
  return [...rest, turn].sort(newestFirst).slice(0, limit);
}

function withRating<T extends { rating?: RatingView | null }>(turn: T, rating: RatingView): T {
  if (!rating.undone) return { ...turn, rating, ...('state' in turn ? { state: 'rated' } : {}) };
  // Only the live rating's undo clears the turn: a replaced rating's undo arrives after its successor.
  if (turn.rating?.id !== rating.id) return turn;
  return { ...turn, rating: null, ...('state' in turn ? { state: 'unrated' } : {}) };
}

export function createTurnsSlice(client: ReinClient): Slice<TurnsSlice> {
  return (set, get) => ({
    turns: [],
    turnsTotal: 0,
    turnsLoaded: false,
    turnsError: null,
    cardTurnId: null,
    turnsLimit: TURNS_LIMIT,
    inboxFilter: 'all',
    inboxTurns: [],
    inboxTotal: 0,
    showTurn: (turnId) => set({ cardTurnId: turnId }),
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
        const page = await client.listTurns({ limit: Math.min(get().turnsLimit, 1000), rateInbox: true });
        set({ turns: [...page.items].sort(newestFirst), turnsTotal: page.total, turnsLoaded: true, turnsError: null });
      } catch (e) {
        set({ turnsError: toApiError(e), turnsLoaded: true });
      }
    },
    loadMoreTurns: async () => {
      const { inboxFilter: filter } = get();
      const shown = filter === 'all' ? get().turns : get().inboxTurns;
      try {
        const page = await client.listTurns({ limit: TURNS_LIMIT, offset: shown.length, rateInbox: true, ...(filter === 'all' ? {} : { state: filter }) });
        if (get().inboxFilter !== filter) return;
        const merge = (have: TurnSummary[]) => [...have, ...page.items.filter((t) => !have.some((h) => h.id === t.id))].sort(newestFirst);
        if (filter === 'all') set((s) => ({ turns: merge(s.turns), turnsTotal: page.total, turnsLimit: s.turnsLimit + TURNS_LIMIT, turnsError: null }));
        else set((s) => ({ inboxTurns: merge(s.inboxTurns), inboxTotal: page.total, turnsError: null }));
      } catch (e) {
        set({ turnsError: toApiError(e) });
      }
    },
    advanceCard: (turnId) => {
      const next = get().turns.some((t) => t.state === 'unrated');
      set({ cardTurnId: next ? null : turnId });
      if (get().inboxFilter !== 'all') void get().setInboxFilter(get().inboxFilter);
    },
    applyTurn: (turn) => {
      if (isAppSource(turn.source)) return;
      const known = get().turns.some((t) => t.id === turn.id);
      // A new answer that asks for a rating takes the card unless the card's turn still waits for one.
      const unpin = !known && turn.state === 'unrated' && selectCurrentTurn(get())?.state !== 'unrated';
      set((s) => ({
        turns: upsert(s.turns, turn, s.turnsLimit),
        turnsTotal: known ? s.turnsTotal : s.turnsTotal + 1,
        inboxTurns: s.inboxTurns.map((t) => (t.id === turn.id ? turn : t)),
        ...(unpin ? { cardTurnId: null } : {}),
      }));
    },
    applyRating: (rating) =>
      set((s) => ({
        turns: s.turns.map((t) => (t.id === rating.turnId ? withRating(t, rating) : t)),
        inboxTurns: s.inboxTurns.map((t) => (t.id === rating.turnId ? withRating(t, rating) : t)),
        // A Chat answer is a stored turn too: its inline rating follows the same events.
        chat: s.chat.map((e) => (e.turnId === rating.turnId ? withRating(e, rating) : e)),
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

/** The card's answer in full, once fetched (the correction can start from it). */
export const selectCurrentAnswer = (s: ReinState): string | undefined => {
  const id = selectCurrentTurn(s)?.id;
  return id === undefined ? undefined : s.turnCache[id]?.response;
};

/** The list below the card: the recent turns (or those of the chosen state), except the card's own. */
export const selectOtherTurns = derive(
  [selectTurns, (s: ReinState) => s.inboxTurns, (s: ReinState) => s.inboxFilter, selectCurrentTurn],
  (turns, inbox, filter, current): TurnSummary[] => {
    const shown = filter === 'all' ? turns : inbox;
    return current ? shown.filter((t) => t.id !== current.id) : shown;
  },
);

/** How many turns of the list shown (recent, or the chosen state) are not loaded yet: "Show more answers" fetches them. */
export const selectMoreTurns = (s: ReinState): number =>
  s.inboxFilter === 'all' ? Math.max(0, s.turnsTotal - s.turns.length) : Math.max(0, s.inboxTotal - s.inboxTurns.length);

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
