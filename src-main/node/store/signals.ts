// What the user did after an answer (migration 0006): the evidence weak labels are read from
// (common/implicit/reader.ts). The evidence is text a person wrote, sealed like a turn's when encryption is on.
import type { Actor } from '../../common/api.ts';
import type { Signal, SignalKind } from '../../common/implicit/signals.ts';
import type { Sql } from './sql.ts';

/** The queries whose plans migrate.test.ts checks. */
export const SIGNALS_Q = {
  ofTurn: 'SELECT * FROM signals WHERE turn_id = ? ORDER BY id',
  // The answer a new prompt reacts to: the newest earlier turn of the same session and source. A subagent's turn
  // (event id `<session>:agent:…`, integrations/claude/handler.ts) answered its parent agent, not the user. Two turns
  // of one millisecond are ordered by id (the order they were stored).
  // Unrated answers with live signals, newest first (the Rate screen's suggestions).
  suggested: `SELECT DISTINCT s.turn_id FROM signals s JOIN turns t ON t.id = s.turn_id
    WHERE s.dismissed_at IS NULL AND t.state = 'unrated' ORDER BY s.turn_id DESC`,
  previousInSession: `SELECT id, prompt, created_at FROM turns
    WHERE session = ? AND source = ? AND created_at <= ? AND (created_at < ? OR id < ?) AND event_id NOT LIKE '%:agent:%'
    ORDER BY created_at DESC, id DESC LIMIT 1`,
} as const;

interface SignalRow {
  id: number;
  turn_id: number;
  kind: SignalKind;
  from_turn_id: number | null;
  evidence: unknown;
  score: number | null;
  detail: string;
  created_at: number;
  dismissed_at: number | null;
}

/** A signal as it is recorded: the store gives it its id and time, and it starts undismissed. */
export type NewSignal = Omit<Signal, 'id' | 'createdAt' | 'dismissedAt'>;

/** What the store lends this module: its statements and clock, and its sealing of text. */
export interface SignalsSql extends Sql {
  seal(text: string): string | Buffer;
  openText(v: unknown): string;
}

export class Signals {
  private readonly sql: SignalsSql;

  constructor(sql: SignalsSql) {
    this.sql = sql;
  }

  private out(r: SignalRow): Signal {
    return {
      id: r.id,
      turnId: r.turn_id,
      kind: r.kind,
      fromTurnId: r.from_turn_id,
      evidence: this.sql.openText(r.evidence),
      score: r.score,
      detail: JSON.parse(r.detail) as Record<string, unknown>,
      createdAt: r.created_at,
      dismissedAt: r.dismissed_at,
    };
  }

  /** Stores a signal; the first of its kind for a turn wins (null when one was already there). */
  record(s: NewSignal): Signal | null {
    return this.sql.write(() => {
      const row = this.sql
        .stmt<SignalRow>(
          `INSERT INTO signals (turn_id, kind, from_turn_id, evidence, score, detail, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (turn_id, kind) DO NOTHING RETURNING *`,
        )
        .get(s.turnId, s.kind, s.fromTurnId, this.sql.seal(s.evidence), s.score, JSON.stringify(s.detail), this.sql.now());
      return row === undefined ? null : this.out(row);
    });
  }

  /** Marks the turn's signals dismissed: they stay as evidence and suggest no label. Returns how many it marked. */
  dismiss(turnId: number, actor: Actor): number {
    return this.sql.write(() => {
      const n = this.sql.stmt('UPDATE signals SET dismissed_at = ? WHERE turn_id = ? AND dismissed_at IS NULL').run(this.sql.now(), turnId).changes;
      if (n > 0) this.sql.audit(actor, 'dismissWeakLabel', `turn:${turnId}`, { signals: n });
      return n;
    });
  }

  /** Unrated turns with signals not dismissed, newest first, for as long as `take` asks for more. */
  suggested(take: (turnId: number) => boolean): void {
    for (const r of this.sql.stmt<{ turn_id: number }>(SIGNALS_Q.suggested).iterate()) if (!take(r.turn_id)) break;
  }

  ofTurn(turnId: number): Signal[] {
    return this.sql.stmt<SignalRow>(SIGNALS_Q.ofTurn).all(turnId).map((r) => this.out(r));
  }

  /** The turn a new turn's prompt reacts to (SIGNALS_Q.previousInSession), with its prompt, or null. */
  previousInSession(t: { id: number; session: string; source: string; createdAt: number }): { id: number; prompt: string; createdAt: number } | null {
    const r = this.sql.stmt<{ id: number; prompt: string; created_at: number }>(SIGNALS_Q.previousInSession).get(t.session, t.source, t.createdAt, t.createdAt, t.id);
    return r === undefined ? null : { id: r.id, prompt: r.prompt, createdAt: r.created_at };
  }

  /** Every row's sealed text, for store.resealAll. */
  resealAll(seal: (t: string) => string | Buffer): number {
    const rows = this.sql.stmt<SignalRow>('SELECT id, evidence FROM signals').all();
    const up = this.sql.stmt('UPDATE signals SET evidence = ? WHERE id = ?');
    for (const r of rows) up.run(seal(this.sql.openText(r.evidence)), r.id);
    return rows.length;
  }
}
