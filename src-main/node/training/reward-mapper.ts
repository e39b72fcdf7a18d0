// The user's reward mapper (issue #15; seed 000's `reward_mapper`): a small JavaScript function
// `(rating, turn) => reward in [-1, 1]` that replaces the default mapping (common/rewards.ts rewardOf) when
// `training.rewardMapper` is set. It runs in a node:vm context of its own: no require, no process, no I/O, no
// eval/Function (codeGeneration off), a time limit per call, and promises never leave it (microtaskMode).
// Only JSON crosses into the context (parsed there), so the function never holds an object of the host realm, whose
// constructor chain would reach the host's Function and process. node:vm is not a security boundary against hostile
// code (Node's docs say so); the mapper is the user's own code, and the sandbox is there so a mistake (a loop, a
// typo, a NaN) is a clear error instead of a hung or wrong round.
import vm from 'node:vm';
import type { RewardMapperTrial } from '../../common/api.ts';
import type { RatingKind } from '../../common/domain.ts';
import { BadInputError } from '../../common/errors.ts';
import { readSettings } from '../store/settings.ts';
import type { MapperCaseRow } from '../store/rounds.ts';
import type { Store } from '../store/store.ts';

/**
 * Milliseconds one call may run before it is stopped. The clock is wall time, and rounds run beside training, so a
 * one-line mapper on a busy machine took over 50 ms (CI, load 11): the bound is for loops, not for slow machines.
 */
export const MAPPER_CALL_MS = 500;
/** How many recent ratings a mapper is tried on before it is saved. */
export const MAPPER_CHECK_RATINGS = 200;

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

export interface RewardMapper {
  /** The reward for one rating; throws RewardMapperError when the function throws, runs too long or returns a bad value. */
  map(c: MapperCase): number;
}

/** Compiles the mapper's source (a function expression: `(rating, turn) => …` or `function (rating, turn) { … }`). */
export function compileRewardMapper(source: string): RewardMapper {
  const context = vm.createContext(Object.create(null) as object, {
    name: 'rein-reward-mapper',
    codeGeneration: { strings: false, wasm: false },
    microtaskMode: 'afterEvaluate',
  });
  let fnType: unknown;
  try {
    // The parentheses make a function declaration an expression; a statement list is a syntax error here.
    fnType = new vm.Script(`globalThis.__mapper = (\n${source}\n);\ntypeof globalThis.__mapper`, { filename: 'reward-mapper.js' }).runInContext(context, { timeout: MAPPER_CALL_MS });
  } catch (e) {
    throw new RewardMapperError(`does not compile: ${describe(e)}`);
  }
  if (fnType !== 'function') throw new RewardMapperError(`must be a function (rating, turn) => reward, got ${String(fnType)}`);
  const call = new vm.Script('globalThis.__mapper(...JSON.parse(globalThis.__args))', { filename: 'reward-mapper-call.js' });
  return {
    map(c) {
      (context as { __args?: string }).__args = JSON.stringify([c.rating, c.turn]);
      let out: unknown;
      try {
        out = call.runInContext(context, { timeout: MAPPER_CALL_MS });
      } catch (e) {
        const timedOut = (e as { code?: string }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT';
        throw new RewardMapperError(
          timedOut ? `ran longer than ${MAPPER_CALL_MS} ms on rating ${c.ratingId} (a loop?)` : `threw on rating ${c.ratingId}: ${describe(e)}`,
          { ratingId: c.ratingId },
        );
      }
      if (typeof out !== 'number' || !Number.isFinite(out) || out < -1 || out > 1) {
        const shown = typeof out === 'number' ? String(out) : typeof out;
        throw new RewardMapperError(`returned ${shown} for rating ${c.ratingId}; it must return a number from -1 to 1`, { ratingId: c.ratingId });
      }
      return out;
    },
  };
}

// An error thrown inside the context is of the context's realm (not `instanceof Error` here), so read it by shape.
function describe(e: unknown): string {
  if (e !== null && typeof e === 'object' && 'message' in e) {
    const name = 'name' in e ? String(e.name) : 'Error';
    return `${name}: ${String(e.message).slice(0, 300)}`;
  }
  return String(e).slice(0, 300);
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
export function tryRewardMapper(store: Store, source: string, limit = MAPPER_CHECK_RATINGS): RewardMapperTrial {
  const mapper = compileRewardMapper(source);
  const results = recentMapperCases(store, limit).map((c) => ({
    ratingId: c.ratingId,
    turnId: c.turnId,
    kind: c.rating.kind,
    score: c.rating.score,
    tags: c.rating.tags,
    source: c.turn.source,
    defaultReward: c.rating.reward,
    reward: mapper.map(c),
  }));
  return { results };
}

/**
 * The round's rewards (data.ts selectRound): the stored default rewards when no mapper is set, else the mapper's.
 * A mapper that fails on any rating of the round fails the round with its reason: the round's ratings stay pending.
 */
export function roundRewards(store: Store, ratingIds: number[]): Map<number, number> | null {
  const raw = readSettings(store)['training.rewardMapper'];
  if (raw === null || raw.trim() === '') return null;
  const mapper = compileRewardMapper(raw);
  const out = new Map<number, number>();
  for (const [id, c] of mapperCasesOf(store, ratingIds)) out.set(id, mapper.map(c));
  return out;
}
