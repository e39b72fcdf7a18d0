// Trains a reward-model version on every live rating of a model: good/bad, 1–5 (its sign is the label, |reward| the
// weight; a 3 of 5 carries none), and corrections (the corrected text preferred, the original not, and the two as
// a pair). Features are the frozen base's pooled last hidden state on ORT (features.ts); the head is a logistic
// regression fitted in TS on them (common/training/reward.ts). A fixed fifth of the ratings (by rating id, so the
// same ones in every version) is held out: never fitted, scored for the AUROC and the pair accuracy shown.
import type { ContextMessage } from '../../../common/domain.ts';
import { auroc, fitRewardHead, pairAccuracy, predictReward, rewardLabel, type RewardExample, type RewardHead } from '../../../common/training/reward.ts';
import { Engine, baseEngineOptions } from '../../engine/engine.ts';
import { readSettings } from '../../store/settings.ts';
import type { Store } from '../../store/store.ts';
import type { StoredRewardModel } from '../../store/reward.ts';
import { turnMessages } from '../../../common/sources.ts';
import { answerFeatures } from './features.ts';

/** One rating in five is held out, picked by its id (Knuth's multiplicative hash), so it stays held out in every version. */
export function heldOutRating(ratingId: number): boolean {
  return ((Math.imul(ratingId, 2654435761) >>> 0) % 5) === 0;
}

interface Labelled {
  ratingId: number;
  messages: ContextMessage[];
  text: string;
  y: 0 | 1;
  weight: number;
  /** A correction's two sides share a pair id. */
  pair: number | null;
}

/** The labelled texts of the model's live ratings, oldest first. */
export function rewardExamples(store: Store, modelId: string): Labelled[] {
  const rows = [...store.rounds.ratedTurns(modelId, 'trained'), ...store.rounds.ratedTurns(modelId, 'pending')].sort((a, b) => a.created_at - b.created_at || a.rating_id - b.rating_id);
  const out: Labelled[] = [];
  for (const r of rows) {
    const messages = turnMessages({ source: r.source, context: JSON.parse(r.context) as ContextMessage[], prompt: r.prompt });
    if (r.correction !== null) {
      out.push({ ratingId: r.rating_id, messages, text: r.correction, y: 1, weight: 1, pair: r.rating_id });
      out.push({ ratingId: r.rating_id, messages, text: r.response, y: 0, weight: 1, pair: r.rating_id });
      continue;
    }
    const l = rewardLabel(r.value);
    if (l !== null) out.push({ ratingId: r.rating_id, messages, text: r.response, ...l, pair: null });
  }
  return out;
}

export interface TrainRewardOptions {
  store: Store;
  modelId: string;
  /** The HF model directory the features are read from. */
  modelDir: string;
  runId?: number | null;
  /** An engine already loaded on modelDir (the round's); otherwise one is loaded and closed here. */
  engine?: Engine;
  threads?: number;
}

/** Fits and stores a new version; null when the ratings hold no example of one class yet. */
export async function trainRewardModel(o: TrainRewardOptions): Promise<StoredRewardModel | null> {
  const t0 = performance.now();
  const examples = rewardExamples(o.store, o.modelId);
  const train = examples.filter((e) => !heldOutRating(e.ratingId));
  if (!train.some((e) => e.y === 1) || !train.some((e) => e.y === 0)) return null;
  const engine = o.engine ?? Engine.load(o.modelDir, baseEngineOptions(readSettings(o.store), o.threads));
  try {
    const feats: (Float32Array | null)[] = [];
    for (const e of examples) {
      try {
        feats.push(await answerFeatures(engine, e.messages, e.text));
      } catch {
        feats.push(null); // text that encodes to no tokens: counted in metrics.skipped
      }
    }
    const fit: RewardExample[] = [];
    examples.forEach((e, i) => {
      if (!heldOutRating(e.ratingId) && feats[i] !== null) fit.push({ x: feats[i]!, y: e.y, weight: e.weight });
    });
    const head = fitRewardHead(fit);
    const metrics = heldOutMetrics(head, examples, feats);
    return o.store.rewardModels.insert({
      modelId: o.modelId,
      baseModel: o.modelDir,
      adapterVersion: null,
      runId: o.runId ?? null,
      ratings: fit.length,
      head,
      metrics: { ...metrics, skipped: feats.filter((f) => f === null).length, seconds: (performance.now() - t0) / 1000 },
    });
  } finally {
    if (o.engine === undefined) await engine.close();
  }
}

function heldOutMetrics(head: RewardHead, examples: readonly Labelled[], feats: readonly (Float32Array | null)[]): Pick<StoredRewardModel['metrics'], 'heldout' | 'scores' | 'auroc' | 'pairs'> {
  const scores: number[] = [];
  const labels: (0 | 1)[] = [];
  const sides = new Map<number, { chosen?: number; rejected?: number }>();
  examples.forEach((e, i) => {
    if (!heldOutRating(e.ratingId) || feats[i] === null) return;
    const p = predictReward(head, feats[i]!);
    scores.push(p);
    labels.push(e.y);
    if (e.pair !== null) {
      const s = sides.get(e.pair) ?? {};
      if (e.y === 1) s.chosen = p;
      else s.rejected = p;
      sides.set(e.pair, s);
    }
  });
  const a = auroc(scores, labels);
  const pa = pairAccuracy([...sides.values()].filter((s): s is { chosen: number; rejected: number } => s.chosen !== undefined && s.rejected !== undefined));
  return {
    heldout: { positives: labels.filter((y) => y === 1).length, negatives: labels.filter((y) => y === 0).length },
    scores: { good: scores.filter((_, i) => labels[i] === 1), bad: scores.filter((_, i) => labels[i] === 0) },
    auroc: a === null ? null : { value: a.auroc, ci: a.ci },
    pairs: pa === null ? null : { accuracy: pa.accuracy, ci: pa.ci, pairs: pa.pairs },
  };
}

/** p(good) of one answer under a stored version, reading features with `engine` (which must hold its base). */
export async function scoreAnswer(engine: Engine, model: StoredRewardModel, messages: readonly ContextMessage[], answer: string): Promise<number> {
  return predictReward(model.head, await answerFeatures(engine, messages, answer));
}
