// The ratings history: one filtered page of ratings, the turns they rate (fetched once each and kept), the turn
// opened in full, and the edits (re-rate, delete, export) that reload what they change.
import type { RatingView, Turn } from '../../src-main/common/domain.ts';
import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import { derive } from './derive.ts';
import type { RatingFilters, RatingsSlice, ReinState, Slice } from './types.ts';

export const RATINGS_PAGE = 25;
const DAY = 86_400_000;
export const PER_DAY_DAYS = 14;

/** The filters as listRatings input: a date range becomes since/until, "any" values are left out. */
export function ratingsQuery(f: RatingFilters, page: number, now = Date.now()) {
  return {
    limit: RATINGS_PAGE,
    offset: page * RATINGS_PAGE,
    ...(f.search.trim() ? { search: f.search.trim() } : {}),
    ...(f.kind !== 'any' ? { kind: f.kind } : {}),
    ...(f.source !== 'any' ? { source: f.source } : {}),
    ...(f.trained !== 'any' ? { trained: f.trained === 'yes' } : {}),
    ...(f.days > 0 ? { since: now - f.days * DAY } : {}),
    ...(f.tag ? { tag: f.tag } : {}),
  };
}

export const DEFAULT_FILTERS: RatingFilters = { search: '', kind: 'any', source: 'any', trained: 'any', days: 0, tag: '' };

export function createRatingsSlice(client: ReinClient): Slice<RatingsSlice> {
  const fetchTurns = async (ratings: RatingView[], known: Record<number, Turn>) => {
    const missing = [...new Set(ratings.map((r) => r.turnId))].filter((id) => !(id in known));
    const got = await Promise.all(missing.map((turnId) => client.getTurn({ turnId }).catch(() => null)));
    return Object.fromEntries(got.filter((t): t is Turn => t !== null).map((t) => [t.id, t]));
  };
  // Each page load is numbered: when the filters or the page change while one is in flight, only the newest load's
  // answer is shown. (An unfiltered load that answered after the filtered one showed "3 found" under a tag that has 1.)
  let asked = 0;
  return (set, get) => ({
    ratingFilters: DEFAULT_FILTERS,
    ratingPage: 0,
    ratingItems: [],
    ratingTotal: 0,
    ratingsLoaded: false,
    ratingsError: null,
    turnCache: {},
    openTurnId: null,
    fullTurnError: null,
    exportResult: null,
    exportError: null,
    exporting: false,
    tags: [],
    loadTags: async () => {
      try {
        set({ tags: await client.listTags({}) });
      } catch (e) {
        set({ ratingsError: toApiError(e) });
      }
    },
    recentRatings: [],
    loadRecentRatings: async () => {
      try {
        const page = await client.listRatings({ limit: 1000, since: Date.now() - PER_DAY_DAYS * DAY });
        set({ recentRatings: page.items });
      } catch (e) {
        set({ ratingsError: toApiError(e) });
      }
    },
    loadRatings: async () => {
      const mine = ++asked;
      const { ratingFilters, ratingPage } = get();
      try {
        const page = await client.listRatings(ratingsQuery(ratingFilters, ratingPage));
        const turns = await fetchTurns(page.items, get().turnCache);
        if (mine !== asked) return;
        set((s) => ({ ratingItems: page.items, ratingTotal: page.total, ratingsLoaded: true, ratingsError: null, turnCache: { ...s.turnCache, ...turns } }));
      } catch (e) {
        if (mine === asked) set({ ratingsError: toApiError(e), ratingsLoaded: true });
      }
    },
    setRatingFilters: (f) => {
      set((s) => ({ ratingFilters: { ...s.ratingFilters, ...f }, ratingPage: 0 }));
      void get().loadRatings();
    },
    setRatingPage: (page) => {
      set({ ratingPage: Math.max(0, page) });
      void get().loadRatings();
    },
    openTurn: async (turnId) => {
      set({ openTurnId: turnId });
      if (turnId === null) return;
      try {
        const turn = await client.getTurn({ turnId });
        set((s) => ({ turnCache: { ...s.turnCache, [turnId]: turn } }));
      } catch (e) {
        set({ ratingsError: toApiError(e) });
      }
    },
    loadFullTurn: async (turnId) => {
      if (turnId in get().turnCache) return;
      try {
        const turn = await client.getTurn({ turnId });
        set((s) => ({ turnCache: { ...s.turnCache, [turnId]: turn }, fullTurnError: null }));
      } catch (e) {
        set({ fullTurnError: toApiError(e) });
      }
    },
    rerate: async (turnId, value) => {
      try {
        const { status } = await client.rate({ turnId, value });
        get().setStatus(status);
        // The turn's live rating changed: forget its cached copy so the list shows the new one.
        set((s) => ({ turnCache: Object.fromEntries(Object.entries(s.turnCache).filter(([id]) => Number(id) !== turnId)) }));
        await get().loadRatings();
        if (get().openTurnId === turnId) await get().openTurn(turnId);
      } catch (e) {
        set({ ratingsError: toApiError(e) });
      }
    },
    deleteRating: async (ratingId) => {
      try {
        await client.deleteRating({ ratingId });
        await get().loadRatings();
        const open = get().openTurnId;
        if (open !== null) await get().openTurn(open);
      } catch (e) {
        set({ ratingsError: toApiError(e) });
      }
    },
    deleteTurn: async (turnId) => {
      try {
        await client.deleteTurn({ turnId });
        if (get().openTurnId === turnId) set({ openTurnId: null });
        await get().loadRatings();
      } catch (e) {
        set({ ratingsError: toApiError(e) });
      }
    },
    // The Export box shows this export's outcome only: an earlier "Wrote 40 turns" never stays beside a failure.
    exportRatings: async (path) => {
      set({ exportResult: null, exportError: null, exporting: true });
      try {
        set({ exportResult: await client.exportData({ path }) });
      } catch (e) {
        set({ exportError: toApiError(e) });
      } finally {
        set({ exporting: false });
      }
    },
  });
}

export interface RatingRow {
  rating: RatingView;
  turn: Turn | null;
}

export const selectRatingRows = derive([(s) => s.ratingItems, (s) => s.turnCache], (items, cache): RatingRow[] =>
  items.map((rating) => ({ rating, turn: cache[rating.turnId] ?? null })),
);

export const selectOpenTurn = (s: ReinState): Turn | null => (s.openTurnId === null ? null : (s.turnCache[s.openTurnId] ?? null));

export const selectRatingPages = derive([(s) => s.ratingTotal, (s) => s.ratingPage], (total, page) => ({
  page,
  pages: Math.max(1, Math.ceil(total / RATINGS_PAGE)),
  total,
}));

/**
 * What a user can do about a parked rating (as common/training/rounds.ts PARKED_ADVICE, for the CLI): each round
 * retries it with its own model and settings.
 */
export const PARKED_ADVICE =
  'Each round tries a parked rating again: it trains once it can be encoded, e.g. with a model of a longer context or a larger training length budget (Settings → Custom preset fields, maxTokens). A neutral score of text that is not the model\'s own trains nothing: rate it Good or Bad instead. Or delete the rating.';

/** A rating's place in the rounds, in words (as common/training/rounds.ts ratingRoundText, for the CLI). */
export function ratingRoundText(r: Pick<RatingView, 'runId' | 'lastRound' | 'parked'>): string {
  if (r.runId !== null) return `trained in round ${r.runId}`;
  if (r.parked !== null) return 'parked: not counted toward a round';
  const l = r.lastRound;
  if (l === null) return 'not trained yet';
  // A rating is held out by one round at most (node/training/data.ts selectRound).
  if (l.role === 'heldout') return `not trained yet (held out to test round ${l.runId}; the next round trains it)`;
  return l.outcome === 'rejected' ? `not trained (round ${l.runId} rejected)` : 'not trained yet';
}

/** "Good", "Bad" or "4/5", as the lists show a rating. */
/**
 * Which way a rating trains the answer: a correction makes it Bad (and the correction Good) whatever was pressed
 * with it (training/data.ts encodeRound); otherwise Good or Bad as given, and a score counts as neither here.
 */
export function countsAs(r: Pick<RatingView, 'kind' | 'correction'>): 'good' | 'bad' | null {
  if (r.correction) return 'bad';
  return r.kind === 'scale' ? null : r.kind;
}

export function ratingLabel(r: Pick<RatingView, 'kind' | 'scale'>): string {
  if (r.kind === 'good') return 'Good';
  if (r.kind === 'bad') return 'Bad';
  return `${r.scale}/5`;
}

const dayKey = (t: number) => {
  const d = new Date(t);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
};

/** Good and bad ratings per local day over the last PER_DAY_DAYS days, oldest first, days without ratings as zero. */
export function perDay(ratings: RatingView[], now = Date.now()): { day: string; good: number; bad: number }[] {
  const days = new Map<string, { day: string; good: number; bad: number }>();
  for (let i = PER_DAY_DAYS - 1; i >= 0; i--) {
    const key = dayKey(now - i * DAY);
    days.set(key, { day: key.slice(5), good: 0, bad: 0 });
  }
  for (const r of ratings) {
    const d = days.get(dayKey(r.createdAt));
    if (!d || r.undone) continue;
    // A 1-5 score counts by the sign of its reward ((s-3)/2): 4-5 good, 1-2 bad, 3 neither.
    if (r.value > 0) d.good++;
    else if (r.value < 0) d.bad++;
  }
  return [...days.values()];
}

export const selectPerDay = derive([(s) => s.recentRatings], (ratings) => perDay(ratings));

/** The full text of a turn once loadFullTurn has fetched it, else null (the caller shows the preview meanwhile). */
export const selectFullTurn = (turnId: number | null) => (s: ReinState): Turn | null =>
  turnId === null ? null : (s.turnCache[turnId] ?? null);

/**
 * The reward model's score of a turn in words, asked about or not: "Reward model v2: 83% chance of Good (not asked:
 * it was sure)". null when no reward model scored the turn.
 */
export function predictionWords(pred: Turn['rewardPrediction']): string | null {
  if (pred === undefined || pred === null) return null;
  const chance = `Reward model v${pred.version}: ${Math.round(pred.p * 100)}% chance of Good`;
  return pred.asked ? `${chance} (the popup asked: it was unsure)` : `${chance} (not asked: it was sure)`;
}
