// Arena matches (migration 0003) and what the Versions screen's statistics read: the voted matches of a model, and
// the good and bad counts of the answers each version produced in real use. Also the chat's lookup of the turn the
// capture proxy stored for a request (by the event id the chat gave it).
import type { Actor } from '../../common/api.ts';
import type { ArenaVote, GoodCount, VotedMatch } from '../../common/chat/arena.ts';
import { NotFoundError, ReinError } from '../../common/errors.ts';
import type { Sql } from './sql.ts';

/** The queries whose plans migrate.test.ts checks. */
export const ARENA_Q = {
  voted: 'SELECT version_a, version_b, vote, voted_at FROM arena_matches WHERE model_id = ? AND vote IS NOT NULL ORDER BY voted_at',
} as const;

export interface ArenaMatchRow {
  id: number;
  model_id: string;
  prompt: string;
  turn_a: number;
  turn_b: number;
  version_a: number;
  version_b: number;
  created_at: number;
  vote: ArenaVote | null;
  voted_at: number | null;
  rater: string | null;
}

export interface NewArenaMatch {
  modelId: string;
  prompt: string;
  turnA: number;
  turnB: number;
  versionA: number;
  versionB: number;
}

export class Arena {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  create(m: NewArenaMatch, actor: Actor): ArenaMatchRow {
    return this.sql.write(() => {
      const row = this.sql
        .stmt<ArenaMatchRow>(
          'INSERT INTO arena_matches (model_id, prompt, turn_a, turn_b, version_a, version_b, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING *',
        )
        .get(m.modelId, m.prompt, m.turnA, m.turnB, m.versionA, m.versionB, this.sql.now())!;
      this.sql.audit(actor, 'arenaStart', `arena:${row.id}`, { turns: [m.turnA, m.turnB] });
      return row;
    });
  }

  get(id: number): ArenaMatchRow {
    const r = this.sql.stmt<ArenaMatchRow>('SELECT * FROM arena_matches WHERE id = ?').get(id);
    if (r === undefined) throw new NotFoundError(`arena match ${id} does not exist`, { matchId: id });
    return r;
  }

  /** Records the vote; a match is voted on once. */
  vote(id: number, vote: ArenaVote, rater: string, actor: Actor): ArenaMatchRow {
    return this.sql.write(() => {
      const before = this.get(id);
      if (before.vote !== null) throw new ReinError('conflict', `arena match ${id} was already voted on (${before.vote})`, { field: 'matchId' });
      const row = this.sql
        .stmt<ArenaMatchRow>('UPDATE arena_matches SET vote = ?, voted_at = ?, rater = ? WHERE id = ? RETURNING *')
        .get(vote, this.sql.now(), rater, id)!;
      this.sql.audit(actor, 'arenaVote', `arena:${id}`, { vote });
      return row;
    });
  }

  voted(modelId: string): VotedMatch[] {
    return this.sql
      .stmt<{ version_a: number; version_b: number; vote: ArenaVote; voted_at: number }>(
        ARENA_Q.voted,
      )
      .all(modelId)
      .map((r) => ({ versionA: r.version_a, versionB: r.version_b, vote: r.vote, votedAt: r.voted_at }));
  }

  /** Live ratings of the answers each version produced, arena answers left out (they are counted as votes). */
  goodCounts(modelId: string): GoodCount[] {
    return this.sql
      .stmt<GoodCount>(
        `SELECT t.adapter_version AS version, SUM(r.value > 0) AS good, SUM(r.value < 0) AS bad
           FROM ratings r JOIN turns t ON t.id = r.turn_id
          WHERE r.model_id = ? AND r.undone_at IS NULL AND t.adapter_version IS NOT NULL AND t.source <> 'arena'
          GROUP BY t.adapter_version`,
      )
      .all(modelId);
  }

  /** The turn stored for (source, eventId), or null. */
  turnId(source: string, eventId: string): number | null {
    return this.sql.stmt<{ id: number }>('SELECT id FROM turns WHERE source = ? AND event_id = ?').get(source, eventId)?.id ?? null;
  }
}
