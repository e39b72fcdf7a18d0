// The API contract: one typed map of verbs and one of events. The preload (IPC), the HTTP transport
// (`POST /api/<verb>`, events over SSE at `/api/events`), the CLI and the renderer's services all derive
// from this file. Every verb's input is validated against its schema at each boundary.
import { z } from 'zod';
import type {
  AdapterView,
  EmaPoint,
  Page,
  RatingKind,
  RatingView,
  RewardAsk,
  RewardModelView,
  RewardStatus,
  RunView,
  Status,
  TrainingProgress,
  Turn,
  TurnSummary,
} from './domain.ts';
import type { SettingDescription, Settings } from './config.ts';
import type { PresetTable } from './training/presets.ts';
import type { ArenaVote, VersionStats } from './chat/arena.ts';
import { ChatMessage } from './chat/conversation.ts';
import type { ChatSummary } from './chat/conversation.ts';
import { AgentId } from './system.ts';
import type { AgentConnectResult, AgentInfo, AgentPlan, HardwareInfo, LocalModel, TestTurnResult } from './system.ts';
import type { Signal } from './implicit/signals.ts';
import type { WeakLabel } from './implicit/reader.ts';

const id = z.number().int().positive();
const text = z.string();

export const ContextMessageSchema = z.looseObject({
  role: z.string().min(1).max(64),
  content: z.string(),
  name: z.string().max(256).optional(),
});

/** A generic captured turn (`POST /v1/turns` and the `captureTurn` verb). */
/**
 * What a turn's behaviour logprobs μ are the logprobs of (migration 0002): the model (its id, as ratings name it)
 * that tokenised and sampled the reply, and the temperature and top_p of the distribution each token was drawn from.
 * `weights`: the weights identity of the file that sampled it (node/model-files/weights-id.ts), when the server said;
 * turns stored before it was recorded, and turns from servers that do not say, have none.
 */
export const TurnPolicy = z.strictObject({
  modelId: z.string().min(1).max(4096),
  temperature: z.number().finite().min(0),
  topP: z.number().finite().min(0).max(1),
  weights: z.string().regex(/^[0-9a-f]{64}$/, '64 lowercase hex digits').optional(),
});
export type TurnPolicy = z.infer<typeof TurnPolicy>;

/** The client a turn came from (`claude-code`, `codex`, …). */
const SourceName = z.string().min(1).max(64).regex(/^[a-z0-9][a-z0-9._-]*$/, 'lowercase letters, digits, . _ -');

export const CaptureTurnInput = z
  .strictObject({
    source: SourceName,
    session: z.string().min(1).max(512).optional(),
    eventId: z.string().min(1).max(512),
    prompt: text,
    context: z.array(ContextMessageSchema).max(10_000).optional(),
    response: text,
    model: z.string().min(1).max(256).optional(),
    /** Sampled response token ids (on-policy turns). */
    tokens: z.array(z.number().int().nonnegative()).max(1_000_000).optional(),
    /** Behaviour logprobs mu of `tokens`, same length. */
    logprobs: z.array(z.number().finite().max(0)).max(1_000_000).optional(),
    /**
     * The token ids the model server consumed before it sampled `tokens`: its whole rendered prompt (system prompt,
     * tool declarations, history, tool results and the prompt), as it reported them (Rein's own model server does, on
     * `return_token_ids`). A round conditions π on exactly these; without them it renders the chat again from the text.
     */
    promptIds: z.array(z.number().int().nonnegative().max(0xffff_ffff)).max(1_000_000).optional(),
    adapterVersion: z.number().int().nonnegative().optional(),
    /**
     * What `logprobs` are the logprobs of: the model (ratings' model id) that tokenised and sampled the reply, and
     * the temperature and top_p it was drawn at; each logprob is that of the tempered, truncated distribution. A
     * turn without it trains as off-policy text.
     */
    policy: TurnPolicy.optional(),
    createdAt: z.number().int().positive().optional(),
    /**
     * The client reported that the user interrupted this answer (Claude Code's transcript line "[Request interrupted
     * by user]"): the event as the client wrote it. Stored as an `interrupt` signal on the turn, the evidence of a
     * weak label (common/implicit).
     */
    interrupted: z.string().min(1).max(1000).optional(),
    /**
     * The client's working directory for this turn (a hook's `cwd`, or the one the proxy reads from the agent's
     * environment block). Not stored: the files the turn's Edit calls changed inside it are hashed, and one put back
     * as it was before the edit at the session's next prompt is a `revert` signal on this turn (node/core/edit-watch.ts).
     */
    cwd: z.string().min(1).max(4096).optional(),
  })
  .refine((t) => (t.tokens === undefined) === (t.logprobs === undefined), {
    message: 'tokens and logprobs come together',
    path: ['logprobs'],
  })
  .refine((t) => t.policy === undefined || t.tokens !== undefined, {
    message: 'policy describes tokens and logprobs, which are missing',
    path: ['policy'],
  })
  .refine((t) => t.promptIds === undefined || t.tokens !== undefined, {
    message: 'promptIds are the context of tokens, which are missing',
    path: ['promptIds'],
  })
  .refine((t) => t.tokens === undefined || t.tokens.length === t.logprobs?.length, {
    message: 'logprobs must have one entry per token',
    path: ['logprobs'],
  });
export type CaptureTurnInput = z.infer<typeof CaptureTurnInput>;

/** The longest text of each of a rating's fields (an import caps what it reads from a file to the same). */
export const RATING_LIMITS = { correction: 1_000_000, tag: 64, tags: 32, comment: 10_000, rater: 128 } as const;

export const RateInput = z.strictObject({
  /** The turn to rate; when absent, the newest rateable turn (of `session` when given). */
  turnId: id.optional(),
  session: z.string().min(1).max(512).optional(),
  value: z.union([z.literal('good'), z.literal('bad'), z.number().int().min(1).max(5)]),
  correction: z.string().min(1).max(RATING_LIMITS.correction).optional(),
  tags: z.array(z.string().min(1).max(RATING_LIMITS.tag)).max(RATING_LIMITS.tags).optional(),
  comment: z.string().max(RATING_LIMITS.comment).optional(),
  rater: z.string().min(1).max(RATING_LIMITS.rater).optional(),
});
export type RateInput = z.infer<typeof RateInput>;

const Empty = z.strictObject({});

/** Names a stream of `chatToken` events: the caller picks it, so it can listen before it calls. */
const StreamId = z.string().min(1).max(128).regex(/^[A-Za-z0-9._:-]+$/, 'letters, digits, . _ : -');
const MaxTokens = z.number().int().min(1).max(8192).default(512);
/** An adapter version of the active model; 0 is the base (the adapter off). */
const VersionNumber = z.number().int().nonnegative();

export const ChatInput = z.strictObject({
  /** The conversation so far: an optional system prompt first, then turns ending with the user's. */
  messages: z
    .array(z.strictObject({ role: z.enum(['system', 'user', 'assistant']), content: z.string().max(1_000_000) }))
    .min(1)
    .max(500)
    .refine((m) => m[m.length - 1]!.role === 'user', { message: 'the last message must be the user\'s' }),
  /** Which version answers: absent = the active one, 0 = the base. */
  version: VersionNumber.optional(),
  /** Turns of one conversation share it (the Ratings screen groups by it). */
  session: z.string().min(1).max(512).optional(),
  streamId: StreamId.optional(),
  maxTokens: MaxTokens,
});
export type ChatInput = z.infer<typeof ChatInput>;

export const ArenaStartInput = z.strictObject({
  prompt: z.string().min(1).max(1_000_000),
  system: z.string().max(100_000).optional(),
  /** The two versions (0 = base); absent: the active version against its parent. */
  versions: z.tuple([VersionNumber, VersionNumber]).optional(),
  /** Tokens stream as `chatToken` events of `<streamId>:a` and `<streamId>:b`. */
  streamId: StreamId.optional(),
  maxTokens: MaxTokens,
});

export const VERBS = {
  status: { input: Empty, help: 'Active adapter, ratings, pending count, EMA and the next training threshold.' },
  captureTurn: { input: CaptureTurnInput, help: 'Store a captured turn (deduplicated per source and event id).' },
  rate: { input: RateInput, help: 'Rate a turn good, bad or 1-5, with an optional correction, tags and comment.' },
  undo: {
    input: z.strictObject({ session: z.string().min(1).max(512).optional(), turnId: id.optional() }),
    help: 'Undo the newest rating (of a turn, of a session, or globally); a rating that replaced another restores it.',
  },
  ignoreTurn: { input: z.strictObject({ turnId: id }), help: 'Mark a turn as ignored (popup dismissed).' },
  listTurns: {
    input: z.strictObject({
      limit: z.number().int().min(1).max(1000).default(50),
      offset: z.number().int().min(0).default(0),
      source: z.string().max(64).optional(),
      session: z.string().max(512).optional(),
      state: z.enum(['unrated', 'rated', 'ignored', 'expired']).optional(),
      search: z.string().max(500).optional(),
      since: z.number().int().optional(),
      until: z.number().int().optional(),
      /** Only the turns the Rate screen asks about: not the answers of Rein's own Chat and Arena, rated on their screens. */
      rateInbox: z.boolean().optional(),
    }),
    help: "Captured turns, newest first (rateInbox: only those the Rate screen asks about, not Rein's own Chat and Arena answers).",
  },
  getTurn: { input: z.strictObject({ turnId: id }), help: 'One turn with its full text and context.' },
  deleteTurn: { input: z.strictObject({ turnId: id }), help: 'Delete a turn and its ratings.' },
  sessionPrompted: {
    input: z.strictObject({ source: SourceName, session: z.string().min(1).max(512) }),
    help: "The user submitted a new prompt in a session (a hook's UserPromptSubmit, or a proxied request with a new prompt): the files the session's last turn edited are checked now, before the agent acts on the prompt, and one put back as it was before the edit is a revert signal on that turn.",
  },
  turnSignals: {
    input: z.strictObject({ turnId: id, threshold: z.number().min(0).max(1).optional() }),
    help: "What the user did after a turn's answer (the next prompt, a re-ask, an interrupt, a reverted edit, a test run that contradicts it) and the weak label Rein reads from it, with the rule and the words or event that fired it.",
  },
  weakLabels: {
    input: z.strictObject({ limit: z.number().int().min(1).max(200).default(20), threshold: z.number().min(0).max(1).optional() }),
    help: 'Unrated turns with a weak label to confirm, newest first: the label, its rule and the sentence that explains it.',
  },
  confirmWeakLabel: {
    input: z.strictObject({ turnId: id, flip: z.boolean().default(false), threshold: z.number().min(0).max(1).optional() }),
    help: "Rate a turn as its weak label says (flip: the other way). The rating's rater names the rule; a turn already rated is refused.",
  },
  dismissWeakLabel: { input: z.strictObject({ turnId: id }), help: "Dismiss a turn's weak label: its signals stay as evidence and suggest nothing." },
  listRatings: {
    input: z.strictObject({
      limit: z.number().int().min(1).max(1000).default(50),
      offset: z.number().int().min(0).default(0),
      kind: z.enum(['good', 'bad', 'scale']).optional(),
      source: z.string().max(64).optional(),
      trained: z.boolean().optional(),
      /** Text in the rated turn's prompt or answer, or in the rating's comment. */
      search: z.string().max(500).optional(),
      /** Only ratings carrying this tag. */
      tag: z.string().min(1).max(64).optional(),
      includeUndone: z.boolean().default(false),
      since: z.number().int().optional(),
      until: z.number().int().optional(),
    }),
    help: 'Ratings, newest first.',
  },
  listTags: { input: Empty, help: 'The tags on live ratings, with how many carry each, most used first.' },
  deleteRating: { input: z.strictObject({ ratingId: id }), help: 'Delete one rating.' },
  emaHistory: {
    input: z.strictObject({ limit: z.number().int().min(1).max(100_000).default(1000) }),
    help: 'The reward baseline (the running EMA of rewards) over time for the active model.',
  },
  getSettings: { input: Empty, help: 'All settings with their current values.' },
  describeSettings: { input: Empty, help: 'Every setting with its default, help text and schema.' },
  setSettings: {
    input: z.strictObject({ values: z.record(z.string(), z.unknown()) }),
    help: 'Change settings; every value is validated, and a bad one names its key.',
  },
  listRuns: {
    input: z.strictObject({ limit: z.number().int().min(1).max(1000).default(50) }),
    help: 'Training runs, newest first.',
  },
  listAdapters: { input: Empty, help: 'Adapter versions of the active model, newest first.' },
  startTraining: {
    input: z.strictObject({
      fromVersion: z.number().int().nonnegative().optional(),
      gate: z.enum(['ratings', 'env']).optional().describe("The gate kind: held-out rated turns (default), or held-out env episodes played by the gym that started the round (common/training/gate.ts)."),
    }),
    help: 'Start a training round now.',
  },
  cancelTraining: { input: Empty, help: 'Cancel the running training round.' },
  describePresets: {
    input: z.strictObject({
      activeParams: z.number().positive().optional(),
      totalParams: z.number().positive().optional(),
      moe: z.boolean().optional(),
      pending: z.number().int().nonnegative().max(1_000_000).optional(),
    }),
    help: 'The training presets resolved for a model shape (default: the active model), with every field and its help, and each preset\'s round time from the model\'s size for `pending` new ratings (default: the count the schedule waits for).',
  },
  rollback: {
    input: z.strictObject({ version: z.number().int().nonnegative().optional() }),
    help: 'Make an earlier adapter version active (default: the one before the active one; 0 = base model).',
  },
  planReset: { input: Empty, help: 'What reset would delete: ratings (undone ones too), runs and adapter versions of the active model.' },
  reset: {
    input: z.strictObject({ confirm: z.literal(true) }),
    help: 'Delete all ratings, runs and adapters of the active model (turns are kept).',
  },
  testRewardMapper: {
    input: z.strictObject({ source: z.string().min(1).max(10_000), limit: z.number().int().min(1).max(1000).default(200) }),
    help: 'Run a reward mapper (training.rewardMapper) on your recent ratings without saving it; a failure names the rating.',
  },
  exportData: {
    input: z.strictObject({ path: z.string().min(1).max(4096) }),
    help: 'Write turns and ratings to a JSONL file.',
  },
  importData: {
    input: z.strictObject({ path: z.string().min(1).max(4096) }),
    help: 'Read a JSONL export back; records already present are skipped.',
  },
  detectAgents: { input: Empty, help: 'Which agents (Claude Code, Codex, OpenClaw) are installed, and whether Rein is connected to each.' },
  detectHardware: { input: Empty, help: 'CPU cores, memory, GPUs and the ONNX Runtime providers this build can use.' },
  discoverModels: {
    input: z.strictObject({ folders: z.array(z.string().min(1).max(4096)).max(32).default([]) }),
    help: "The models on this computer: Rein's own list, the Hugging Face cache, Ollama's store, LM Studio's models folder, the folders of models.folders and the given ones; each with its id, architecture, type, size, and whether Rein can train it (or why not).",
  },
  addModel: {
    input: z.strictObject({ source: z.string().min(1).max(4096) }),
    help: "Add a model to Rein's list: ollama:<name>[:<tag>] (from Ollama's store), a .gguf file or an HF model folder; it is judged from its header, and one Rein cannot train is refused with the reason.",
  },
  removeModel: {
    input: z.strictObject({ id: z.string().min(1).max(4096) }),
    help: "Take a model off Rein's list (its files are never touched; its ratings and versions stay); the model being trained cannot be removed.",
  },
  planAgent: {
    input: z.strictObject({ agent: AgentId, localModel: z.boolean().optional() }),
    help: "The files connecting an agent would change (the installer's dry run); localModel: run it on the local model through Rein's proxy (claude, codex).",
  },
  connectAgent: {
    input: z.strictObject({ agent: AgentId, localModel: z.boolean().optional() }),
    help: "Connect an agent to Rein (its config files are backed up first); localModel: run it on the local model through Rein's proxy, which stores each turn with its tokens (claude, codex).",
  },
  useModel: {
    input: z.strictObject({ path: z.string().min(1).max(4096) }),
    help: "Train this model (sets model.active): an id from discoverModels (ollama:<name>:<tag>), a .gguf file or an HF model folder; it is added to Rein's list.",
  },
  useDemoModel: { input: Empty, help: 'Copy the small pretrained demo LM into the Rein home and train it (model.active, the balanced preset).' },
  rewardStatus: { input: Empty, help: 'The reward model: its latest version with held-out AUROC and pair accuracy (95% intervals), older versions, and the active-learning setting.' },
  trainRewardModel: { input: Empty, help: 'Train a reward-model version on every live rating now (it also retrains after each round).' },
  rewardAsk: {
    input: z.strictObject({ turnId: id }),
    help: 'Whether the popup should ask about this turn (reward.ask), and why: "the reward model is unsure: it gives this answer a 52% chance of being Good". The score is recorded, never as a rating.',
  },
  sendTestTurn: { input: Empty, help: 'Post a test turn through the running capture server, as an agent would.' },
  chat: {
    input: ChatInput,
    help: "Answer a chat with the active version (or `version`, 0 = base) through Rein's model server or the configured upstream; tokens stream as chatToken events, and the answer is stored as a turn (on-policy: its tokens, μ and version) to rate.",
  },
  saveChat: {
    input: z.strictObject({
      id: z.string().min(1).max(512),
      system: z.string().max(100_000),
      version: VersionNumber.nullable(),
      messages: z.array(ChatMessage).max(1000),
    }),
    help: 'Keep a chat conversation (its id is the session its answers share): the system prompt, the version picked and every message; saving an id again replaces it.',
  },
  listChats: {
    input: z.strictObject({ limit: z.number().int().min(1).max(1000).default(100) }),
    help: 'Kept chat conversations, most recently changed first: id, title (the first question), message count.',
  },
  getChat: {
    input: z.strictObject({ id: z.string().min(1).max(512) }),
    help: "A kept chat conversation with its system prompt and messages, each answer with its turn's live rating.",
  },
  deleteChat: {
    input: z.strictObject({ id: z.string().min(1).max(512) }),
    help: 'Forget a kept chat conversation (its turns and ratings stay).',
  },
  arenaStart: {
    input: ArenaStartInput,
    help: 'Answer one prompt with two versions (default: the active one and its parent) and show them as A and B in random order, without saying which is which.',
  },
  arenaVote: {
    input: z.strictObject({ matchId: id, vote: z.enum(['a', 'b', 'tie', 'bad']), rater: z.string().min(1).max(RATING_LIMITS.rater).optional() }),
    help: 'Vote on an arena match (a, b, tie, or bad: both bad); the pair is stored with both turns, each side is rated (winner good, loser bad, both bad when both are; a tie rates neither), and the versions are revealed.',
  },
  versionStats: {
    input: Empty,
    help: 'Per version: arena win rate against its parent and the base (Wilson 95% CI, vote counts), and the Good-rate of the answers it produced in real use.',
  },
} as const;

export type VerbName = keyof typeof VERBS;
export const VERB_NAMES = Object.keys(VERBS) as VerbName[];

/** A reward mapper run on recent ratings, newest first: the default reward beside the mapper's. */
export interface RewardMapperTrial {
  results: { ratingId: number; turnId: number; kind: RatingKind; score: number | null; tags: string[]; source: string; defaultReward: number; reward: number }[];
}

export interface RateResult {
  rating: RatingView;
  status: Status;
}
export interface UndoResult {
  undone: RatingView | null;
  /** The rating the undone one had replaced, live again (a copy with its own id), or null. */
  restored: RatingView | null;
  status: Status;
}
export type CaptureResult =
  | {
      turn: TurnSummary;
      /** false when the same (source, eventId) was already stored. */
      created: boolean;
      spooled?: false;
    }
  | {
      /**
       * Another process held the database's write lock: the turn is in the capture server's durable spool and is
       * stored, in arrival order, once the database is free (node/core/spool.ts). It has no id yet.
       */
      turn: null;
      created: false;
      spooled: true;
    };

/** A chat answer: the stored turn (null when it was not stored, with the reason in `note`), and what produced it. */
export interface ChatAnswer {
  turnId: number | null;
  text: string;
  /** The adapter version that produced it (0 = base), as the model server named it; null when unknown. */
  version: number | null;
  /** Stored with its tokens and μ, so it trains on-policy. */
  onPolicy: boolean;
  note: string | null;
}

/** A kept chat conversation: each answer with its turn's newest live rating (null: none, or no turn). */
export interface ChatConversation extends ChatSummary {
  system: string;
  messages: (ChatMessage & { rating: RatingView | null })[];
}

/** An arena match. The versions are null until it is voted on: the pair is blind. */
export interface ArenaMatchView {
  id: number;
  prompt: string;
  a: { turnId: number; text: string; version: number | null };
  b: { turnId: number; text: string; version: number | null };
  vote: ArenaVote | null;
  createdAt: number;
}

/** Output type of each verb. */
export interface VerbOutputs {
  status: Status;
  captureTurn: CaptureResult;
  rate: RateResult;
  undo: UndoResult;
  ignoreTurn: { turn: TurnSummary };
  listTurns: Page<TurnSummary>;
  getTurn: Turn;
  deleteTurn: { deleted: boolean };
  /** How many revert signals the check recorded. */
  sessionPrompted: { reverts: number };
  turnSignals: { signals: Signal[]; label: WeakLabel | null; explanation: string | null };
  weakLabels: { items: { turn: TurnSummary; label: WeakLabel; explanation: string }[] };
  confirmWeakLabel: RateResult;
  dismissWeakLabel: { dismissed: number };
  listRatings: Page<RatingView>;
  listTags: { tag: string; count: number }[];
  deleteRating: { deleted: boolean };
  emaHistory: EmaPoint[];
  getSettings: Settings;
  describeSettings: SettingDescription[];
  setSettings: Settings;
  listRuns: RunView[];
  listAdapters: AdapterView[];
  startTraining: { runId: number };
  cancelTraining: { cancelled: boolean };
  describePresets: PresetTable;
  rollback: { active: AdapterView | null; status: Status };
  planReset: { ratings: number; undone: number; runs: number; adapters: number };
  reset: { ratings: number; runs: number; adapters: number };
  testRewardMapper: RewardMapperTrial;
  exportData: { path: string; turns: number; ratings: number };
  /** `bad`: lines that were not a valid record, left out (the good ones are imported); `badLines`: the first of them. */
  importData: { turns: number; ratings: number; skipped: number; bad: number; badLines: { line: number; reason: string }[] };
  detectAgents: AgentInfo[];
  detectHardware: HardwareInfo;
  discoverModels: LocalModel[];
  addModel: { model: LocalModel };
  removeModel: { removed: boolean; id: string };
  planAgent: AgentPlan;
  connectAgent: AgentConnectResult;
  useModel: { model: LocalModel; settings: Settings };
  useDemoModel: { model: LocalModel; settings: Settings };
  sendTestTurn: TestTurnResult;
  chat: ChatAnswer;
  saveChat: ChatSummary;
  listChats: ChatSummary[];
  getChat: ChatConversation;
  deleteChat: { deleted: boolean };
  arenaStart: ArenaMatchView;
  arenaVote: { match: ArenaMatchView; ratings: RatingView[] };
  versionStats: VersionStats[];
  rewardStatus: RewardStatus;
  trainRewardModel: { model: RewardModelView | null; reason: string | null };
  rewardAsk: RewardAsk;
}

/** Input type of each verb as callers write it (defaults optional). */
export type VerbInput<V extends VerbName> = z.input<(typeof VERBS)[V]['input']>;
/** Input type after validation (defaults applied). */
export type VerbParsed<V extends VerbName> = z.output<(typeof VERBS)[V]['input']>;
export type VerbOutput<V extends VerbName> = VerbOutputs[V];

/** The verbs as a typed client (`window.rein`, the HTTP client, the CLI). */
export type ReinApi = { [V in VerbName]: (input: VerbInput<V>) => Promise<VerbOutput<V>> };

export interface Events {
  turnCaptured: TurnSummary;
  ratingAdded: { rating: RatingView; status: Status };
  ratingUndone: { rating: RatingView; status: Status };
  ratingDeleted: { ratingId: number; status: Status };
  turnDeleted: { turnId: number; status: Status };
  turnUpdated: TurnSummary;
  trainingProgress: TrainingProgress;
  adapterChanged: { modelId: string; version: number; status: AdapterView['status'] };
  settingsChanged: Partial<Settings>;
  /** A piece of a streaming chat answer (the `chat` and `arenaStart` verbs' streamId). */
  chatToken: { streamId: string; text: string };
}
export type EventName = keyof Events;
export const EVENT_NAMES: EventName[] = [
  'turnCaptured',
  'ratingAdded',
  'ratingUndone',
  'ratingDeleted',
  'turnDeleted',
  'turnUpdated',
  'trainingProgress',
  'adapterChanged',
  'settingsChanged',
  'chatToken',
];

/** Subscribe to one event; returns a disposer. */
export type Subscribe = <E extends EventName>(event: E, fn: (payload: Events[E]) => void) => () => void;

/** Which transport or client did something; recorded in the audit log. */
export const ACTORS = ['cli', 'http', 'ipc', 'hook', 'plugin', 'proxy', 'system', 'test'] as const;
export type Actor = (typeof ACTORS)[number];
