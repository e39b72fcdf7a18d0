// One training round, start to finish (ARCHITECTURE §4): select and encode the rated turns, precompute the base
// model's logprobs once, train the LoRA adapter (MIS-PO for on-policy turns, KTO for off-policy text) for the
// preset's steps, score it with the eval gate, write vN atomically, and record everything in one transaction.
// It runs in the trainer worker (worker.ts); tests call it in-process too.
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { TrainingProgress } from '../../common/domain.ts';
import { ReinError } from '../../common/errors.ts';
import { AdamW } from '../../common/engine/adamw.ts';
import { Rng } from '../../common/engine/rng.ts';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { modelLinearParams } from '../../common/engine/models/registry.ts';
import { resolveTrainingConfig, type TrainingConfig } from '../../common/training/presets.ts';
import { gateDecision, type GateMetrics } from '../../common/training/gate.ts';
import { ktoClassWeights } from '../../common/training/objectives.ts';
import { Engine, adapterParams } from '../engine/engine.ts';
import { loadPeftAdapter } from '../engine/peft.ts';
import type { ReinHome } from '../home.ts';
import type { Store } from '../store/store.ts';
import { readSettings } from '../store/settings.ts';
import { encodeRound, ratingBaselines, selectRound, type RatedTurn, type TrainSequence } from './data.ts';
import { evaluateGate } from './gate.ts';
import { modelShape, resolveModelDir } from './model.ts';
import { ObjectiveRunner } from './objective-runner.ts';
import { newStepState, trainStep, type StepSequence } from './step.ts';
import { nextVersion, pruneInactive, writeVersion } from './versions.ts';

export class CancelledError extends ReinError {
  constructor(runId: number) {
    super('conflict', `training run ${runId} was cancelled`, { detail: { runId } });
    this.name = 'CancelledError';
  }
}

export interface RoundOptions {
  home: ReinHome;
  store: Store;
  runId: number;
  signal?: AbortSignal;
  progress?: (p: TrainingProgress) => void;
  /** ORT threads (default: every core). */
  threads?: number;
}

export interface RoundResult {
  version: number;
  status: 'active' | 'rejected';
  previousActive: number | null;
  path: string;
  metrics: RoundMetrics;
}

export interface RoundMetrics {
  samples: { pending: number; replay: number; heldout: number; sequences: number; mispo: number; kto: number; skipped: { ratingId: number; why: string }[] };
  /**
   * The reward baseline (EMA of rewards, data.ts ratingBaselines): `before` is what the round's first pending rating
   * met, `after` the EMA after the newest rating; null `before` when no pending rating is in the round.
   */
  baseline: { before: number | null; after: number };
  /** The MIS-PO advantages A = r − baseline of the trained turns: how many are positive/negative and their means. */
  advantages: { positive: number; negative: number; meanPositive: number | null; meanNegative: number | null };
  /** Per step: the token ratios ρ = exp(π − μ) of the batch's MIS-PO tokens (min, geometric mean, max) and KTO's z0 beside the loss. */
  steps: { step: number; loss: number; kl: number; clipFraction: number; gradNorm: number; ratio: { min: number; geoMean: number; max: number } | null; z0: number }[];
  tokensPerSecond: number;
  trainSeconds: number;
  gate: GateMetrics;
}

interface RunRowLite {
  id: number;
  model_id: string;
  status: string;
  from_version: number | null;
}

/** Loads the adapter a round continues from: fromVersion, else the active one, else a fresh one (B = 0). */
function startAdapter(store: Store, engine: Engine, modelId: string, fromVersion: number | null, cfg: TrainingConfig): { adapter: LoraAdapter; parent: number | null } {
  const row =
    fromVersion !== null && fromVersion > 0
      ? store.stmt<{ version: number; path: string }>('SELECT version, path FROM adapters WHERE model_id = ? AND version = ?').get(modelId, fromVersion)
      : fromVersion === 0
        ? undefined
        : store.stmt<{ version: number; path: string }>(`SELECT version, path FROM adapters WHERE model_id = ? AND status = 'active'`).get(modelId);
  if (fromVersion !== null && fromVersion > 0 && row === undefined) throw new ReinError('not_found', `adapter version ${fromVersion} of ${modelId} does not exist`);
  if (row !== undefined) {
    const { adapter } = loadPeftAdapter(path.join(row.path, 'peft'), modelLinearParams(engine.config));
    return { adapter, parent: row.version };
  }
  return { adapter: engine.newAdapter({ r: cfg.rank, alpha: cfg.alpha }, cfg.seed), parent: null };
}

export async function runRound(o: RoundOptions): Promise<RoundResult> {
  const { store, home, runId } = o;
  const run = store.stmt<RunRowLite>('SELECT id, model_id, status, from_version FROM runs WHERE id = ?').get(runId);
  if (run === undefined) throw new ReinError('not_found', `training run ${runId} does not exist`);
  const modelId = run.model_id;
  const emit = (p: Omit<TrainingProgress, 'runId'>): void => o.progress?.({ runId, ...p });
  const none = { loss: null, kl: null, clipFraction: null, tokensPerSecond: null, etaSeconds: null };
  const checkCancel = (): void => {
    if (o.signal?.aborted === true) throw new CancelledError(runId);
  };

  emit({ phase: 'preparing', step: 0, steps: 0, ...none, message: 'loading the model' });
  const settings = readSettings(store);
  const dir = resolveModelDir(store, modelId);
  const shape = modelShape(dir);
  const cfg = resolveTrainingConfig(settings['training.preset'], shape, settings['training.custom']);
  const replayRatio = settings['training.replayRatio'];
  const engine = Engine.load(dir, { dtype: 'float32', threads: o.threads });
  const objectives = new ObjectiveRunner(cfg);
  try {
    if (engine.tokenizer === null) throw new ReinError('not_available', `model ${dir} has no tokenizer.json, so rated text cannot be encoded`);
    const turns = selectRound(store, modelId, { replayRatio, gateTurns: cfg.gateTurns, seed: cfg.seed + runId });
    // Each rating meets the reward baseline as it stood before it (data.ts ratingBaselines); the round never moves
    // it (ratings do, one by one).
    const baselines = ratingBaselines(store, modelId);
    const { sequences, skipped } = encodeRound(turns, engine.tokenizer, { modelId, baselines: baselines.before, advantageClip: cfg.advantageClip, maxTokens: cfg.maxTokens });
    const trainSeqs = sequences.filter((s) => s.role !== 'heldout');
    const heldSeqs = sequences.filter((s) => s.role === 'heldout');
    if (trainSeqs.length === 0) throw new ReinError('conflict', `run ${runId}: no rated turn to train on (${turns.length} selected, ${skipped.length} could not be encoded)`);
    checkCancel();

    const { adapter, parent } = startAdapter(store, engine, modelId, run.from_version, cfg);
    const prevAdapter = parent === null ? null : structuredClone(adapter);
    // The base (adapter off) never changes during a round: its logprobs are computed once per sequence.
    const refs = new Map<TrainSequence, Float64Array>();
    for (const s of trainSeqs) {
      refs.set(s, await engine.logprobs(s.tokens, { start: s.start, adapter: null }));
      checkCancel();
    }

    const optimizer = new AdamW(adapterParams(adapter), { lr: cfg.lr, weightDecay: cfg.weightDecay });
    // KTO's class weights from this round's counts, times each rating's magnitude |r| (a 4 of 5 weighs half a 5); a
    // correction is an explicit judgement and weighs 1.
    const kto = trainSeqs.filter((s) => s.kind === 'kto');
    const lambda = ktoClassWeights(kto.filter((s) => s.desirable).length, kto.filter((s) => !s.desirable).length, cfg);
    const turnOf = new Map(turns.map((t) => [t.ratingId, t]));
    const stepSeqs = trainSeqs.map((s): StepSequence => {
      const t = turnOf.get(s.ratingId)!;
      const magnitude = t.correction !== null ? 1 : Math.abs(t.reward);
      return { ...s, ref: refs.get(s)!, ktoWeight: (s.desirable ? lambda.desirable : lambda.undesirable) * magnitude };
    });
    const rng = new Rng(cfg.seed + 7919 * runId);
    let order: number[] = [];
    const nextBatch = (): StepSequence[] => {
      const out: StepSequence[] = [];
      const b = Math.min(cfg.batchSize, stepSeqs.length);
      while (out.length < b) {
        // Epochs over a fresh shuffle: every sequence is seen before any is seen twice.
        if (order.length === 0) order = shuffle(stepSeqs.length, rng);
        out.push(stepSeqs[order.pop()!]!);
      }
      return out;
    };
    const steps: RoundMetrics['steps'] = [];
    const state = newStepState();
    let tokens = 0;
    const t0 = performance.now();
    for (let step = 1; step <= cfg.steps; step++) {
      const m = await trainStep(engine, adapter, optimizer, objectives, nextBatch(), state, { maxGradNorm: cfg.maxGradNorm, checkCancel });
      tokens += m.tokens;
      steps.push({ step, loss: m.loss, kl: m.kl, clipFraction: m.clipFraction, gradNorm: m.gradNorm, ratio: m.ratio, z0: m.z0 });
      const elapsed = (performance.now() - t0) / 1000;
      emit({
        phase: 'training',
        step,
        steps: cfg.steps,
        loss: m.loss,
        kl: m.kl,
        clipFraction: m.clipFraction,
        tokensPerSecond: tokens / Math.max(elapsed, 1e-9),
        etaSeconds: (elapsed / step) * (cfg.steps - step),
      });
    }
    const trainSeconds = (performance.now() - t0) / 1000;

    emit({ phase: 'evaluating', step: cfg.steps, steps: cfg.steps, ...none, message: 'scoring the candidate on held-out turns' });
    checkCancel();
    const scope = heldSeqs.length > 0 ? 'heldout' : 'trained';
    const gateSeqs = scope === 'heldout' ? heldSeqs : trainSeqs.filter((s) => s.role === 'pending').slice(-Math.max(1, cfg.gateTurns));
    // Probe prompts for the KL: at most 16 (each costs two forwards of its prompt on a 0.5B model, ~12 s per 512 tokens).
    const probes = [...heldSeqs.slice(-8), ...trainSeqs.slice(-8)];
    const gateMetrics = await evaluateGate(engine, adapter, prevAdapter, gateSeqs, probes, cfg.klBudget, scope);
    const decision = gateDecision(gateMetrics);
    checkCancel();

    const version = nextVersion(store, home, modelId);
    const metrics: RoundMetrics = {
      samples: {
        pending: turns.filter((t) => t.role === 'pending').length,
        replay: turns.filter((t) => t.role === 'replay').length,
        heldout: turns.filter((t) => t.role === 'heldout').length,
        sequences: trainSeqs.length,
        mispo: trainSeqs.filter((s) => s.kind === 'mispo').length,
        kto: trainSeqs.filter((s) => s.kind === 'kto').length,
        skipped,
      },
      baseline: baselineSpan(turns, baselines),
      advantages: advantageStats(trainSeqs),
      steps,
      tokensPerSecond: tokens / Math.max(trainSeconds, 1e-9),
      trainSeconds,
      gate: gateMetrics,
    };
    emit({ phase: 'publishing', step: cfg.steps, steps: cfg.steps, ...none, message: `writing v${version}` });
    const vdir = writeVersion(home, modelId, version, {
      adapter,
      baseModel: dir,
      modelConfig: engine.config,
      metrics,
      config: cfg,
      lineage: { modelId, baseModel: dir, version, parentVersion: parent, runId, ratings: turns.map((t) => ({ id: t.ratingId, role: t.role })) },
    });
    let previousActive: number | null = null;
    try {
      store.write(() => {
        const status = decision.accept ? 'active' : 'rejected';
        const prev = store.stmt<{ id: number; version: number }>(`SELECT id, version FROM adapters WHERE model_id = ? AND status = 'active'`).get(modelId);
        if (decision.accept && prev !== undefined) {
          store.stmt(`UPDATE adapters SET status = 'inactive' WHERE id = ?`).run(prev.id);
          previousActive = prev.version;
        }
        store.insertAdapter(
          { modelId, version, status, path: vdir, runId, parentVersion: parent, emaValue: store.emaValue(modelId), metrics: { gate: gateMetrics, trainSeconds, tokensPerSecond: metrics.tokensPerSecond }, reason: decision.reason },
          'system',
        );
        const mark = store.stmt('UPDATE ratings SET run_id = ? WHERE id = ?');
        const sample = store.stmt('INSERT OR REPLACE INTO run_samples (run_id, rating_id, role, advantage) VALUES (?, ?, ?, ?)');
        for (const t of turns) {
          if (t.role === 'pending') mark.run(runId, t.ratingId);
          const seq = sequences.find((s) => s.ratingId === t.ratingId && s.kind === 'mispo');
          sample.run(runId, t.ratingId, t.role, seq?.advantage ?? null);
        }
        store
          .stmt(`UPDATE runs SET status = 'succeeded', finished_at = ?, metrics = ?, adapter_version = ?, config = ? WHERE id = ?`)
          .run(store.now(), JSON.stringify(metrics), version, JSON.stringify(cfg), runId);
      });
    } catch (e) {
      // The row did not commit, so the directory must not outlive it.
      if (existsSync(vdir)) rmSync(vdir, { recursive: true, force: true });
      throw e;
    }
    pruneInactive(store, home, modelId, settings['adapters.keepInactive']);
    emit({ phase: 'done', step: cfg.steps, steps: cfg.steps, ...none, message: `v${version} ${decision.accept ? 'is active' : `was rejected: ${decision.reason}`}` });
    return { version, status: decision.accept ? 'active' : 'rejected', previousActive, path: vdir, metrics };
  } finally {
    await objectives.dispose();
    await engine.close();
  }
}

function baselineSpan(turns: readonly RatedTurn[], b: { before: ReadonlyMap<number, number>; after: number }): RoundMetrics['baseline'] {
  // selectRound lists the pending ratings first, oldest first.
  const first = turns.find((t) => t.role === 'pending');
  return { before: first === undefined ? null : (b.before.get(first.ratingId) ?? null), after: b.after };
}

function advantageStats(seqs: readonly TrainSequence[]): RoundMetrics['advantages'] {
  const a = seqs.filter((s) => s.kind === 'mispo').map((s) => s.advantage);
  const pos = a.filter((x) => x > 0);
  const neg = a.filter((x) => x < 0);
  const mean = (x: number[]): number | null => (x.length === 0 ? null : x.reduce((p, q) => p + q, 0) / x.length);
  return { positive: pos.length, negative: neg.length, meanPositive: mean(pos), meanNegative: mean(neg) };
}

/** Fisher-Yates over 0..n-1 with the round's seeded stream. */
function shuffle(n: number, rng: Rng): number[] {
  const a = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rng.uniform() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}
