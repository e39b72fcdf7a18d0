// What a training round reads from the ratings and turns: the rated turns it selects from (training/data.ts), the
// live rating ids its baseline replays, the runs of a lineage that reaches a pruned version, and the cases a reward
// mapper is tried on (training/reward-mapper.ts). Rows, not domain views: the training modules map them.
import type { RatingKind } from '../../common/domain.ts';
import type { Sql } from './sql.ts';

/** A live rating with the turn it rates. */
export interface RatedTurnRow {
  rating_id: number;
  run_id: number | null;
  turn_id: number;
  value: number;
  correction: string | null;
  created_at: number;
  prompt: string;
  context: string;
  response: string;
  tokens: Buffer | null;
  logprobs: Buffer | null;
  source: string;
  policy: string | null;
  /** Why the rounds cannot train it (migration 0006), or null. */
  parked: string | null;
}

/** What a reward mapper sees of one live rating. */
export interface MapperCaseRow {
  rating_id: number;
  turn_id: number;
  kind: RatingKind;
  value: number;
  scale: number | null;
  tags: string;
  comment: string | null;
  correction: string | null;
  source: string;
  response_len: number;
  prompt_len: number;
}

const RATED = `SELECT r.id AS rating_id, r.run_id, r.turn_id, r.value, r.correction, r.created_at, t.prompt, t.context, t.response, t.tokens, t.logprobs, t.source, t.policy, r.parked
  FROM ratings r JOIN turns t ON t.id = r.turn_id WHERE r.model_id = ? AND r.undone_at IS NULL`;

const CASE = `SELECT r.id AS rating_id, r.turn_id, r.kind, r.value, r.scale, r.tags, r.comment, r.correction, t.source,
    length(rein_text(t.response)) AS response_len, length(rein_text(t.prompt)) AS prompt_len
  FROM ratings r JOIN turns t ON t.id = r.turn_id WHERE r.undone_at IS NULL`;

export class Rounds {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  /**
   * The model's live ratings with their turns, oldest first: the pending ones (no version trained them, not parked),
   * the trained ones, or the untrained ones (pending and parked: what a round tries to encode first).
   */
  ratedTurns(modelId: string, which: 'pending' | 'trained' | 'untrained'): RatedTurnRow[] {
    const cond = which === 'pending' ? 'r.run_id IS NULL AND r.parked IS NULL' : which === 'trained' ? 'r.run_id IS NOT NULL' : 'r.run_id IS NULL';
    return this.sql.stmt<RatedTurnRow>(`${RATED} AND ${cond} ORDER BY r.created_at, r.id`).all(modelId);
  }

  /**
   * Parks an untrained rating with why the rounds cannot train it (null: pending again). Returns whether the rating
   * changed; a rating trained, undone or deleted meanwhile is left as it is.
   */
  park(ratingId: number, why: string | null): boolean {
    return (
      this.sql
        .stmt('UPDATE ratings SET parked = ?, parked_at = ? WHERE id = ? AND run_id IS NULL AND undone_at IS NULL AND parked IS NOT ?')
        .run(why, why === null ? null : this.sql.now(), ratingId, why).changes > 0
    );
  }

  /** The model's untrained ratings that a round has already held out for its gate (run_samples role heldout). */
  heldOutBefore(modelId: string): Set<number> {
    const rows = this.sql
      .stmt<{ rating_id: number }>(
        `SELECT DISTINCT s.rating_id FROM run_samples s JOIN ratings r ON r.id = s.rating_id WHERE r.model_id = ? AND r.run_id IS NULL AND s.role = 'heldout'`,
      )
      .all(modelId);
    return new Set(rows.map((r) => r.rating_id));
  }

  /** The ids of the model's live ratings. */
  liveRatingIds(modelId: string): number[] {
    return this.sql.stmt<{ id: number }>('SELECT id FROM ratings WHERE model_id = ? AND undone_at IS NULL').all(modelId).map((r) => r.id);
  }

  /**
   * The succeeded runs that made version `version` of the model or one before it, except those whose version is kept
   * as rolled back or rejected: the lineage below a version whose row was pruned.
   */
  runsUpTo(modelId: string, version: number): number[] {
    return this.sql
      .stmt<{ id: number }>(
        `SELECT r.id FROM runs r WHERE r.model_id = ? AND r.status = 'succeeded' AND r.adapter_version <= ?
           AND NOT EXISTS (SELECT 1 FROM adapters a WHERE a.model_id = r.model_id AND a.version = r.adapter_version AND a.status IN ('rolled_back', 'rejected'))`,
      )
      .all(modelId, version)
      .map((r) => r.id);
  }

  /** The newest live ratings (any model), newest first. */
  recentMapperCases(limit: number): MapperCaseRow[] {
    return this.sql.stmt<MapperCaseRow>(`${CASE} ORDER BY r.created_at DESC, r.id DESC LIMIT ?`).all(limit);
  }

  /** The given live ratings. */
  mapperCases(ratingIds: readonly number[]): MapperCaseRow[] {
    if (ratingIds.length === 0) return [];
    return this.sql.stmt<MapperCaseRow>(`${CASE} AND r.id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(ratingIds));
  }
}
