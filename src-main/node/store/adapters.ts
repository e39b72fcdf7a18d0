// The adapters table: one row per adapter version of a model, with its status (candidate, active, inactive,
// rolled_back, rejected), its directory, lineage (run, parent version), the EMA it was trained at, its gate
// metrics and publish outcomes. At most one version of a model is active: `activate` is the only way to change which.
import type { Actor } from '../../common/api.ts';
import type { AdapterView } from '../../common/domain.ts';
import { adapterView, type AdapterRow } from './rows.ts';
import type { Sql } from './sql.ts';

export interface NewAdapter {
  modelId: string;
  version: number;
  status: AdapterView['status'];
  path: string;
  runId?: number | null;
  parentVersion?: number | null;
  emaValue?: number | null;
  metrics?: unknown;
  reason?: string | null;
}

export class Adapters {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  insert(a: NewAdapter, actor: Actor): AdapterView {
    return this.sql.write(() => {
      const row = this.sql
        .stmt<AdapterRow>(
          `INSERT INTO adapters (model_id, version, status, path, run_id, parent_version, created_at, ema_value, metrics, reason)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
        )
        .get(a.modelId, a.version, a.status, a.path, a.runId ?? null, a.parentVersion ?? null, this.sql.now(), a.emaValue ?? null, JSON.stringify(a.metrics ?? {}), a.reason ?? null)!;
      this.sql.audit(actor, 'insertAdapter', `adapter:${row.id}`, { modelId: a.modelId, version: a.version });
      return adapterView(row);
    });
  }

  /** Every version of the model, newest first. */
  list(modelId: string): AdapterView[] {
    return this.sql.stmt<AdapterRow>('SELECT * FROM adapters WHERE model_id = ? ORDER BY version DESC').all(modelId).map(adapterView);
  }

  active(modelId: string): AdapterView | null {
    const r = this.sql.stmt<AdapterRow>(`SELECT * FROM adapters WHERE model_id = ? AND status = 'active'`).get(modelId);
    return r === undefined ? null : adapterView(r);
  }

  byVersion(modelId: string, version: number): AdapterView | null {
    const r = this.sql.stmt<AdapterRow>('SELECT * FROM adapters WHERE model_id = ? AND version = ?').get(modelId, version);
    return r === undefined ? null : adapterView(r);
  }

  /** The newest version below `version` that was live and stepped aside (`inactive`): rollback's default target. */
  previousInactive(modelId: string, version: number): AdapterView | null {
    const r = this.sql
      .stmt<AdapterRow>(`SELECT * FROM adapters WHERE model_id = ? AND version < ? AND status = 'inactive' ORDER BY version DESC LIMIT 1`)
      .get(modelId, version);
    return r === undefined ? null : adapterView(r);
  }

  /** The model's versions in one status, newest first. */
  withStatus(modelId: string, status: AdapterView['status']): AdapterView[] {
    return this.sql.stmt<AdapterRow>('SELECT * FROM adapters WHERE model_id = ? AND status = ? ORDER BY version DESC').all(modelId, status).map(adapterView);
  }

  /** The directory of every version of every model: what removeOrphanVersions keeps. */
  paths(): string[] {
    return this.sql.stmt<{ path: string }>('SELECT path FROM adapters').all().map((r) => r.path);
  }

  /** The highest version number the model has a row for (0 when none). */
  maxVersion(modelId: string): number {
    return this.sql.stmt<{ v: number | null }>('SELECT max(version) AS v FROM adapters WHERE model_id = ?').get(modelId)?.v ?? 0;
  }

  /**
   * Makes adapter `id` the model's active version (null: none, the base model serves), and gives the version that was
   * active the status `previous` becomes: `inactive` when a round's version replaces it, `rolled_back` when the user
   * rolls back. Returns the version that was active. The caller holds the write transaction.
   */
  activate(modelId: string, id: number | null, previous: 'inactive' | 'rolled_back'): AdapterView | null {
    return this.sql.write(() => {
      const current = this.active(modelId);
      if (current !== null && current.id === id) return current;
      if (current !== null) this.sql.stmt('UPDATE adapters SET status = ? WHERE id = ?').run(previous, current.id);
      if (id !== null) this.sql.stmt(`UPDATE adapters SET status = 'active' WHERE id = ?`).run(id);
      return current;
    });
  }

  /** The runs and parent of a version: its lineage link. */
  lineage(modelId: string, version: number): { runId: number | null; parentVersion: number | null } | null {
    const r = this.sql.stmt<{ run_id: number | null; parent_version: number | null }>('SELECT run_id, parent_version FROM adapters WHERE model_id = ? AND version = ?').get(modelId, version);
    return r === undefined ? null : { runId: r.run_id, parentVersion: r.parent_version };
  }

  /** Deletes version rows (their directories are the caller's), with one audit row. */
  delete(modelId: string, ids: readonly { id: number; version: number }[], audit: { action: string; detail: Record<string, unknown> }): void {
    this.sql.write(() => {
      for (const r of ids) this.sql.stmt('DELETE FROM adapters WHERE id = ?').run(r.id);
      this.sql.audit('system', audit.action, `model:${modelId}`, { versions: ids.map((r) => r.version), ...audit.detail });
    });
  }

  /** Merges one target's publish outcome into the adapter's publish record. False when the adapter is gone. */
  recordPublish(adapterId: number, target: string, outcome: AdapterView['publish'][string]): boolean {
    return this.sql.write(() => {
      const row = this.sql.stmt<{ publish: string }>('SELECT publish FROM adapters WHERE id = ?').get(adapterId);
      if (row === undefined) return false;
      const rec = JSON.parse(row.publish) as AdapterView['publish'];
      rec[target] = outcome;
      this.sql.stmt('UPDATE adapters SET publish = ? WHERE id = ?').run(JSON.stringify(rec), adapterId);
      this.sql.audit('system', 'publish', `adapter:${adapterId}`, { target, ok: outcome.ok, message: outcome.message });
      return true;
    });
  }
}
