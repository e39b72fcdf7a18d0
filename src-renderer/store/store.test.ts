// The store's slices and selectors against an in-test client: a tiny in-memory stand-in for the core that follows
// the contract in common/api.ts (the real core is covered by the e2e suite, which drives this store in Chromium).
import { describe, expect, it } from 'vitest';
import type { EventName, Events, ReinApi, Subscribe } from '../../src-main/common/api.ts';
import type { RatingView, Status, TurnSummary } from '../../src-main/common/domain.ts';
import { ApiError } from '../services/api.ts';
import type { ReinClient } from '../services/api.ts';
import { connectEvents, createReinStore } from './index.ts';
import { ratingRoundText } from './ratings.ts';
import { selectAdapterText, selectCounts, selectEmaText, selectPendingProgress, selectRejectedText } from './status.ts';
import { selectTrainingView } from './training.ts';
import { firstLines, selectCurrentTurn, selectOtherTurns, TURNS_LIMIT } from './turns.ts';

function status(over: Partial<Status> = {}): Status {
  return {
    version: '0.1.0',
    home: '/tmp/rein',
    model: { id: 'default', configured: false },
    activeAdapter: null,
    ratings: { good: 0, bad: 0, scaled: 0, total: 0 },
    pending: 0,
    parked: 0,
    threshold: 32,
    ema: null,
    turns: { total: 0, unrated: 0, toRate: 0 },
    training: { state: 'idle', runId: null },
    capture: { paused: false },
    rejected: null,
    ...over,
  };
}

function turn(id: number, over: Partial<TurnSummary> = {}): TurnSummary {
  return {
    id,
    source: 'claude-code',
    session: 's1',
    eventId: `e${id}`,
    createdAt: 1_000 + id,
    model: null,
    promptPreview: `prompt ${id}`,
    responsePreview: `answer ${id}`,
    state: 'unrated',
    rating: null,
    onPolicy: false,
    ...over,
  };
}

let nextRating = 1;
function rating(turnId: number, kind: 'good' | 'bad', over: Partial<RatingView> = {}): RatingView {
  return {
    id: nextRating++,
    turnId,
    kind,
    value: kind === 'good' ? 1 : -1,
    scale: null,
    correction: null,
    tags: [],
    comment: null,
    rater: 'me',
    modelId: 'default',
    createdAt: 5_000,
    undone: false,
    runId: null,
    lastRound: null,
    parked: null,
    ...over,
  };
}

/** An in-memory client: turns and ratings in arrays, status derived from them, events to subscribers. */
function fakeClient(turns: TurnSummary[] = []) {
  const listeners = new Map<string, Set<(p: unknown) => void>>();
  const calls: string[] = [];
  const ratings: RatingView[] = [];
  const statusNow = () => {
    const live = ratings.filter((r) => !r.undone);
    return status({
      ratings: {
        good: live.filter((r) => r.kind === 'good').length,
        bad: live.filter((r) => r.kind === 'bad').length,
        scaled: 0,
        total: live.length,
      },
      pending: live.length,
      turns: { total: turns.length, unrated: turns.filter((t) => t.state === 'unrated').length, toRate: turns.filter((t) => t.state === 'unrated').length },
    });
  };
  const notAvailable = (verb: string) => () => Promise.reject(new ApiError({ code: 'not_available', message: `${verb} is not available yet: training lands later` }));
  const api: Partial<ReinApi> = {
    status: async () => statusNow(),
    listTurns: async (i) => ({ items: turns.slice(0, i.limit ?? 50), total: turns.length }),
    getSettings: async () => ({ 'capture.paused': false, 'training.auto': true }) as never,
    listRuns: async () => [],
    listAdapters: async () => [],
    startTraining: notAvailable('startTraining'),
    rate: async (i) => {
      const t = turns.find((x) => x.id === i.turnId);
      if (!t) throw new ApiError({ code: 'not_found', message: `no turn ${i.turnId}` });
      for (const r of ratings) if (r.turnId === t.id) r.undone = true;
      const r = rating(t.id, i.value as 'good' | 'bad');
      ratings.push(r);
      Object.assign(t, { rating: r, state: 'rated' });
      return { rating: r, status: statusNow() };
    },
    undo: async (i) => {
      const r = [...ratings].reverse().find((x) => !x.undone && (i.turnId === undefined || x.turnId === i.turnId)) ?? null;
      if (r) r.undone = true;
      return { undone: r, restored: null, status: statusNow() };
    },
  };
  const on: Subscribe = (event, fn) => {
    let set = listeners.get(event);
    if (!set) listeners.set(event, (set = new Set()));
    const f = fn as (p: unknown) => void;
    set.add(f);
    return () => set.delete(f);
  };
  const client = new Proxy({ on } as ReinClient, {
    get: (t, key: string) => {
      if (key === 'on') return t.on;
      if (key === 'onConnection') return undefined;
      calls.push(key);
      const fn = api[key as keyof ReinApi];
      if (!fn) return () => Promise.reject(new ApiError({ code: 'not_found', message: `verb ${key} not in the fake` }));
      return fn;
    },
  });
  const emit = <E extends EventName>(name: E, payload: Events[E]) => {
    for (const fn of listeners.get(name) ?? []) fn(payload);
  };
  const listenerCount = () => [...listeners.values()].reduce((n, s) => n + s.size, 0);
  return { client, emit, calls, turns, ratings, listenerCount, api };
}

describe('store', () => {
  it('init loads status, turns, settings, runs, adapters and the EMA history', async () => {
    const f = fakeClient([turn(2), turn(1)]);
    const store = createReinStore(f.client);
    await store.getState().init();
    const s = store.getState();
    expect(s.status?.turns.total).toBe(2);
    expect(s.turns.map((t) => t.id)).toEqual([2, 1]);
    expect(s.turnsLoaded).toBe(true);
    expect(s.settings?.['capture.paused']).toBe(false);
    expect(new Set(f.calls)).toEqual(new Set(['status', 'listTurns', 'getSettings', 'listRuns', 'listAdapters', 'emaHistory']));
  });

  it('rate marks the turn rated and takes the status from the reply', async () => {
    const f = fakeClient([turn(2), turn(1)]);
    const store = createReinStore(f.client);
    await store.getState().init();
    await store.getState().rate(2, 'good', 'card');
    const s = store.getState();
    expect(s.turns[0]).toMatchObject({ id: 2, state: 'rated', rating: { kind: 'good' } });
    expect(selectCounts(s)).toEqual({ good: 1, bad: 0, total: 1 });
    expect(s.ratingTurnId).toBeNull();
    expect(s.rateError).toBeNull();
  });

  it('a choice made while a rating is in flight is applied when it answers (2 then 1 quickly ends Good)', async () => {
    const f = fakeClient([turn(1)]);
    const store = createReinStore(f.client);
    await store.getState().init();
    const rate = f.api.rate!;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    f.api.rate = async (i) => {
      if (i.value === 'bad') await held;
      return rate(i);
    };
    const bad = store.getState().rate(1, 'bad', 'card');
    expect(store.getState().ratingTurnId).toBe(1);
    const good = store.getState().rate(1, 'good', 'card');
    release();
    await Promise.all([bad, good]);
    const s = store.getState();
    expect(s.turns[0]).toMatchObject({ id: 1, state: 'rated', rating: { kind: 'good' } });
    expect(f.ratings.map((r) => [r.kind, r.undone])).toEqual([['bad', true], ['good', false]]);
    expect(s.ratingTurnId).toBeNull();
  });

  it('a failed rating keeps the turn as it was and shows the error', async () => {
    const f = fakeClient([turn(1)]);
    const store = createReinStore(f.client);
    await store.getState().init();
    await store.getState().rate(99, 'bad', 'card');
    const s = store.getState();
    expect(s.rateError).toMatchObject({ turnId: 99, error: { code: 'not_found' } });
    expect(s.turns[0].state).toBe('unrated');
    expect(s.ratingTurnId).toBeNull();
  });

  it('undo returns the rated turn to unrated', async () => {
    const f = fakeClient([turn(1)]);
    const store = createReinStore(f.client);
    await store.getState().init();
    await store.getState().rate(1, 'bad', 'card');
    await store.getState().undo('card');
    const s = store.getState();
    expect(s.turns[0]).toMatchObject({ state: 'unrated', rating: null });
    expect(selectCounts(s)).toEqual({ good: 0, bad: 0, total: 0 });
    expect(s.undoNote).toEqual({ turnId: 1, text: 'Undid Bad on turn 1.' });
  });

  it('U pressed while a rating is in flight takes back that rating, not the next turn the card moved on to', async () => {
    const f = fakeClient([turn(2), turn(1)]);
    const store = createReinStore(f.client);
    await store.getState().init();
    const rate = f.api.rate!;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    f.api.rate = async (i) => {
      await held;
      return rate(i);
    };
    const rating = store.getState().rate(2, 'good', 'card');
    const undo = store.getState().undo('card');
    release();
    await Promise.all([rating, undo]);
    const s = store.getState();
    expect(f.ratings.map((r) => [r.turnId, r.kind, r.undone])).toEqual([[2, 'good', true]]);
    expect(s.undoNote).toEqual({ turnId: 2, text: 'Undid Good on turn 2.' });
    expect(selectCurrentTurn(s)?.id).toBe(2);
  });

  it('the typed correction, tags and comment go with whichever rating is given, and the draft is cleared', async () => {
    const f = fakeClient([turn(1)]);
    const rate = f.api.rate!;
    const sent: unknown[] = [];
    f.api.rate = async (i) => {
      sent.push(i);
      return rate(i);
    };
    const store = createReinStore(f.client);
    await store.getState().init();
    store.getState().setDraft(1, { correction: ' use <= ', tags: 'off by one, parser, off by one', comment: '' });
    await store.getState().rate(1, 'bad', 'popup');
    expect(sent).toEqual([{ turnId: 1, value: 'bad', correction: 'use <=', tags: ['off by one', 'parser'] }]);
    expect(store.getState().drafts).toEqual({});
  });

  it("a replaced rating's late undo event does not clear the new rating", () => {
    const store = createReinStore(fakeClient().client);
    const first = rating(1, 'good');
    const second = rating(1, 'bad');
    store.getState().applyTurn(turn(1));
    store.getState().applyRating(first);
    store.getState().applyRating(second);
    store.getState().applyRating({ ...first, undone: true });
    expect(store.getState().turns[0].rating?.id).toBe(second.id);
    store.getState().applyRating({ ...second, undone: true });
    expect(store.getState().turns[0]).toMatchObject({ state: 'unrated', rating: null });
  });

  it('training that is not available shows the core’s reason, not fake data', async () => {
    const store = createReinStore(fakeClient().client);
    await store.getState().startTraining();
    const view = selectTrainingView(store.getState());
    expect(view).toEqual({ kind: 'unavailable', message: 'startTraining is not available yet: training lands later' });
    expect(store.getState().runs).toEqual([]);
    expect(store.getState().trainingStarting).toBe(false);
  });

  it('says when the last round was rejected and its ratings are pending again, and where each rating stands', () => {
    const store = createReinStore(fakeClient().client);
    store.getState().setStatus(status({ pending: 10, threshold: 10 }));
    expect(selectRejectedText(store.getState())).toBeNull();
    store.getState().setStatus(status({ pending: 10, threshold: 10, rejected: { runId: 3, pending: 8 } }));
    expect(selectRejectedText(store.getState())).toBe(
      'Round 3 was rejected by the eval gate, so the 8 ratings it trained on count as not trained: they are pending again. An automatic round waits for 10 new ratings.',
    );
    expect(ratingRoundText(rating(1, 'good', { lastRound: { runId: 3, role: 'trained', outcome: 'rejected' } }))).toBe('not trained (round 3 rejected)');
    expect(ratingRoundText(rating(1, 'good', { lastRound: { runId: 3, role: 'heldout', outcome: 'accepted' } }))).toBe('not trained yet (held out to test round 3; the next round trains it)');
    expect(ratingRoundText(rating(1, 'good', { runId: 2, lastRound: { runId: 2, role: 'trained', outcome: 'accepted' } }))).toBe('trained in round 2');
  });

  it('events keep the store current, and the disposer removes every listener', async () => {
    const f = fakeClient([turn(1)]);
    const store = createReinStore(f.client);
    await store.getState().init();
    const off = connectEvents(store, f.client);
    expect(f.listenerCount()).toBeGreaterThan(0);

    f.turns.unshift(turn(7, { promptPreview: 'live one' }));
    f.emit('turnCaptured', f.turns[0]);
    expect(selectCurrentTurn(store.getState())?.id).toBe(7);
    expect(store.getState().turnsTotal).toBe(2);

    const r = rating(7, 'good');
    f.emit('ratingAdded', { rating: r, status: status({ ratings: { good: 1, bad: 0, scaled: 0, total: 1 }, pending: 1 }) });
    expect(store.getState().turns[0]).toMatchObject({ id: 7, state: 'rated' });
    expect(selectPendingProgress(store.getState())).toEqual({ pending: 1, threshold: 32, fraction: 1 / 32 });

    f.emit('turnDeleted', { turnId: 1, status: status() });
    expect(store.getState().turns.map((t) => t.id)).toEqual([7]);
    expect(store.getState().turnsTotal).toBe(1);

    f.emit('trainingProgress', { runId: 3, phase: 'training', step: 5, steps: 20, loss: 0.5, kl: 0, clipFraction: 0, tokensPerSecond: 10, etaSeconds: 3 });
    expect(selectTrainingView(store.getState())).toEqual({ kind: 'running', fraction: 0.25, phase: 'training' });

    off();
    expect(f.listenerCount()).toBe(0);
  });

  it('a status reload answered after a newer status arrived (a rating event) is dropped, so counts never go back', async () => {
    const f = fakeClient([turn(1)]);
    let release: (s: Status) => void = () => {};
    const slow = new Proxy(f.client, {
      get: (t, key: string) => (key === 'status' ? () => new Promise<Status>((r) => (release = r)) : t[key as keyof ReinClient]),
    });
    const store = createReinStore(slow);
    const off = connectEvents(store, slow);
    f.emit('turnCaptured', turn(2)); // starts a status reload that the core answers late
    const newer = status({ ratings: { good: 2, bad: 0, scaled: 0, total: 2 }, pending: 2 });
    f.emit('ratingAdded', { rating: rating(2, 'good'), status: newer });
    release(status({ ratings: { good: 1, bad: 0, scaled: 0, total: 1 }, pending: 1 }));
    await new Promise((r) => setTimeout(r, 0));
    expect(selectCounts(store.getState())?.good).toBe(2);
    // A reload with nothing newer in between still applies.
    const next = store.getState().loadStatus();
    release(status({ ratings: { good: 3, bad: 0, scaled: 0, total: 3 }, pending: 3 }));
    await next;
    expect(selectCounts(store.getState())?.good).toBe(3);
    off();
  });

  it('a finished round loads its runs and versions together, so the gate line knows the version', async () => {
    const f = fakeClient();
    const store = createReinStore(f.client);
    await store.getState().init();
    const off = connectEvents(store, f.client);
    const calls = f.calls.length;
    f.emit('trainingProgress', { runId: 3, phase: 'done', step: 20, steps: 20, loss: 0.5, kl: 0, clipFraction: 0, tokensPerSecond: 10, etaSeconds: 0 });
    await new Promise((r) => setTimeout(r, 0));
    expect(f.calls.slice(calls).sort()).toEqual(['listAdapters', 'listRuns']);
    expect(store.getState().adaptersLoaded).toBe(true);
    off();
  });

  it('keeps at most TURNS_LIMIT turns, newest first, and updates in place', () => {
    const store = createReinStore(fakeClient().client);
    for (let i = 1; i <= TURNS_LIMIT + 5; i++) store.getState().applyTurn(turn(i));
    const ids = store.getState().turns.map((t) => t.id);
    expect(ids.length).toBe(TURNS_LIMIT);
    expect(ids[0]).toBe(TURNS_LIMIT + 5);
    store.getState().applyTurn(turn(TURNS_LIMIT + 5, { state: 'ignored' }));
    expect(store.getState().turns.length).toBe(TURNS_LIMIT);
    expect(store.getState().turns[0].state).toBe('ignored');
  });
});

describe('selectors', () => {
  it('the card shows the newest turn that asks for a rating, else the newest rated; a row opens its turn there', () => {
    const store = createReinStore(fakeClient().client);
    store.getState().applyTurn(turn(1));
    store.getState().applyTurn(turn(2, { state: 'rated' }));
    store.getState().applyTurn(turn(3, { state: 'ignored' }));
    expect(selectCurrentTurn(store.getState())?.id).toBe(1);
    expect(selectOtherTurns(store.getState()).map((t) => t.id)).toEqual([3, 2]);
    store.getState().showTurn(3);
    expect(selectCurrentTurn(store.getState())?.id).toBe(3);
    expect(selectOtherTurns(store.getState()).map((t) => t.id)).toEqual([2, 1]);
    store.getState().showTurn(null);
    store.getState().applyTurn(turn(1, { state: 'rated' }));
    expect(selectCurrentTurn(store.getState())?.id).toBe(2);
  });

  it('status selectors are null before the status loads, and format the EMA and adapter', () => {
    const store = createReinStore(fakeClient().client);
    expect(selectCounts(store.getState())).toBeNull();
    expect(selectEmaText(store.getState())).toBeNull();
    expect(selectPendingProgress(store.getState())).toBeNull();
    store.getState().setStatus(status({ ema: { value: -0.256, count: 4 }, pending: 40, activeAdapter: { version: 3, createdAt: 1 } }));
    expect(selectEmaText(store.getState())).toBe('−0.26');
    expect(selectPendingProgress(store.getState())?.fraction).toBe(1);
    expect(selectAdapterText(store.getState())).toBe('v3');
    store.getState().setStatus(status({ ema: { value: -0.0012, count: 16 } }));
    expect(selectEmaText(store.getState())).toBe('0.00');
  });

  it('derived selectors return the same object until their inputs change (else React re-renders forever)', () => {
    const store = createReinStore(fakeClient().client);
    store.getState().setStatus(status());
    store.getState().applyTurn(turn(1));
    store.getState().applyTurn(turn(2));
    const a = store.getState();
    for (const sel of [selectCounts, selectPendingProgress, selectOtherTurns, selectTrainingView] as const) {
      expect(sel(a)).toBe(sel(a));
    }
    const before = selectOtherTurns(a);
    store.getState().applyTurn(turn(3));
    expect(selectOtherTurns(store.getState())).not.toBe(before);
    expect(selectOtherTurns(store.getState()).map((t) => t.id)).toEqual([2, 1]);
  });

  it('firstLines keeps the first lines and marks what it cut', () => {
    expect(firstLines('a\nb\nc', 2)).toEqual({ text: 'a\nb', cut: true });
    expect(firstLines('  one line  ', 2)).toEqual({ text: 'one line', cut: false });
    expect(firstLines('x'.repeat(10), 2, 4)).toEqual({ text: 'xxxx…', cut: true });
    expect(firstLines('a\r\nb', 5)).toEqual({ text: 'a\nb', cut: false });
  });
});
