// Domain types shared by the core, the transports and the renderer (which imports them as types only).
// Times are Unix milliseconds. Ids are SQLite rowids.

export type RatingKind = 'good' | 'bad' | 'scale';
export type TurnState = 'unrated' | 'rated' | 'ignored' | 'expired';
export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';
export type AdapterStatus = 'candidate' | 'active' | 'inactive' | 'rejected' | 'rolled_back';

export interface ContextMessage {
  role: string;
  content: string;
  name?: string;
  [extra: string]: unknown;
}

export interface TurnSummary {
  id: number;
  source: string;
  session: string | null;
  eventId: string;
  createdAt: number;
  model: string | null;
  promptPreview: string;
  responsePreview: string;
  state: TurnState;
  /** The newest live (not undone) rating of this turn, if any. */
  rating: RatingView | null;
  onPolicy: boolean;
}

export interface Turn extends Omit<TurnSummary, 'promptPreview' | 'responsePreview'> {
  prompt: string;
  response: string;
  context: ContextMessage[];
  /** Sampled response token ids and their behaviour logprobs (on-policy turns only). */
  tokens: number[] | null;
  logprobs: number[] | null;
  adapterVersion: number | null;
  truncated: boolean;
  /**
   * The newest reward model's score of this turn: its predicted chance of Good `p`, whether the popup then asked
   * (reward.ask unsure: a confident score is not asked about), and the reward model's version. Absent or null when no
   * reward model scored it.
   */
  rewardPrediction?: { p: number; asked: boolean; version: number } | null;
}

export interface RatingView {
  id: number;
  turnId: number;
  kind: RatingKind;
  /** The reward: good = +1, bad = -1, scale s in 1..5 = (s-3)/2. */
  value: number;
  scale: number | null;
  correction: string | null;
  tags: string[];
  comment: string | null;
  rater: string;
  modelId: string;
  createdAt: number;
  undone: boolean;
  /** The round that trained it (a version that went live drew it into a step); null while it is pending. */
  runId: number | null;
  /**
   * The latest round that used it: trained (drawn into a step) or held out (scored by the gate, not trained), and
   * whether that round's version went live. A rating of a rejected round is pending again; null when no round used it.
   */
  lastRound: RatingRound | null;
  /**
   * Why the rounds cannot train it, in words, when a round parked it (it could not be encoded: too long for the
   * length budget, text the tokenizer cannot rebuild, a neutral score of text that is not the model's own...); null
   * otherwise. A parked rating is not pending: it counts toward no round. Each round tries it again with its own model
   * and settings, and one that encodes is pending again.
   */
  parked: string | null;
}

export interface RatingRound {
  runId: number;
  role: 'trained' | 'heldout';
  outcome: 'accepted' | 'rejected';
}

export interface RunView {
  id: number;
  modelId: string;
  status: RunStatus;
  trigger: 'auto' | 'manual' | 'retrain';
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  config: unknown;
  metrics: unknown;
  error: string | null;
  adapterVersion: number | null;
  /** The version the round continued from (0: the base; null: the active one when it started). */
  fromVersion: number | null;
  samples: number;
}

export interface AdapterView {
  id: number;
  modelId: string;
  version: number;
  status: AdapterStatus;
  path: string;
  runId: number | null;
  parentVersion: number | null;
  createdAt: number;
  emaValue: number | null;
  metrics: unknown;
  reason: string | null;
  /** Per publish target: the outcome (with the server's own message on failure) and the name it was published under. */
  publish: Record<string, { ok: boolean; message: string; at: number; model?: string }>;
}

export interface EmaPoint {
  at: number;
  value: number;
  reason: 'rating' | 'undo' | 'rollback' | 'reset' | 'delete';
  ratingId: number | null;
}

export interface Status {
  version: string;
  home: string;
  model: { id: string; configured: boolean };
  activeAdapter: { version: number; createdAt: number } | null;
  ratings: { good: number; bad: number; scaled: number; total: number };
  pending: number;
  /** The model's parked ratings (RatingView.parked): live, not trained, and left out of `pending`. */
  parked: number;
  threshold: number;
  ema: { value: number; count: number } | null;
  /**
   * `toRate`: the unrated turns the Rate screen asks about (the Rate tab's count); `unrated` also counts the unrated
   * answers of Rein's own Chat and Arena, which are rated on their screens (an arena tie leaves both unrated).
   */
  turns: { total: number; unrated: number; toRate: number };
  training: { state: 'idle' | 'running'; runId: number | null };
  /**
   * The model's latest finished round, when its version was rejected: its ratings went back to pending (`pending` of
   * them still are). Null when the latest round went live, or none has run.
   */
  rejected: { runId: number; pending: number } | null;
  capture: { paused: boolean };
}

export interface TrainingProgress {
  runId: number;
  phase: 'preparing' | 'training' | 'evaluating' | 'publishing' | 'done' | 'failed' | 'cancelled';
  step: number;
  steps: number;
  loss: number | null;
  kl: number | null;
  clipFraction: number | null;
  tokensPerSecond: number | null;
  etaSeconds: number | null;
  message?: string;
}

export interface Page<T> {
  items: T[];
  total: number;
}

/** A reward-model version (issue #14 item 3): what it read its features from, and how it scores held-out ratings. */
export interface RewardModelView {
  id: number;
  modelId: string;
  version: number;
  /** The model directory whose frozen weights produced the features. */
  baseModel: string;
  /** The adapter that was on when features were read; null: the base alone. */
  adapterVersion: number | null;
  /** The round after which it was trained, or null (trained on demand). */
  runId: number | null;
  createdAt: number;
  /** Labelled examples it was fitted on. */
  ratings: number;
  metrics: {
    /** Held-out examples (a fixed share of the ratings, never fitted on): how many of each class. */
    heldout: { positives: number; negatives: number };
    /** The held-out examples' p(good), by their label (versions trained before it was kept lack it). */
    scores?: { good: number[]; bad: number[] };
    /** Held-out AUROC with its 95% Hanley–McNeil interval; null without both classes held out. */
    auroc: { value: number; ci: [number, number] } | null;
    /** Held-out pairs (a correction against its original, arena preferences) ordered right, with the Wilson 95% interval. */
    pairs: { accuracy: number; ci: [number, number]; pairs: number } | null;
    /** Examples skipped, with why (text that encodes to nothing). */
    skipped: number;
    seconds: number;
  };
}

/** What the reward model says about asking for a turn's rating (active learning). */
export interface RewardAsk {
  turnId: number;
  ask: boolean;
  /** Shown in the popup: "the reward model is unsure: it gives this answer a 52% chance of being Good". */
  reason: string;
  /** p(good) under the latest reward model, or null when there is none or it could not score the turn. */
  p: number | null;
  rewardModelVersion: number | null;
}

export interface RewardStatus {
  /** The latest version, or null before the first is trained. */
  latest: RewardModelView | null;
  /** The latest version in one line, as the CLI and the Training screen show it (common/training/reward.ts rewardModelLine). */
  line: string | null;
  /** Older versions, newest first (at most 20). */
  history: RewardModelView[];
  ask: 'always' | 'unsure';
  unsureMargin: number;
  /** Turns the latest version scored and the popup did not ask about (they stay unrated: nothing labels them). */
  notAsked: number;
}
