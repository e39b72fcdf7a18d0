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
  threshold: number;
  ema: { value: number; count: number } | null;
  turns: { total: number; unrated: number };
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
