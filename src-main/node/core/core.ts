// The core service: one Store (one Database) per Core, the verbs of common/api.ts over it, and the events.
// Transports (HTTP, IPC, CLI) are one-line adapters over `call`. Every verb validates its input with
// VERBS[verb].input, runs synchronously against the store (writes are single transactions), and emits its
// events only after the transaction committed.
import { rmSync } from 'node:fs';
import path from 'node:path';
import pkg from '../../../package.json' with { type: 'json' };
import { VERBS, type Actor, type CaptureTurnInput, type EventName, type Events, type VerbName, type VerbOutputs, type VerbParsed } from '../../common/api.ts';
import { describeSettings, isSettingKey, SETTING_KEYS, SETTINGS, type Settings } from '../../common/config.ts';
import type { RatingView, Status } from '../../common/domain.ts';
import { BadInputError, NotAvailableError, NotFoundError, ReinError } from '../../common/errors.ts';
import { parseVerbInput } from '../../common/verb-input.ts';
import { CHAT_SOURCES, voteLabels, versionStats, type ChatSource } from '../../common/chat/arena.ts';
import type { ArenaMatchView, ChatAnswer, ChatConversation } from '../../common/api.ts';
import type { StoredChat } from '../store/chats.ts';
import type { ArenaMatchRow } from '../store/arena.ts';
import { ensureHome, type ReinHome } from '../home.ts';
import { encodeLogprobs, encodeTokens } from '../store/codec.ts';
import { redactCapped, scrubKey, scrubRating, scrubTurn } from '../store/scrub.ts';
import { readSettings } from '../store/settings.ts';
import { exportJsonl, importJsonl } from '../store/jsonl.ts';
import { isBusyError } from '../store/db.ts';
import { type KeyProtector, openCipher } from '../store/keyring.ts';
import { resumeEncryption } from '../store/encryption.ts';
import { Store, type NewTurn } from '../store/store.ts';
import { withRoundTimes } from '../../common/training/estimate.ts';
import { describePresets, resolveTrainingConfig, type TrainingConfig } from '../../common/training/presets.ts';
import { modelShape, resolveModelDir } from '../model-files/base-model.ts';
import { minimumPending } from '../../common/training/schedule.ts';
import { Scheduler, type SchedulerTimers } from '../training/scheduler.ts';
import { tryRewardMapper } from '../training/reward-mapper.ts';
import { createRewardService } from '../training/reward/service.ts';
import { EventHub } from './events.ts';
import { CaptureSpool, unsealSpoolFile } from './spool.ts';
import { SignalRecorder } from './signals.ts';
import { implicitVerbs } from './implicit.ts';
import type { Core } from './types.ts';

export interface CoreOptions {
  home: ReinHome;
  /** Clock in Unix milliseconds (tests pass a fake one). */
  now?: () => number;
  /**
   * The capture server's core (headless.ts): a capture waits at most CAPTURE_WAIT_MS for another process's write lock,
   * then goes to a durable spool that is stored in order once the database is free (core/spool.ts), so the server's
   * one thread never sleeps out the 5 s busy timeout. Only the holder of core.lock may set it: one spool writer.
   */
  spoolCaptures?: boolean;
  /** The training schedule's clock (tests pass a fake one; training.schedule interval and nightly run on it). */
  timers?: SchedulerTimers;
  /** The idle guard of nightly rounds and training.onlyWhenIdle (default: the load average, scheduler.ts machineIdle). */
  machineIdle?: () => boolean;
  /**
   * The setup wizard's verbs (node/system/), which sit above the core: they install integrations and read the capture
   * server's file. The composition root (node/compose.ts) passes them in; a core opened without them answers those
   * verbs with not_available.
   */
  wizard?: (deps: WizardDeps) => WizardHandlers;
  /**
   * Rein's own chat and the arena's answers (serving/chat.ts), which sit above the core: they start the serve stack.
   * The composition root passes them in; a core opened without them answers chat and arenaStart with not_available.
   */
  chat?: (deps: ChatDeps) => ChatService;
  /** The OS keychain (the app's safeStorage), to open an encrypted home without the passphrase (store/keyring.ts). */
  keyProtector?: KeyProtector | null;
}

export interface ChatMessageIn {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface AnswerRequest {
  messages: ChatMessageIn[];
  /** undefined: the active version; 0: the base. */
  version: number | undefined;
  source: ChatSource;
  session: string;
  streamId: string | undefined;
  maxTokens: number;
}

/** Answers a chat through the capture proxy, so each answer is stored as an on-policy turn. */
export interface ChatService {
  answer(req: AnswerRequest): Promise<ChatAnswer>;
  /** Told of every settings change (the core's setSettings): another model or upstream restarts the stack. */
  settingsChanged(changed: Partial<Settings>): void;
  close(): Promise<void>;
}

/** What the chat service gets from the core. */
export interface ChatDeps {
  home: ReinHome;
  core: () => ReinCore;
  store: Store;
  settings: () => Settings;
  modelId: () => string;
  emit: (streamId: string, text: string) => void;
  log?: (line: string) => void;
}

function noChat(): ChatService {
  return {
    answer: () => {
      throw new NotAvailableError('chat', 'this core was opened without the chat service (node/compose.ts composeCore wires it)');
    },
    settingsChanged: () => {},
    close: async () => {},
  };
}

/** What the wizard's verbs get from the core. */
export interface WizardDeps {
  home: ReinHome;
  /** Rein's own list of models (addModel, removeModel, useModel). */
  store: Store;
  settings: () => Settings;
  /** Async: a reward mapper among the values is tried in its sandbox first. */
  setSettings: (values: Record<string, unknown>) => Promise<Settings>;
  env?: NodeJS.ProcessEnv;
}

type WizardVerb = 'detectAgents' | 'detectHardware' | 'discoverModels' | 'addModel' | 'removeModel' | 'planAgent' | 'connectAgent' | 'useModel' | 'useDemoModel' | 'sendTestTurn';
export type WizardHandlers = { [V in WizardVerb]: (input: VerbParsed<V>) => Promise<VerbOutputs[V]> | VerbOutputs[V] };

function noWizard(): WizardHandlers {
  const refuse = (verb: WizardVerb): never => {
    throw new NotAvailableError(verb, 'this core was opened without the setup wizard (node/compose.ts composeCore wires it)');
  };
  return {
    detectAgents: () => refuse('detectAgents'),
    detectHardware: () => refuse('detectHardware'),
    discoverModels: () => refuse('discoverModels'),
    addModel: () => refuse('addModel'),
    removeModel: () => refuse('removeModel'),
    planAgent: () => refuse('planAgent'),
    connectAgent: () => refuse('connectAgent'),
    useModel: () => refuse('useModel'),
    useDemoModel: () => refuse('useDemoModel'),
    sendTestTurn: () => refuse('sendTestTurn'),
  };
}

/** The Core plus its store, for the parts of the core that write runs and adapters (the trainer) and tests. */
export interface ReinCore extends Core {
  readonly store: Store;
  /** The training scheduler (tests wait on `scheduler.idle()`). */
  readonly scheduler: Scheduler;
  settings(): Settings;
  status(): Status;
  /**
   * Rates a turn with an environment's reward (the gym: a step's discounted return) instead of Good/Bad/1-5, with the
   * same events and automatic training check as the `rate` verb. In-process only: no transport exposes it.
   */
  rateReward(turnId: number, reward: number, rater: string): RatingView;
  /**
   * Stops the chat's model server (llama.cpp) and proxy, if a chat started them, and waits until they are closed.
   * Call it before close(): close() alone stops them without waiting, and a process that exits meanwhile may cut
   * llama.cpp off mid-dispose.
   */
  stopChat(): Promise<void>;
}

/** The model whose ratings, EMA and adapters the verbs work on: setting `model.active`, or `default`. */
export const DEFAULT_MODEL_ID = 'default';

/** How far past the server clock a capture's createdAt may lie (clock skew between a hook and the server). Further
 *  would make a turn "the latest" for good, the target of every `/rl good` (issue #21 item 12). */
export const MAX_CREATED_AT_AHEAD_MS = 24 * 3600 * 1000;

/**
 * Export and import take absolute paths only: the server's working folder is wherever it happened to start, so a
 * relative path would write somewhere the user never chose. The CLI resolves against its own cwd before calling.
 */
function absolutePath(verb: string, p: string): string {
  if (!path.isAbsolute(p)) throw new BadInputError(`${verb}: the path must be absolute (start with /), got "${p.slice(0, 200)}"`, 'path');
  return path.resolve(p);
}

type Handlers = { [V in VerbName]: (input: VerbParsed<V>, actor: Actor) => VerbOutputs[V] | Promise<VerbOutputs[V]> };

/** What the verbs share: the store, the scheduler, the settings and status as they are now, and the event hub. */
interface VerbContext {
  home: ReinHome;
  now: () => number;
  store: Store;
  scheduler: Scheduler;
  /** The capture spool of the process holding core.lock (CoreOptions.spoolCaptures), else null. */
  spool: CaptureSpool | null;
  settings(): Settings;
  modelOf(s: Settings): string;
  status(): Status;
  emit<E extends EventName>(event: E, payload: Events[E]): void;
  /** What the user did after each answer (core/signals.ts). */
  signals: SignalRecorder;
}

/** Capturing, rating and browsing turns and ratings. */
function turnVerbs(c: VerbContext) {
  const { now, store, scheduler, spool, settings, modelOf, status, emit, signals } = c;
  function prepareTurn(input: CaptureTurnInput, maxChars: number): NewTurn {
    const at = now();
    if (input.createdAt !== undefined && input.createdAt > at + MAX_CREATED_AT_AHEAD_MS) {
      throw new BadInputError(`captureTurn: createdAt ${input.createdAt} is more than a day past the server clock (${at})`, 'createdAt');
    }
    const text = scrubTurn(
      {
        session: input.session ?? null,
        eventId: input.eventId,
        prompt: input.prompt,
        context: input.context ?? [],
        response: input.response,
        model: input.model ?? null,
        policy: input.policy ?? null,
      },
      maxChars,
    );
    return {
      source: input.source,
      session: text.session,
      eventId: text.eventId,
      createdAt: input.createdAt ?? at,
      prompt: text.prompt,
      context: [...text.context],
      response: text.response,
      model: text.model,
      tokens: input.tokens === undefined ? null : encodeTokens(input.tokens),
      logprobs: input.logprobs === undefined ? null : encodeLogprobs(input.logprobs),
      promptIds: input.promptIds ?? null,
      adapterVersion: input.adapterVersion ?? null,
      policy: text.policy === null ? null : JSON.stringify(text.policy),
      truncated: text.cut,
    };
  }

  return {
    captureTurn: (input, actor) => {
      const s = settings();
      if (s['capture.paused']) {
        throw new ReinError('conflict', `capture is paused (setting capture.paused); turn ${input.source}/${input.eventId} was not stored`, {
          field: 'capture.paused',
        });
      }
      // Rein's own chat and arena are always captured: their answers are what the user came to rate.
      if (!s['capture.agents'].includes(input.source) && !(CHAT_SOURCES as readonly string[]).includes(input.source)) {
        throw new ReinError(
          'conflict',
          `source ${input.source} is not in capture.agents (${s['capture.agents'].join(', ')}); turn ${input.eventId} was not stored`,
          { field: 'capture.agents' },
        );
      }
      const turn = prepareTurn(input, s['capture.maxTextChars']);
      const result = spool === null ? store.captureTurn(turn, actor) : spool.capture(turn, actor);
      // The client's report of an interrupt, kept as a signal on the turn (a spooled turn has no id yet: its report is
      // not kept, the turn is).
      if (input.interrupted !== undefined && result.turn !== null) {
        store.signals.record({ turnId: result.turn.id, kind: 'interrupt', fromTurnId: null, evidence: redactCapped(input.interrupted, 1000).text, score: null, detail: { source: input.source } });
      }
      if (result.created) emit('turnCaptured', result.turn);
      // After turnCaptured, which checks the session's earlier edits: this turn's own are watched from now on.
      if (result.created && result.turn !== null && input.cwd !== undefined && input.context !== undefined) {
        try {
          signals.watchEdits(result.turn, input.context, input.cwd);
        } catch (e) {
          console.error('rein: could not watch the files a captured turn edited:', e);
        }
      }
      return result;
    },

    sessionPrompted: (input) => {
      const s = settings();
      // Paused capture records nothing; a client not captured has no watched edits to check.
      if (s['capture.paused'] || !s['capture.agents'].includes(input.source)) return { reverts: 0 };
      // Sessions are stored redacted (store/scrub.ts), and watched under the stored one.
      return { reverts: signals.prompted(input.source, scrubKey(input.session), now()) };
    },

    rate: (input, actor) => {
      const s = settings();
      const modelId = modelOf(s);
      // Turns are stored under their redacted session (store/scrub.ts), so they are looked up by it.
      const session = input.session === undefined ? undefined : scrubKey(input.session);
      const text = scrubRating({ correction: input.correction ?? null, tags: input.tags ?? [], comment: input.comment ?? null, rater: input.rater ?? 'user' });
      const pick = (): number => {
        if (input.turnId !== undefined) {
          if (session !== undefined) {
            const t = store.mustTurnSummary(input.turnId);
            if (t.session !== session) {
              throw new BadInputError(`rate: turn ${input.turnId} is not in session ${input.session}`, 'session');
            }
          }
          return input.turnId;
        }
        const hours = s['capture.expireHours'];
        const cutoff = hours > 0 ? now() - hours * 3_600_000 : Number.MIN_SAFE_INTEGER;
        if (hours > 0) store.expireTurns(cutoff);
        const id = store.newestRateable(session ?? null, cutoff);
        if (id === null) {
          const scope = input.session === undefined ? '' : ` in session ${input.session}`;
          const age = hours > 0 ? ` (turns can be rated for ${hours} hours)` : '';
          throw new NotFoundError(`no unrated turn to rate${scope}${age}`, { session: input.session ?? null });
        }
        return id;
      };
      const { rating, replaced } = store.rate(
        pick,
        modelId,
        { value: input.value, ...text },
        actor,
      );
      const st = status();
      for (const r of replaced) emit('ratingUndone', { rating: r, status: st });
      emit('ratingAdded', { rating, status: st });
      emit('turnUpdated', store.mustTurnSummary(rating.turnId));
      scheduler.maybeAutoStart();
      return { rating, status: st };
    },

    undo: (input, actor) => {
      const out = store.undo({ session: input.session === undefined ? null : scrubKey(input.session), turnId: input.turnId ?? null }, actor);
      const st = status();
      if (out !== null) {
        emit('ratingUndone', { rating: out.undone, status: st });
        if (out.restored) emit('ratingAdded', { rating: out.restored, status: st });
        emit('turnUpdated', store.mustTurnSummary(out.undone.turnId));
      }
      return { undone: out?.undone ?? null, restored: out?.restored ?? null, status: st };
    },

    ignoreTurn: (input, actor) => {
      const { turn, changed } = store.ignoreTurn(input.turnId, actor);
      if (changed) emit('turnUpdated', turn);
      return { turn };
    },

    listTurns: (input) => store.listTurns(input.session === undefined ? input : { ...input, session: scrubKey(input.session) }),
    getTurn: (input) => store.getTurn(input.turnId),

    deleteTurn: (input, actor) => {
      const { deleted } = store.deleteTurn(input.turnId, actor);
      if (deleted) emit('turnDeleted', { turnId: input.turnId, status: status() });
      return { deleted };
    },

    listRatings: (input) => store.listRatings(input),
    listTags: () => store.listTags(),

    deleteRating: (input, actor) => {
      const removed = store.deleteRating(input.ratingId, actor);
      if (removed !== null) {
        emit('ratingDeleted', { ratingId: removed.id, status: status() });
        emit('turnUpdated', store.mustTurnSummary(removed.turnId));
      }
      return { deleted: removed !== null };
    },

    emaHistory: (input) => store.emaHistory(modelOf(settings()), input.limit),
  } satisfies Partial<Handlers>;
}

/** Reading and writing settings (validated against common/config.ts). */
function settingsVerbs(c: VerbContext) {
  const { store, scheduler, settings, emit } = c;
  return {
    getSettings: () => settings(),
    describeSettings: () => describeSettings(),

    setSettings: async (input, actor) => {
      const values: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(input.values)) {
        if (!isSettingKey(k)) {
          const name = k.length > 100 ? `${k.slice(0, 100)}…` : k;
          throw new BadInputError(`setSettings: unknown setting ${name} (known: ${SETTING_KEYS.join(', ')})`, name);
        }
        const parsed = SETTINGS[k].schema.safeParse(v);
        if (!parsed.success) {
          const issue = parsed.error.issues[0]!;
          const sub = issue.path.length > 0 ? `.${issue.path.map(String).join('.')}` : '';
          // The value is echoed only when it is a short scalar: an error never carries unbounded input back.
          const echo = typeof v === 'number' || typeof v === 'boolean' || (typeof v === 'string' && v.length <= 200);
          throw new BadInputError(`setSettings: ${k}${sub}: ${issue.message}`, k, echo ? { value: v } : undefined);
        }
        values[k] = parsed.data;
      }
      // A reward mapper is saved only once it ran on the user's recent ratings without an error; a refused one
      // leaves the saved mapping (the default, or the last good mapper) in place.
      const mapper = values['training.rewardMapper'];
      if (typeof mapper === 'string') {
        if (mapper.trim() === '') values['training.rewardMapper'] = null;
        else await tryRewardMapper(store, mapper);
      }
      if (Object.keys(values).length > 0) {
        store.writeSettings(values, actor);
        emit('settingsChanged', values as Partial<Settings>);
        // A new schedule, threshold or model may make a round due now, or move the wake-up.
        if (Object.keys(values).some((k) => k.startsWith('training.') || k === 'model.active')) scheduler.maybeAutoStart();
      }
      return settings();
    },
  } satisfies Partial<Handlers>;
}

/** Rounds, adapter versions, presets, rollback and reset. */
function trainingVerbs(c: VerbContext) {
  const { home, store, scheduler, settings, modelOf, status, emit } = c;
  function removeAdapterDirs(paths: string[]): void {
    const root = path.resolve(home.adaptersDir) + path.sep;
    for (const p of paths) {
      const abs = path.resolve(p);
      // Only ever delete inside the home's adapters folder, whatever a row says.
      if (abs.startsWith(root)) rmSync(abs, { recursive: true, force: true });
    }
  }

  return {
    listRuns: (input) => store.runs.list(modelOf(settings()), input.limit),
    listAdapters: () => store.adapters.list(modelOf(settings())),

    startTraining: (input) => ({ runId: scheduler.start('manual', input.fromVersion, input.gate).id }),
    cancelTraining: () => ({ cancelled: scheduler.cancel() }),

    describePresets: (input) => {
      const table =
        input.activeParams !== undefined
          ? describePresets({ activeParams: input.activeParams, totalParams: input.totalParams ?? input.activeParams, moe: input.moe ?? false })
          : describePresets(modelShape(resolveModelDir(store, modelOf(settings()), 'describePresets')));
      const s = settings();
      let custom: TrainingConfig = table.presets.balanced;
      try {
        custom = resolveTrainingConfig('custom', table.shape, s['training.custom']);
      } catch {
        // A custom field an older build saved that no longer validates: the round would say so; the estimate uses balanced.
      }
      return withRoundTimes(table, custom, input.pending ?? status().threshold);
    },

    rollback: (input, actor) => {
      const modelId = modelOf(settings());
      const { active, previous } = store.rollback(modelId, input.version, actor);
      if (previous !== null && previous.id !== active?.id) {
        emit('adapterChanged', { modelId, version: previous.version, status: previous.status });
      }
      if (active !== null && active.id !== previous?.id) emit('adapterChanged', { modelId, version: active.version, status: 'active' });
      return { active, status: status() };
    },

    planReset: () => store.planReset(modelOf(settings())),

    reset: (_input, actor) => {
      const modelId = modelOf(settings());
      const { ratings, runs, adapters, turnIds } = store.reset(modelId, actor);
      removeAdapterDirs(adapters.map((a) => a.path));
      for (const a of adapters.filter((x) => x.status === 'active')) {
        emit('adapterChanged', { modelId, version: a.version, status: 'inactive' });
      }
      // Their ratings are gone: every open list shows these turns unrated again, without a reload.
      for (const id of turnIds) {
        const t = store.turnSummary(id);
        if (t) emit('turnUpdated', t);
      }
      return { ratings, runs, adapters: adapters.length };
    },

    testRewardMapper: (input) => tryRewardMapper(store, input.source, input.limit),
  } satisfies Partial<Handlers>;
}

/** Export and import of turns and ratings as JSONL. */
function dataVerbs(c: VerbContext) {
  const { store, settings, status, emit } = c;
  return {
    exportData: (input, actor) => exportJsonl(store, absolutePath('exportData', input.path), actor),

    importData: (input, actor) => {
      const s = settings();
      const result = importJsonl(store, absolutePath('importData', input.path), actor, s['capture.maxTextChars']);
      for (const id of result.turnIds) emit('turnCaptured', store.mustTurnSummary(id));
      if (result.ratingIds.length > 0) {
        const st = status();
        for (const r of store.ratingsById(result.ratingIds)) emit('ratingAdded', { rating: r, status: st });
      }
      return { turns: result.turns, ratings: result.ratings, skipped: result.skipped, bad: result.bad, badLines: result.badLines };
    },
  } satisfies Partial<Handlers>;
}

/** Rein's own chat and the blind arena: answers through the capture proxy (serving/chat.ts), votes as ratings on each side. */
function chatVerbs(c: VerbContext, chat: ChatService, rate: (input: VerbParsed<'rate'>, actor: Actor) => VerbOutputs['rate']) {
  const { now, store, settings, modelOf } = c;

  /** An arena match as the client sees it: the versions stay hidden until the vote. */
  function matchView(r: ArenaMatchRow): ArenaMatchView {
    const side = (turnId: number, version: number) => ({ turnId, text: store.turnSummary(turnId) === null ? '' : store.getTurn(turnId).response, version: r.vote === null ? null : version });
    return { id: r.id, prompt: r.prompt, a: side(r.turn_a, r.version_a), b: side(r.turn_b, r.version_b), vote: r.vote, createdAt: r.created_at };
  }

  /** A kept conversation with each answer's live rating, read from its turn (ratings are not kept twice). */
  function withRatings(c: StoredChat): ChatConversation {
    return { ...c, messages: c.messages.map((m) => ({ ...m, rating: m.turnId == null ? null : store.liveRating(m.turnId) })) };
  }

  return {
    chat: (input) =>
      chat.answer({
        messages: input.messages,
        version: input.version,
        source: 'chat',
        session: input.session ?? `chat-${now()}`,
        streamId: input.streamId,
        maxTokens: input.maxTokens,
      }),

    saveChat: (input, actor) => store.chats.save(input, actor),
    listChats: (input) => store.chats.list(input.limit),
    getChat: (input) => withRatings(store.chats.get(input.id)),
    deleteChat: (input, actor) => ({ deleted: store.chats.delete(input.id, actor) }),

    arenaStart: async (input, actor) => {
      const modelId = modelOf(settings());
      let pair = input.versions;
      if (pair === undefined) {
        const active = store.adapters.active(modelId);
        if (active === null) {
          throw new NotAvailableError('arenaStart', 'no trained version is active, so there is nothing to compare with the base yet: train a round first, or pick two versions');
        }
        pair = [active.version, active.parentVersion ?? 0];
      }
      if (pair[0] === pair[1]) throw new BadInputError(`arenaStart: pick two different versions (both are v${pair[0]})`, 'versions');
      // Blind: which version is A is a coin flip, and the client learns the versions only with the vote.
      const [va, vb] = Math.random() < 0.5 ? pair : [pair[1], pair[0]];
      const messages = [...(input.system ? [{ role: 'system' as const, content: input.system }] : []), { role: 'user' as const, content: input.prompt }];
      const session = `arena-${now()}-${Math.random().toString(36).slice(2, 8)}`;
      const one = (version: number, side: 'a' | 'b') =>
        chat.answer({ messages, version, source: 'arena', session, streamId: input.streamId === undefined ? undefined : `${input.streamId}:${side}`, maxTokens: input.maxTokens });
      const a = await one(va, 'a');
      const b = await one(vb, 'b');
      for (const x of [a, b]) if (x.turnId === null) throw new ReinError('conflict', `arenaStart: an answer was not stored (${x.note ?? 'unknown reason'}), so it cannot be voted on`);
      const row = store.arena.create({ modelId, prompt: input.prompt, turnA: a.turnId!, turnB: b.turnId!, versionA: a.version ?? va, versionB: b.version ?? vb }, actor);
      return matchView(row);
    },

    arenaVote: (input, actor) => {
      const row = store.arena.vote(input.matchId, input.vote, input.rater ?? 'user', actor);
      const labels = voteLabels(input.vote);
      const ratings = [];
      for (const [turnId, value] of [[row.turn_a, labels.a], [row.turn_b, labels.b]] as const) {
        if (value !== null) ratings.push(rate({ turnId, value, rater: 'arena' }, actor));
      }
      return { match: matchView(row), ratings: ratings.map((r) => r.rating) };
    },

    versionStats: () => {
      const modelId = modelOf(settings());
      const adapters = [...store.adapters.list(modelId)].reverse();
      const baseActive = !adapters.some((a) => a.status === 'active');
      const versions = [
        { version: 0, parentVersion: null, createdAt: null, status: baseActive ? 'active' : 'base' },
        ...adapters.map((a) => ({ version: a.version, parentVersion: a.parentVersion, createdAt: a.createdAt, status: a.status })),
      ];
      return versionStats(versions, store.arena.voted(modelId), store.arena.goodCounts(modelId));
    },

  } satisfies Partial<Handlers>;
}

export function createCore(opts: CoreOptions): ReinCore {
  const home = ensureHome(opts.home);
  const now = opts.now ?? Date.now;
  // An encrypted home opens only with its key: the keychain, or REIN_PASSPHRASE(_FILE); otherwise this throws naming them.
  const store = new Store(home.dbPath, now, openCipher(home, { protector: opts.keyProtector ?? null }));
  // An enable, rotate or disable that was killed part-way is finished before anything reads or writes a row.
  resumeEncryption(home, store, (cipher) => unsealSpoolFile(home.captureSpoolPath, cipher));
  const hub = new EventHub((event, err) => {
    // A subscriber's bug must not undo or fail a committed write; report it where the core's logs go.
    console.error(`rein: a ${event} listener threw:`, err);
  });
  // What the user did after each answer (core/signals.ts); before the spool, which may store turns once it runs.
  const signals = new SignalRecorder({ store, modelId: () => modelOf(settings()) });
  const spool = opts.spoolCaptures
    ? new CaptureSpool({
        store,
        file: home.captureSpoolPath,
        stored: (r) => {
          if (r.created) emit('turnCaptured', r.turn);
        },
      })
    : null;
  let closed = false;
  const scheduler = new Scheduler({
    home,
    store,
    modelId: () => modelOf(settings()),
    settings: () => settings(),
    emit: (event, payload) => emit(event, payload),
    timers: opts.timers ?? (opts.now ? { now: opts.now, setTimeout: (fn, ms) => setTimeout(fn, ms).unref(), clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout) } : undefined),
    machineIdle: opts.machineIdle,
  });

  // Validated against common/config.ts; a stored value that no longer validates reads as its default (store/settings.ts).
  function settings(): Settings {
    return readSettings(store);
  }

  const modelOf = (s: Settings): string => s['model.active'] ?? DEFAULT_MODEL_ID;

  function status(): Status {
    const s = settings();
    const modelId = modelOf(s);
    const c = store.counts(modelId);
    const active = store.adapters.active(modelId);
    const ema = store.emaValue(modelId);
    return {
      version: pkg.version,
      home: home.dir,
      model: { id: modelId, configured: s['model.active'] !== null },
      activeAdapter: active === null ? null : { version: active.version, createdAt: active.createdAt },
      ratings: c.ratings,
      pending: c.pending,
      parked: c.parked,
      // The count the next automatic round waits for: training.threshold, or the interval/nightly schedule's minimum.
      threshold: minimumPending(s['training.schedule'], s['training.threshold']),
      ema: ema === null ? null : { value: ema, count: c.ratings.total },
      turns: c.turns,
      training: { state: c.runningRunId === null ? 'idle' : 'running', runId: c.runningRunId },
      rejected: store.runs.lastRejected(modelId),
      capture: { paused: s['capture.paused'] },
    };
  }

  function emit<E extends EventName>(event: E, payload: Events[E]): void {
    // Every stored turn, from a client or the spool, is a reaction to its session's previous answer (core/signals.ts).
    // Recorded before listeners hear of the turn; a failure here never undoes or fails the capture.
    if (event === 'turnCaptured') {
      try {
        signals.captured(payload as Events['turnCaptured']);
      } catch (e) {
        console.error('rein: could not record the signals of a captured turn:', e);
      }
    }
    hub.emit(event, payload);
    // The chat's serve stack restarts for another model or upstream (not a hub listener: it would count as a leak).
    if (event === 'settingsChanged') chat.settingsChanged(payload as Partial<Settings>);
  }

  const chat = (opts.chat ?? noChat)({
    home,
    core: () => core,
    store,
    settings,
    modelId: () => modelOf(settings()),
    emit: (streamId, text) => emit('chatToken', { streamId, text }),
  });

  // The reward model's verbs (training/reward/service.ts); it loads the engine only when a turn is scored.
  const reward = createRewardService({ store, settings, modelId: () => modelOf(settings()) });

  const verbs: VerbContext = { home, now, store, scheduler, spool, settings, modelOf, status, emit, signals };
  const handlers: Handlers = {
    status: () => status(),

    ...turnVerbs(verbs),
    ...settingsVerbs(verbs),
    ...trainingVerbs(verbs),
    ...dataVerbs(verbs),

    rewardStatus: () => reward.rewardStatus(),
    trainRewardModel: () => reward.trainRewardModel(),
    rewardAsk: (input) => reward.rewardAsk(input.turnId),

    ...chatVerbs(verbs, chat, (input, actor) => handlers.rate(input, actor) as VerbOutputs['rate']),
    ...implicitVerbs(store, (input, actor) => handlers.rate(input, actor) as VerbOutputs['rate']),

    // The setup wizard's verbs: node/system/ (agents, hardware, models, the demo model, the test turn).
    ...(opts.wizard ?? noWizard)({ home, store, settings, setSettings: (values) => Promise.resolve(handlers.setSettings({ values }, 'system')) }),
  };

  scheduler.recover();

  const core: ReinCore = {
    home,
    scheduler,
    store,
    settings,
    status,
    rateReward(turnId, reward, rater) {
      if (closed) throw new ReinError('internal', `the core for ${home.dir} is closed`);
      const rating = store.rateReward(turnId, modelOf(settings()), reward, rater, 'system');
      const st = status();
      emit('ratingAdded', { rating, status: st });
      emit('turnUpdated', store.mustTurnSummary(turnId));
      scheduler.maybeAutoStart();
      return rating;
    },
    async call<V extends VerbName>(verb: V, input: unknown, actor: Actor): Promise<VerbOutputs[V]> {
      if (closed) throw new ReinError('internal', `the core for ${home.dir} is closed`);
      if (typeof verb !== 'string' || !Object.hasOwn(VERBS, verb)) {
        throw new BadInputError(`unknown verb ${String(verb)}`, 'verb');
      }
      const handler = handlers[verb] as (i: unknown, a: Actor) => VerbOutputs[V];
      try {
        return await handler(parseVerbInput(verb, input ?? {}), actor);
      } catch (e) {
        // The transaction that met the lock was rolled back: a transient refusal (503), not an internal error.
        if (isBusyError(e)) throw new ReinError('busy', `${verb}: the database is busy (another process holds its write lock); retry`, { cause: e });
        throw e;
      }
    },
    stopChat: () => chat.close(),
    on: (event, fn) => hub.on(event, fn),
    listenerCount: () => hub.count(),
    close() {
      if (closed) return;
      closed = true;
      scheduler.close();
      void chat.close();
      void reward.close();
      spool?.close();
      hub.clear();
      store.close();
    },
  };
  return core;
}
