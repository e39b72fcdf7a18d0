// The user's reward mapper (issue #15; seed 000's `reward_mapper`): a small JavaScript function
// `(rating, turn) => reward in [-1, 1]` that replaces the default mapping (common/rewards.ts rewardOf) when
// `training.rewardMapper` is set. It runs in a sandbox process (mapper-sandbox.ts), a batch of ratings per process:
// no require, no process, no I/O, no eval/Function, a time limit per call and a memory cap that hold even for native
// code, and only numbers and short strings come back. The mapper is the user's own code; the sandbox is there so a
// mistake (a loop, a typo, a NaN, a huge array, a dropped promise) is a clear error instead of a hung, crashed or
// wrong round or server.
import type { RewardMapperTrial } from '../../common/api.ts';
import type { RatingKind } from '../../common/domain.ts';
import { BadInputError } from '../../common/errors.ts';
import { readSettings } from '../store/settings.ts';
import type { MapperCaseRow } from '../store/rounds.ts';
import type { Store } from '../store/store.ts';
import { runMapperSandbox, type SandboxFailure } from './mapper-sandbox.ts';

/**
 * Milliseconds one call may run before it is stopped. The clock is wall time, and rounds run beside training, so a
 * one-line mapper on a busy machine took over 50 ms (CI, load 11): the bound is for loops, not for slow machines.
 */
export const MAPPER_CALL_MS = 500;
/** How many recent ratings a mapper is tried on before it is saved. */
export const MAPPER_CHECK_RATINGS = 200;
/**
 * The sandbox process's memory cap (RSS, MB), array buffers included; its mapper thread's V8 heap is capped at
 * MAPPER_HEAP_MB. A Node process with the mapper's thread started uses about 60 MB before the mapper runs.
 */
export const MAPPER_MEMORY_MB = 256;
export const MAPPER_HEAP_MB = 64;

/** What the mapper's first argument holds. */
export interface MapperRating {
  kind: RatingKind;
  /** 1–5 for a scale rating, else null. */
  score: number | null;
  /** The default mapping's reward: good +1, bad −1, a score s (s−3)/2. */
  reward: number;
  tags: string[];
  comment: string | null;
  correction: string | null;
}

/** What the mapper's second argument holds. */
export interface MapperTurn {
  source: string;
  /** Characters in the answer. */
  length: number;
  promptLength: number;
}

export interface MapperCase {
  ratingId: number;
  turnId: number;
  rating: MapperRating;
  turn: MapperTurn;
}

export class RewardMapperError extends BadInputError {
  constructor(message: string, detail?: { ratingId?: number }) {
    super(`training.rewardMapper: ${message}`, 'training.rewardMapper', detail);
    this.name = 'RewardMapperError';
  }
}

/**
 * The mapper's reward for each case, in order, from one sandbox process. Throws RewardMapperError at the first case
 * it throws on, runs too long on, runs out of memory on, or returns a bad value for (or when it does not compile).
 */
export async function mapRewards(source: string, cases: readonly MapperCase[]): Promise<number[]> {
  const { values, failure } = await runMapperSandbox(
    source,
    cases.map((c) => [c.rating, c.turn]),
    { callMs: MAPPER_CALL_MS, memoryMb: MAPPER_MEMORY_MB, heapMb: MAPPER_HEAP_MB },
  );
  for (const [i, v] of values.entries()) {
    if (!Number.isFinite(v) || v < -1 || v > 1) {
      const ratingId = cases[i]!.ratingId;
      throw new RewardMapperError(`returned ${String(v)} for rating ${ratingId}; it must return a number from -1 to 1`, { ratingId });
    }
  }
  if (failure !== null) throw failureError(failure, cases);
  return values;
}

function failureError(f: SandboxFailure, cases: readonly MapperCase[]): RewardMapperError {
  const c = f.at >= 0 ? cases[f.at] : undefined;
  if (c === undefined) {
    switch (f.why) {
      case 'not-a-function':
        return new RewardMapperError(`must be a function (rating, turn) => reward, got ${f.text}`);
      case 'timeout':
        return new RewardMapperError(`does not compile: its top-level code ran longer than ${MAPPER_CALL_MS} ms (a loop?)`);
      case 'memory':
      case 'heap':
        return new RewardMapperError(`does not compile: its top-level code used more memory than the sandbox allows (${f.why === 'heap' ? `${MAPPER_HEAP_MB} MB of heap` : `${MAPPER_MEMORY_MB} MB`})`);
      case 'syntax':
        return new RewardMapperError(`does not compile: SyntaxError: ${f.text}`);
      case 'crash':
        return new RewardMapperError(`could not run: ${f.text}`);
      default:
        return new RewardMapperError(`does not compile: ${f.text}`);
    }
  }
  const on = { ratingId: c.ratingId };
  switch (f.why) {
    case 'threw':
      return new RewardMapperError(`threw on rating ${c.ratingId}: ${f.text}`, on);
    case 'returned':
      return new RewardMapperError(`returned ${f.text} for rating ${c.ratingId}; it must return a number from -1 to 1`, on);
    case 'timeout':
      return new RewardMapperError(`ran longer than ${MAPPER_CALL_MS} ms on rating ${c.ratingId} (a loop?)`, on);
    case 'memory':
    case 'heap':
      return new RewardMapperError(`used more memory than the sandbox allows (${f.why === 'heap' ? `${MAPPER_HEAP_MB} MB of heap` : `${MAPPER_MEMORY_MB} MB`}) on rating ${c.ratingId}`, on);
    default:
      return new RewardMapperError(`failed on rating ${c.ratingId}: ${f.text}`, on);
  }
}

function toCase(r: MapperCaseRow): MapperCase {
  return {
    ratingId: r.rating_id,
    turnId: r.turn_id,
    rating: { kind: r.kind, score: r.scale, reward: r.value, tags: JSON.parse(r.tags) as string[], comment: r.comment, correction: r.correction },
    turn: { source: r.source, length: r.response_len, promptLength: r.prompt_len },
  };
}

/** The newest live ratings, newest first: what a mapper is tried on before it is saved. */
export function recentMapperCases(store: Store, limit = MAPPER_CHECK_RATINGS): MapperCase[] {
  return store.rounds.recentMapperCases(limit).map(toCase);
}

/** The mapper cases of the given ratings, by rating id. */
export function mapperCasesOf(store: Store, ratingIds: number[]): Map<number, MapperCase> {
  const out = new Map<number, MapperCase>();
  for (const r of store.rounds.mapperCases(ratingIds)) out.set(r.rating_id, toCase(r));
  return out;
}

/** Runs `source` on the user's recent ratings; throws RewardMapperError at the first failure. */
export async function tryRewardMapper(store: Store, source: string, limit = MAPPER_CHECK_RATINGS): Promise<RewardMapperTrial> {
  const cases = recentMapperCases(store, limit);
  const rewards = await mapRewards(source, cases);
  const results = cases.map((c, i) => ({
    ratingId: c.ratingId,
    turnId: c.turnId,
    kind: c.rating.kind,
    score: c.rating.score,
    tags: c.rating.tags,
    source: c.turn.source,
    defaultReward: c.rating.reward,
    reward: rewards[i]!,
  }));
  return { results };
}

/**
 * The round's rewards (data.ts selectRound): the stored default rewards when no mapper is set, else the mapper's.
 * A mapper that fails on any rating of the round fails the round with its reason: the round's ratings stay pending.
 */
export async function roundRewards(store: Store, ratingIds: number[]): Promise<Map<number, number> | null> {
  const raw = readSettings(store)['training.rewardMapper'];
  if (raw === null || raw.trim() === '') return null;
  const cases = [...mapperCasesOf(store, ratingIds).values()];
  const rewards = await mapRewards(raw, cases);
  return new Map(cases.map((c, i) => [c.ratingId, rewards[i]!]));
}
