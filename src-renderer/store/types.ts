// The combined store's shape. Each slice owns its state and actions; selectors live beside their slice.
import type { StateCreator } from 'zustand/vanilla';
import type { RatingView, RunView, Status, TrainingProgress, TurnSummary } from '../../src-main/common/domain.ts';
import type { Settings } from '../../src-main/common/config.ts';
import type { ApiError } from '../services/api.ts';

export type RatingChoice = 'good' | 'bad';

export interface StatusSlice {
  status: Status | null;
  statusError: ApiError | null;
  /** false while the live event stream is down (headless mode only); the screen may be stale meanwhile. */
  connected: boolean;
  loadStatus: () => Promise<void>;
  setStatus: (status: Status) => void;
  setConnected: (up: boolean) => void;
}

export interface TurnsSlice {
  /** Recent turns, newest first, at most TURNS_LIMIT. */
  turns: TurnSummary[];
  turnsTotal: number;
  turnsLoaded: boolean;
  turnsError: ApiError | null;
  /** The turn whose rating is in flight (buttons disabled meanwhile). */
  ratingTurnId: number | null;
  rateError: ApiError | null;
  loadTurns: () => Promise<void>;
  rate: (turnId: number, value: RatingChoice) => Promise<void>;
  undo: () => Promise<void>;
  applyTurn: (turn: TurnSummary) => void;
  applyRating: (rating: RatingView) => void;
  removeTurn: (turnId: number) => void;
}

export interface SettingsSlice {
  settings: Settings | null;
  settingsError: ApiError | null;
  loadSettings: () => Promise<void>;
  applySettings: (changed: Partial<Settings>) => void;
}

export interface TrainingSlice {
  runs: RunView[];
  progress: TrainingProgress | null;
  /** Set when the core answered `not_available` for a training verb: the honest "not yet" state. */
  trainingUnavailable: string | null;
  trainingError: ApiError | null;
  trainingStarting: boolean;
  loadRuns: () => Promise<void>;
  startTraining: () => Promise<void>;
  setProgress: (p: TrainingProgress) => void;
}

export type ReinState = StatusSlice & TurnsSlice & SettingsSlice & TrainingSlice & {
  /** Load everything the first screen shows. */
  init: () => Promise<void>;
};

export type Slice<T> = StateCreator<ReinState, [], [], T>;
