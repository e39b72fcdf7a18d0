// The runs table (one row per training round) and run_samples (what a round did with each rating it drew or
// scored). The scheduler starts runs, the worker and the scheduler end them, the round records its outcome.
import type { Actor } from '../../common/api.ts';
import type { RunView } from '../../common/domain.ts';
import { ConflictError } from '../../common/errors.ts';
import { runView, type RunRow } from './rows.ts';
import type { Sql } from './sql.ts';

export interface NewRun {
  modelId: string;
  status: RunView['status'];
  trigger: RunView['trigger'];
  fromVersion?: number | null;
  config?: unknown;
}

/** How a round ended without a version: failed (with its error) or cancelled by the user. */
export type RunEnd = 'failed' | 'cancelled';

export class Runs {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  insert(r: NewRun, actor: Actor): RunView {
    return this.sql.write(() => {
      const row = this.sql
        .stmt<RunRow>(
          `INSERT INTO runs (model_id, status, trigger, created_at, from_version, config) VALUES (?, ?, ?, ?, ?, ?)
           RETURNING *, 0 AS samples`,
        )
        .get(r.modelId, r.status, r.trigger, this.sql.now(), r.fromVersion ?? null, JSON.stringify(r.config ?? {}))!;
      this.sql.audit(actor, 'insertRun', `run:${row.id}`, { modelId: r.modelId });
      return runView(row);
    });
  }

  /**
   * Starts a round: a `running` row with its start time, refused (ConflictError) while another run of any model is
   * running. One transaction, so two processes cannot both start one.
   */
  start(modelId: string, trigger: RunView['trigger'], fromVersion: number | null, config: unknown = {}): RunView {
    return this.sql.write(() => {
      const busy = this.sql.stmt<{ id: number }>(`SELECT id FROM runs WHERE status = 'running' LIMIT 1`).get();
      if (busy !== undefined) throw new ConflictError(`training run ${busy.id} is already running`, { runId: busy.id });
      const r = this.insert({ modelId, status: 'running', trigger, fromVersion, config }, 'system');
      const startedAt = this.sql.now();
      this.sql.stmt('UPDATE runs SET started_at = ? WHERE id = ?').run(startedAt, r.id);
      return { ...r, startedAt };
    });
  }

  get(id: number): RunView | null {
    const row = this.sql
      .stmt<RunRow>('SELECT r.*, (SELECT count(*) FROM run_samples s WHERE s.run_id = r.id) AS samples FROM runs r WHERE r.id = ?')
      .get(id);
    return row === undefined ? null : runView(row);
  }

  list(modelId: string, limit: number): RunView[] {
    return this.sql
      .stmt<RunRow>(
        `SELECT r.*, (SELECT count(*) FROM run_samples s WHERE s.run_id = r.id) AS samples
         FROM runs r WHERE r.model_id = ? ORDER BY r.created_at DESC, r.id DESC LIMIT ?`,
      )
      .all(modelId, limit)
      .map(runView);
  }

  /** The ids of every run still marked running (any model). */
  running(): number[] {
    return this.sql.stmt<{ id: number }>(`SELECT id FROM runs WHERE status = 'running'`).all().map((r) => r.id);
  }

  /** When the model's newest round started, or null before the first (the schedule's clock). */
  lastStartedAt(modelId: string): number | null {
    return this.sql.stmt<{ at: number | null }>('SELECT MAX(started_at) AS at FROM runs WHERE model_id = ?').get(modelId)?.at ?? null;
  }

  /**
   * Ends a run that is still running as failed or cancelled, with its reason. Returns false when the run had
   * already ended (its own outcome stands: a worker that recorded `succeeded` or `cancelled` is not overwritten).
   */
  end(id: number, status: RunEnd, error: string): boolean {
    return this.sql.stmt(`UPDATE runs SET status = ?, finished_at = ?, error = ? WHERE id = ? AND status = 'running'`).run(status, this.sql.now(), error, id).changes > 0;
  }

  /** Records a finished round: its metrics, the version it wrote and the settings it ran with. */
  succeed(id: number, o: { metrics: unknown; version: number; config: unknown }): void {
    this.sql
      .stmt(`UPDATE runs SET status = 'succeeded', finished_at = ?, metrics = ?, adapter_version = ?, config = ? WHERE id = ?`)
      .run(this.sql.now(), JSON.stringify(o.metrics), o.version, JSON.stringify(o.config), id);
  }

  /** What the round did with one rating: drew it to train (`pending`, `replay`) or scored it (`heldout`). */
  recordSample(runId: number, ratingId: number, role: string, advantage: number | null): void {
    this.sql.stmt('INSERT OR REPLACE INTO run_samples (run_id, rating_id, role, advantage) VALUES (?, ?, ?, ?)').run(runId, ratingId, role, advantage);
  }

  /**
   * The model's latest finished round when its version was rejected, with how many of the ratings it drew are still
   * pending; null when that round's version went live, or no round finished.
   */
  lastRejected(modelId: string): { runId: number; pending: number } | null {
    const last = this.sql
      .stmt<{ id: number; status: string | null }>(
        `SELECT r.id, a.status FROM runs r LEFT JOIN adapters a ON a.run_id = r.id WHERE r.model_id = ? AND r.status = 'succeeded' ORDER BY r.id DESC LIMIT 1`,
      )
      .get(modelId);
    if (last === undefined || last.status !== 'rejected') return null;
    const pending = this.sql
      .stmt<{ n: number }>(
        `SELECT count(*) AS n FROM run_samples s JOIN ratings r ON r.id = s.rating_id WHERE s.run_id = ? AND s.role = 'pending' AND r.run_id IS NULL AND r.undone_at IS NULL`,
      )
      .get(last.id)!.n;
    return { runId: last.id, pending };
  }

  /** Pending ratings of the model that a round has not drawn or scored since round `runId` (the scheduler's retry count). */
  pendingSince(modelId: string, runId: number): number {
    return this.sql
      .stmt<{ n: number }>(
        `SELECT count(*) AS n FROM ratings r WHERE r.model_id = ? AND r.run_id IS NULL AND r.undone_at IS NULL AND r.parked IS NULL
           AND NOT EXISTS (SELECT 1 FROM run_samples s WHERE s.rating_id = r.id AND s.run_id >= ?)`,
      )
      .get(modelId, runId)!.n;
  }
}
