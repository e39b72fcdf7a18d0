// The combined store's shape. Each slice owns its state and actions; selectors live beside their slice.
import type { StateCreator } from 'zustand/vanilla';
import type { ArenaMatchView, VerbOutputs } from '../../src-main/common/api.ts';
import type { ArenaVote, VersionStats } from '../../src-main/common/chat/arena.ts';
import type { ChatSummary } from '../../src-main/common/chat/conversation.ts';
import type { AdapterView, EmaPoint, RatingView, RewardStatus, RunView, Status, TrainingProgress, Turn, TurnSummary } from '../../src-main/common/domain.ts';
import type { SettingDescription, SettingKey, Settings } from '../../src-main/common/config.ts';
import type { AgentConnectResult, AgentId, AgentInfo, AgentPlan, HardwareInfo, LocalModel, TestTurnResult } from '../../src-main/common/system.ts';
import type { PresetTable } from '../../src-main/common/training/presets.ts';
import type { ApiError } from '../services/api.ts';

export type RatingChoice = 'good' | 'bad';
/** What a rating button or key sends: Good, Bad, or a 1-5 score. */
export type RateValue = RatingChoice | 1 | 2 | 3 | 4 | 5;
/** Where a rating was given: U undoes the last one given on the surface it is pressed on. */
export type RatingSurface = 'card' | 'popup' | 'chat';

/** What was typed under "Score, correction, tags" for one turn, as typed (sent trimmed with whichever rating). */
export interface RatingDraft {
  correction: string;
  /** Comma-separated. */
  tags: string;
  comment: string;
}

export interface RatingSlice {
  /** By turn id; a turn's draft is sent with its rating, whichever button or key gives it, and cleared once stored. */
  drafts: Record<number, RatingDraft>;
  /** The turn whose rating is in flight (buttons disabled meanwhile; a key pressed meanwhile is applied after it). */
  ratingTurnId: number | null;
  /** The last failed rating or undo, shown beside that turn's controls. */
  rateError: { turnId: number; error: ApiError } | null;
  /** The rating given last, and where: what U and Undo take back. */
  lastRated: { turnId: number; where: RatingSurface; turn: TurnSummary | null } | null;
  /** What the last undo did, in words ("Undid Good on turn 14."), beside that turn's controls (turnId null: nothing was undone). */
  undoNote: { turnId: number | null; text: string } | null;
  setDraft: (turnId: number, patch: Partial<RatingDraft>) => void;
  /** Rate with the turn's draft; on the card, the card then moves on to the next turn that waits. */
  rate: (turnId: number, value: RateValue, where: RatingSurface) => Promise<void>;
  /** Takes back `turnId`'s rating, or (without it) the one given last on this surface. */
  undo: (where: RatingSurface, turnId?: number) => Promise<void>;
}

export interface ChatEntry {
  role: 'user' | 'assistant';
  content: string;
  /** Assistant answers: the stored turn to rate (null: not stored, `note` says why). */
  turnId?: number | null;
  version?: number | null;
  onPolicy?: boolean;
  note?: string | null;
  streaming?: boolean;
  rating?: RatingView | null;
}

export interface ChatSlice {
  chat: ChatEntry[];
  chatSystem: string;
  /** null: the active version; 0: the base. */
  chatVersion: number | null;
  chatSession: string;
  chatBusy: boolean;
  chatError: ApiError | null;
  sendChat: (text: string) => Promise<void>;
  setChatSystem: (text: string) => void;
  setChatVersion: (version: number | null) => void;
  newChat: () => void;
  /** Kept conversations, newest first (the core keeps each one, so a reload reopens it). */
  chats: ChatSummary[];
  /** Whether the list was read once this page: the first read reopens the newest conversation. */
  chatsLoaded: boolean;
  loadChats: () => Promise<void>;
  openChat: (id: string) => Promise<void>;
  deleteChat: (id: string) => Promise<void>;

  /** null: the active version against its parent. */
  arenaPair: [number, number] | null;
  arenaMatch: ArenaMatchView | null;
  /** The two answers as they stream, before the match is stored. */
  arenaStream: { a: string; b: string };
  arenaBusy: boolean;
  arenaError: ApiError | null;
  arenaVoted: VerbOutputs['arenaVote'] | null;
  setArenaPair: (pair: [number, number] | null) => void;
  startArena: (prompt: string, system?: string) => Promise<void>;
  voteArena: (vote: ArenaVote) => Promise<void>;

  versionStats: VersionStats[];
  versionStatsError: ApiError | null;
  loadVersionStats: () => Promise<void>;
}

export interface StatusSlice {
  status: Status | null;
  statusError: ApiError | null;
  /** false while the live event stream is down (headless mode only); the screen may be stale meanwhile. */
  connected: boolean;
  loadStatus: () => Promise<void>;
  setStatus: (status: Status) => void;
  setConnected: (up: boolean) => void;
}

export type InboxFilter = 'all' | 'unrated' | 'ignored' | 'expired';

export interface TurnsSlice {
  /** Recent turns, newest first, at most TURNS_LIMIT. */
  turns: TurnSummary[];
  turnsTotal: number;
  turnsLoaded: boolean;
  turnsError: ApiError | null;
  /** The turn the user opened on the card from a list; null: the card shows the newest turn that asks for a rating. */
  cardTurnId: number | null;
  /** How many recent turns `turns` holds at most: grows by a page with each "Show more answers". */
  turnsLimit: number;
  /** Which turns the "To rate" list shows: the recent ones, or one state fetched from the core. */
  inboxFilter: InboxFilter;
  inboxTurns: TurnSummary[];
  inboxTotal: number;
  loadTurns: () => Promise<void>;
  showTurn: (turnId: number | null) => void;
  setInboxFilter: (filter: InboxFilter) => Promise<void>;
  /** The next page of the list shown (the recent turns, or the chosen state's). */
  loadMoreTurns: () => Promise<void>;
  /** After a rating on the card: it moves on to the next turn that asks for one, or stays on this one when none is left. */
  advanceCard: (turnId: number) => void;
  applyTurn: (turn: TurnSummary) => void;
  applyRating: (rating: RatingView) => void;
  removeTurn: (turnId: number) => void;
}

export interface SettingsSlice {
  settings: Settings | null;
  settingsError: ApiError | null;
  /** describeSettings: every setting's group, help, default and JSON Schema; the Settings screen is built from it. */
  settingDescriptions: SettingDescription[] | null;
  /** The core's message for a value it refused, by setting key: shown beside that field. */
  settingErrors: Record<string, string>;
  /** The setting saved last (its field says "Saved"), or null. */
  settingSaved: string | null;
  /** A setting another screen pointed to: the Settings screen scrolls to it and focuses it once. */
  settingFocus: string | null;
  /** The reward mapper tried on recent ratings (testRewardMapper), with the source it tried. */
  mapperTrial: (VerbOutputs['testRewardMapper'] & { source: string }) | null;
  mapperError: string | null;
  loadSettings: () => Promise<void>;
  loadSettingDescriptions: () => Promise<void>;
  applySettings: (changed: Partial<Settings>) => void;
  /** true when saved; a refused value's message lands in settingErrors under its key. */
  saveSettings: (values: Partial<Settings>) => Promise<boolean>;
  setSettingError: (key: string, message: string | null) => void;
  openSetting: (key: SettingKey) => void;
  clearSettingFocus: () => void;
  tryMapper: (source: string) => Promise<void>;
}

export interface TrainingSlice {
  runs: RunView[];
  progress: TrainingProgress | null;
  /** Loss and KL per step of the run in progress, from its progress events. */
  liveCurve: { step: number; loss: number; kl: number }[];
  /** Set when the core answered `not_available` for a training verb: the honest "not yet" state. */
  trainingUnavailable: string | null;
  trainingError: ApiError | null;
  trainingStarting: boolean;
  loadRuns: () => Promise<void>;
  /** Runs and versions fetched together and set at once: a finished run's gate line then names its version's fate. */
  loadRunsAndAdapters: () => Promise<void>;
  startTraining: () => Promise<void>;
  cancelTraining: () => Promise<void>;
  setProgress: (p: TrainingProgress) => void;
  /** The reward model's status (rewardStatus): its held-out AUROC and pair accuracy, and the active-learning setting. */
  reward: RewardStatus | null;
  loadReward: () => Promise<void>;
}

export type View = 'rate' | 'chat' | 'arena' | 'training' | 'versions' | 'ratings' | 'setup' | 'settings';

export interface NavSlice {
  view: View;
  setView: (view: View) => void;
}

export interface PopupSlice {
  /** Turns waiting in the popup, oldest first. */
  queue: TurnSummary[];
  popupError: ApiError | null;
  /** Why the popup asks about a turn, when the reward model chose it (reward.ask unsure): by turn id. */
  askReasons: Record<number, string>;
  /**
   * A captured turn: queued when the settings say it raises the popup. With reward.ask unsure, only once the core's
   * rewardAsk says to ask (it is left unrated otherwise), with its reason.
   */
  enqueue: (turn: TurnSummary) => void;
  /** A turn changed elsewhere: rated or ignored turns leave the queue. */
  settle: (turn: TurnSummary) => void;
  drop: (turnId: number) => void;
  /** Closed or timed out: the turn counts as ignored (ignoreTurn). */
  dismiss: (turnId: number) => Promise<void>;
  /** Unrated turns that waited before the popup opened, put in its queue (oldest first) when the person asks. */
  takeWaiting: () => Promise<void>;
  /** An undone rating's turn, back at the head of the queue. */
  requeue: (turn: TurnSummary) => void;
}

export interface RatingFilters {
  search: string;
  kind: 'any' | 'good' | 'bad' | 'scale';
  source: string;
  trained: 'any' | 'yes' | 'no';
  /** Only the last N days (0 = all time). */
  days: number;
  /** Only ratings with this tag ('' = any). */
  tag: string;
}

export interface RatingsSlice {
  ratingFilters: RatingFilters;
  ratingPage: number;
  ratingItems: RatingView[];
  ratingTotal: number;
  ratingsLoaded: boolean;
  ratingsError: ApiError | null;
  /** Turns by id, fetched once for the rows that rate them and for the opened one. */
  turnCache: Record<number, Turn>;
  openTurnId: number | null;
  exportResult: VerbOutputs['exportData'] | null;
  /** Why the last export failed, shown in the Export box (never beside an older success). */
  exportError: ApiError | null;
  exporting: boolean;
  /** The tags in use (listTags), for the tag filter. */
  tags: VerbOutputs['listTags'];
  loadTags: () => Promise<void>;
  /** Ratings of the last PER_DAY_DAYS days, for the per-day chart. */
  recentRatings: RatingView[];
  loadRecentRatings: () => Promise<void>;
  loadRatings: () => Promise<void>;
  setRatingFilters: (f: Partial<RatingFilters>) => void;
  setRatingPage: (page: number) => void;
  openTurn: (turnId: number | null) => Promise<void>;
  /** Fetch a turn's full text into turnCache (the card and popup show it; summaries carry 200-character previews). */
  loadFullTurn: (turnId: number) => Promise<void>;
  fullTurnError: ApiError | null;
  rerate: (turnId: number, value: 'good' | 'bad' | number) => Promise<void>;
  deleteRating: (ratingId: number) => Promise<void>;
  deleteTurn: (turnId: number) => Promise<void>;
  exportRatings: (path: string) => Promise<void>;
}

export interface AdaptersSlice {
  adapters: AdapterView[];
  adaptersLoaded: boolean;
  adaptersError: ApiError | null;
  /** The action in flight ("rollback:3", "reset", "retrain:2"), buttons disabled meanwhile. */
  adapterBusy: string | null;
  ema: EmaPoint[];
  lastReset: VerbOutputs['reset'] | null;
  /** The last failed action ("retrain:2", "rollback:0", "reset") with the core's error: shown beside its control. */
  adapterActionError: { action: string; error: ApiError } | null;
  /** What Reset would delete (planReset), fetched when its confirmation opens. */
  resetPlan: VerbOutputs['planReset'] | null;
  loadResetPlan: () => Promise<void>;
  /** describePresets for the active model into `presets`, for a round's time estimate; quiet when there is none. */
  loadRoundPresets: () => Promise<void>;
  loadAdapters: () => Promise<void>;
  loadEma: () => Promise<void>;
  rollback: (version: number) => Promise<void>;
  reset: () => Promise<void>;
  retrain: (fromVersion: number) => Promise<void>;
}

export type WizardStep = 'welcome' | 'agents' | 'model' | 'preset' | 'test';

export interface WizardSlice {
  wizardStep: WizardStep;
  agents: AgentInfo[] | null;
  hardware: HardwareInfo | null;
  models: LocalModel[] | null;
  modelFolders: string[];
  /** What "Look there" found, or why the core refused the folder; shown beside the folder field. */
  folderNote: { error: boolean; text: string } | null;
  plans: Partial<Record<AgentId, AgentPlan>>;
  agentResults: Partial<Record<AgentId, AgentConnectResult>>;
  presets: PresetTable | null;
  testTurn: TestTurnResult | null;
  wizardBusy: string | null;
  wizardError: ApiError | null;
  setWizardStep: (step: WizardStep) => void;
  detect: () => Promise<void>;
  addModelFolder: (folder: string) => Promise<void>;
  /** localModel: run the agent on the local model through Rein's proxy (Claude Code, Codex). */
  planAgent: (agent: AgentId, localModel?: boolean) => Promise<void>;
  connectAgent: (agent: AgentId, localModel?: boolean) => Promise<void>;
  /** An HF model folder, or 'demo' for the offline demo model. */
  chooseModel: (path: string) => Promise<void>;
  loadPresets: () => Promise<void>;
  sendTestTurn: () => Promise<void>;
}

/** The weak label Rein read from what the user did after an answer, as the card shows it. */
export interface WeakEntry {
  value: RatingChoice;
  rule: string;
  /** "Rein read this as Bad because you wrote: 'that's wrong'". */
  explanation: string;
}

/** What the user did after an answer, read as a label they confirm, flip or dismiss with one key (Y, F, D). */
export interface WeakSlice {
  /** By turn id, once asked: the label (null: none). */
  weak: Record<number, WeakEntry | null>;
  /** The last confirm, flip or dismiss that failed, by turn id. */
  weakError: { turnId: number; message: string } | null;
  loadWeak: (turnId: number) => Promise<void>;
  /**
   * A turn was captured: its prompt may be a reaction to an earlier answer of the same session and agent (the core
   * stores it as that answer's signal), so the label of each such answer already asked about is read again.
   */
  reloadWeakBefore: (turn: TurnSummary) => void;
  /** Confirm rates the turn as the label says, flip the other way (both through the core's rate); dismiss drops it. */
  answerWeak: (turnId: number, action: 'confirm' | 'flip' | 'dismiss') => Promise<void>;
}

export type ReinState = StatusSlice &
  WeakSlice &
  TurnsSlice &
  RatingSlice &
  SettingsSlice &
  TrainingSlice &
  NavSlice &
  PopupSlice &
  RatingsSlice &
  AdaptersSlice &
  WizardSlice &
  ChatSlice & {
  /** Load everything the first screen shows. */
  init: () => Promise<void>;
};

export type Slice<T> = StateCreator<ReinState, [], [], T>;
