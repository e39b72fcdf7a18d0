// Row shapes of the tables (migration 0001) and their mapping to the domain views in common/domain.ts.
import type { AdapterView, RatingKind, RatingView, RunView, Turn, TurnState, TurnSummary } from '../../common/domain.ts';
import { decodeLogprobs, decodeTokens, parseJson } from './codec.ts';

export interface TurnRow {
  id: number;
  source: string;
  session: string | null;
  event_id: string;
  created_at: number;
  prompt: string;
  context: string;
  response: string;
  model: string | null;
  tokens: Buffer | null;
  logprobs: Buffer | null;
  adapter_version: number | null;
  /** JSON of a TurnPolicy (common/api.ts), or null. */
  policy: string | null;
  state: TurnState;
  truncated: number;
}

/** The columns a summary needs: previews instead of the full text. */
export type TurnSummaryRow = Omit<TurnRow, 'prompt' | 'response' | 'context' | 'tokens' | 'logprobs' | 'policy' | 'truncated'> & {
  prompt_preview: string;
  response_preview: string;
  on_policy: number;
  blind: number;
};

export const PREVIEW_CHARS = 200;

/**
 * 1 for an arena answer whose match is not voted on yet (or not recorded yet: the proxy stores both answers before
 * arenaStart records the pair). The arena is blind, so such a turn's views leave out what names its version: the
 * adapter version, and the model name (an upstream serves each published version under its own).
 */
export const ARENA_BLIND = `CASE WHEN turns.source = 'arena' THEN NOT EXISTS (SELECT 1 FROM arena_matches m
  WHERE (m.turn_a = turns.id OR m.turn_b = turns.id) AND m.vote IS NOT NULL) ELSE 0 END AS blind`;

export const TURN_SUMMARY_COLUMNS = `id, source, session, event_id, created_at, model, adapter_version, state,
  substr(rein_text(prompt), 1, ${PREVIEW_CHARS}) AS prompt_preview, substr(rein_text(response), 1, ${PREVIEW_CHARS}) AS response_preview,
  tokens IS NOT NULL AS on_policy, ${ARENA_BLIND}`;

export interface RatingRow {
  id: number;
  turn_id: number;
  model_id: string;
  kind: RatingKind;
  value: number;
  scale: number | null;
  correction: string | null;
  tags: string;
  comment: string | null;
  rater: string;
  created_at: number;
  undone_at: number | null;
  run_id: number | null;
  /** Why the rounds cannot train it (migration 0006), or null. */
  parked: string | null;
}

export interface RunRow {
  id: number;
  model_id: string;
  status: RunView['status'];
  trigger: RunView['trigger'];
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  from_version: number | null;
  config: string;
  metrics: string | null;
  error: string | null;
  adapter_version: number | null;
  samples: number;
}

export interface AdapterRow {
  id: number;
  model_id: string;
  version: number;
  status: AdapterView['status'];
  path: string;
  run_id: number | null;
  parent_version: number | null;
  created_at: number;
  ema_value: number | null;
  metrics: string;
  reason: string | null;
  publish: string;
}

export function ratingView(r: RatingRow, lastRound: RatingView['lastRound'] = null): RatingView {
  return {
    id: r.id,
    turnId: r.turn_id,
    kind: r.kind,
    value: r.value,
    scale: r.scale,
    correction: r.correction,
    tags: parseJson<string[]>(r.tags, []),
    comment: r.comment,
    rater: r.rater,
    modelId: r.model_id,
    createdAt: r.created_at,
    undone: r.undone_at !== null,
    runId: r.run_id,
    lastRound,
    parked: r.run_id === null ? (r.parked ?? null) : null,
  };
}

export function turnSummary(r: TurnSummaryRow, rating: RatingView | null): TurnSummary {
  return {
    id: r.id,
    source: r.source,
    session: r.session,
    eventId: r.event_id,
    createdAt: r.created_at,
    model: r.blind === 1 ? null : r.model,
    promptPreview: r.prompt_preview,
    responsePreview: r.response_preview,
    state: r.state,
    rating,
    onPolicy: r.on_policy === 1,
  };
}

/** A turn's full view; `blind` (ARENA_BLIND) leaves out its version and model name. */
export function turnView(r: TurnRow & { blind: number }, rating: RatingView | null): Turn {
  return {
    id: r.id,
    source: r.source,
    session: r.session,
    eventId: r.event_id,
    createdAt: r.created_at,
    model: r.blind === 1 ? null : r.model,
    state: r.state,
    rating,
    onPolicy: r.tokens !== null,
    prompt: r.prompt,
    response: r.response,
    context: parseJson(r.context, []),
    tokens: decodeTokens(r.tokens),
    logprobs: decodeLogprobs(r.logprobs),
    adapterVersion: r.blind === 1 ? null : r.adapter_version,
    truncated: r.truncated === 1,
  };
}

export function runView(r: RunRow): RunView {
  return {
    id: r.id,
    modelId: r.model_id,
    status: r.status,
    trigger: r.trigger,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    config: parseJson<unknown>(r.config, {}),
    metrics: parseJson<unknown>(r.metrics, null),
    error: r.error,
    adapterVersion: r.adapter_version,
    fromVersion: r.from_version,
    samples: r.samples,
  };
}

export function adapterView(r: AdapterRow): AdapterView {
  return {
    id: r.id,
    modelId: r.model_id,
    version: r.version,
    status: r.status,
    path: r.path,
    runId: r.run_id,
    parentVersion: r.parent_version,
    createdAt: r.created_at,
    emaValue: r.ema_value,
    metrics: parseJson<unknown>(r.metrics, {}),
    reason: r.reason,
    publish: parseJson<AdapterView['publish']>(r.publish, {}),
  };
}
