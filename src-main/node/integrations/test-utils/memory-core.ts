// A small in-memory Core for the integration tests, following the verb contract in common/api.ts (inputs are
// validated with the real VERBS schemas; captureTurn dedupes on (source, eventId); rate without a turnId takes the
// newest unrated turn of the session). It stands in for the SQLite core only where that is not importable yet;
// the handlers under test see nothing but the `Core` interface.
import { VERBS } from '../../../common/api.ts';
import { CHAT_SOURCES } from '../../../common/chat/arena.ts';
import type { Actor, EventName, Events, VerbName, VerbOutput, VerbParsed } from '../../../common/api.ts';
import type { RatingView, Status, Turn, TurnSummary } from '../../../common/domain.ts';
import { BadInputError, NotAvailableError, NotFoundError } from '../../../common/errors.ts';
import { rewardOf } from '../../../common/rewards.ts';
import type { Core } from '../../core/types.ts';
import { resolveHome } from '../../home.ts';

export interface StoredTurn extends VerbParsed<'captureTurn'> {
  id: number;
  createdAt: number;
}

export interface MemoryCore extends Core {
  turns: StoredTurn[];
  ratings: RatingView[];
  calls: { verb: VerbName; actor: Actor }[];
}

export function createMemoryCore(opts: { threshold?: number } = {}): MemoryCore {
  const turns: StoredTurn[] = [];
  const ratings: RatingView[] = [];
  const calls: { verb: VerbName; actor: Actor }[] = [];
  const threshold = opts.threshold ?? 32;
  const listeners = new Set<{ event: EventName; fn: (p: never) => void }>();

  const live = (turnId: number) => ratings.filter((r) => r.turnId === turnId && !r.undone);
  const summary = (t: StoredTurn): TurnSummary => ({
    id: t.id,
    source: t.source,
    session: t.session ?? null,
    eventId: t.eventId,
    createdAt: t.createdAt,
    model: t.model ?? null,
    promptPreview: t.prompt.slice(0, 200),
    responsePreview: t.response.slice(0, 200),
    state: live(t.id).length > 0 ? 'rated' : 'unrated',
    rating: live(t.id).at(-1) ?? null,
    onPolicy: t.tokens !== undefined,
  });
  const status = (): Status => {
    const active = ratings.filter((r) => !r.undone);
    return {
      version: 'test',
      home: '/nonexistent',
      model: { id: 'test-model', configured: true },
      activeAdapter: null,
      ratings: {
        good: active.filter((r) => r.kind === 'good').length,
        bad: active.filter((r) => r.kind === 'bad').length,
        scaled: active.filter((r) => r.kind === 'scale').length,
        total: active.length,
      },
      pending: active.filter((r) => r.runId === null).length,
      parked: 0,
      threshold,
      ema: null,
      turns: {
        total: turns.length,
        unrated: turns.filter((t) => live(t.id).length === 0).length,
        toRate: turns.filter((t) => live(t.id).length === 0 && !(CHAT_SOURCES as readonly string[]).includes(t.source)).length,
      },
      training: { state: 'idle', runId: null },
      capture: { paused: false },
      rejected: null,
    };
  };

  const impl: Partial<{ [V in VerbName]: (input: VerbParsed<V>) => VerbOutput<V> }> = {
    status,
    captureTurn(input) {
      const existing = turns.find((t) => t.source === input.source && t.eventId === input.eventId);
      if (existing) return { turn: summary(existing), created: false };
      const t: StoredTurn = { ...input, id: turns.length + 1, createdAt: input.createdAt ?? Date.now() };
      turns.push(t);
      return { turn: summary(t), created: true };
    },
    // The one-shot /rl fallback (shared/rl.ts RlTargets) reads a turn's state through getTurn.
    getTurn(input): Turn {
      const t = turns.find((x) => x.id === input.turnId);
      if (!t) throw new NotFoundError(`no turn ${input.turnId}`);
      const { promptPreview: _p, responsePreview: _r, ...rest } = summary(t);
      return {
        ...rest,
        prompt: t.prompt,
        response: t.response,
        context: t.context ?? [],
        tokens: t.tokens ?? null,
        logprobs: t.logprobs ?? null,
        adapterVersion: t.adapterVersion ?? null,
        truncated: false,
      };
    },
    rate(input) {
      let turn: StoredTurn | undefined;
      if (input.turnId !== undefined) {
        turn = turns.find((t) => t.id === input.turnId);
        if (!turn) throw new NotFoundError(`no turn ${input.turnId}`);
      } else {
        turn = [...turns].reverse().find((t) => (input.session === undefined || t.session === input.session) && live(t.id).length === 0);
        if (!turn) throw new NotFoundError('no unrated turn to rate');
      }
      const { kind, reward, scale } = rewardOf(input.value);
      const rating: RatingView = {
        id: ratings.length + 1,
        turnId: turn.id,
        kind,
        value: reward,
        scale,
        correction: input.correction ?? null,
        tags: input.tags ?? [],
        comment: input.comment ?? null,
        rater: input.rater ?? 'you',
        modelId: 'test-model',
        createdAt: Date.now(),
        undone: false,
        runId: null,
        lastRound: null,
        parked: null,
      };
      ratings.push(rating);
      return { rating, status: status() };
    },
    undo(input) {
      const r = [...ratings].reverse().find((x) => !x.undone && (input.session === undefined || turns.find((t) => t.id === x.turnId)?.session === input.session));
      if (r) r.undone = true;
      return { undone: r ?? null, restored: null, status: status() };
    },
  };

  return {
    home: resolveHome({ REIN_HOME: '/nonexistent/rein-test-home' }),
    turns,
    ratings,
    calls,
    async call<V extends VerbName>(verb: V, input: unknown, actor: Actor): Promise<VerbOutput<V>> {
      calls.push({ verb, actor });
      const parsed = VERBS[verb].input.safeParse(input);
      if (!parsed.success) throw new BadInputError(`${verb}: ${parsed.error.issues[0]?.message}`, parsed.error.issues[0]?.path.join('.'));
      const fn = impl[verb] as ((i: unknown) => VerbOutput<V>) | undefined;
      if (!fn) throw new NotAvailableError(verb, 'not part of the in-memory test core');
      return fn(parsed.data);
    },
    on<E extends EventName>(event: E, fn: (payload: Events[E]) => void) {
      const entry = { event, fn: fn as (p: never) => void };
      listeners.add(entry);
      return () => listeners.delete(entry);
    },
    listenerCount: () => listeners.size,
    close() {},
  };
}
