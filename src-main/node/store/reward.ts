// The reward model's tables (migration 0003): its versions with their heads and held-out metrics, and what a head
// predicted of a turn, with whether the turn was then asked about.
import type { RewardModelView } from '../../common/domain.ts';
import type { RewardHead } from '../../common/training/reward.ts';
import type { Sql } from './sql.ts';

interface RewardModelRow {
  id: number;
  model_id: string;
  version: number;
  base_model: string;
  adapter_version: number | null;
  run_id: number | null;
  created_at: number;
  ratings: number;
  head: string;
  metrics: string;
}

export interface NewRewardModel {
  modelId: string;
  baseModel: string;
  adapterVersion: number | null;
  runId: number | null;
  ratings: number;
  head: RewardHead;
  metrics: RewardModelView['metrics'];
}

export interface StoredRewardModel extends RewardModelView {
  head: RewardHead;
}

function view(r: RewardModelRow): StoredRewardModel {
  return {
    id: r.id,
    modelId: r.model_id,
    version: r.version,
    baseModel: r.base_model,
    adapterVersion: r.adapter_version,
    runId: r.run_id,
    createdAt: r.created_at,
    ratings: r.ratings,
    metrics: JSON.parse(r.metrics) as RewardModelView['metrics'],
    head: JSON.parse(r.head) as RewardHead,
  };
}

export class RewardModels {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  /** Stores a new version (the next number for the model). */
  insert(m: NewRewardModel): StoredRewardModel {
    return this.sql.write(() => {
      const next = (this.sql.stmt<{ v: number | null }>('SELECT max(version) AS v FROM reward_models WHERE model_id = ?').get(m.modelId)?.v ?? 0) + 1;
      const row = this.sql
        .stmt<RewardModelRow>(
          `INSERT INTO reward_models (model_id, version, base_model, adapter_version, run_id, created_at, ratings, head, metrics)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
        )
        .get(m.modelId, next, m.baseModel, m.adapterVersion, m.runId, this.sql.now(), m.ratings, JSON.stringify(m.head), JSON.stringify(m.metrics))!;
      this.sql.audit('system', 'trainRewardModel', `reward_model:${row.id}`, { modelId: m.modelId, version: next, ratings: m.ratings });
      return view(row);
    });
  }

  latest(modelId: string): StoredRewardModel | null {
    const r = this.sql.stmt<RewardModelRow>('SELECT * FROM reward_models WHERE model_id = ? ORDER BY version DESC LIMIT 1').get(modelId);
    return r === undefined ? null : view(r);
  }

  /** Versions of the model, newest first, without their heads. */
  list(modelId: string, limit = 100): RewardModelView[] {
    return this.sql
      .stmt<RewardModelRow>('SELECT * FROM reward_models WHERE model_id = ? ORDER BY version DESC LIMIT ?')
      .all(modelId, limit)
      .map((r) => {
        const { head: _head, ...v } = view(r);
        return v;
      });
  }

  recordPrediction(turnId: number, rewardModelId: number, p: number, asked: boolean): void {
    this.sql.write(() => {
      this.sql
        .stmt('INSERT INTO reward_predictions (turn_id, reward_model_id, p, asked, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET p = excluded.p, asked = excluded.asked')
        .run(turnId, rewardModelId, p, asked ? 1 : 0, this.sql.now());
    });
  }

  prediction(turnId: number, rewardModelId: number): { p: number; asked: boolean } | null {
    const r = this.sql.stmt<{ p: number; asked: number }>('SELECT p, asked FROM reward_predictions WHERE turn_id = ? AND reward_model_id = ?').get(turnId, rewardModelId);
    return r === undefined ? null : { p: r.p, asked: r.asked === 1 };
  }

  /** The newest reward model's score of a turn (its predicted chance of Good, whether the popup then asked), or null. */
  latestPrediction(turnId: number): { p: number; asked: boolean; version: number } | null {
    const r = this.sql
      .stmt<{ p: number; asked: number; version: number }>(
        'SELECT p.p, p.asked, m.version FROM reward_predictions p JOIN reward_models m ON m.id = p.reward_model_id WHERE p.turn_id = ? ORDER BY m.id DESC LIMIT 1',
      )
      .get(turnId);
    return r === undefined ? null : { p: r.p, asked: r.asked === 1, version: r.version };
  }

  notAsked(rewardModelId: number): number {
    return this.sql.stmt<{ n: number }>('SELECT count(*) AS n FROM reward_predictions WHERE reward_model_id = ? AND asked = 0').get(rewardModelId)!.n;
  }

  /** Unrated, unasked turns a head scored (pseudo-labels, only when reward.pseudoLabelWeight > 0). */
  unaskedPredictions(rewardModelId: number): { turnId: number; p: number }[] {
    return this.sql
      .stmt<{ turn_id: number; p: number }>(
        `SELECT p.turn_id, p.p FROM reward_predictions p JOIN turns t ON t.id = p.turn_id
         WHERE p.reward_model_id = ? AND p.asked = 0 AND NOT EXISTS (SELECT 1 FROM ratings r WHERE r.turn_id = p.turn_id AND r.undone_at IS NULL)`,
      )
      .all(rewardModelId)
      .map((r) => ({ turnId: r.turn_id, p: r.p }));
  }
}
