// One training round, start to finish (docs/architecture.md, "A round, end to end"), in four parts: prepare (select and encode the rated turns,
// hold out a share for the gate, load the parent adapter), train (the LoRA adapter, MIS-PO for on-policy turns and
// KTO for off-policy text, for enough steps that every trained sequence is drawn), gateRound (score the candidate on
// the held-out turns against its parent) and commit (write vN atomically and record everything in one transaction).
// A rating becomes trained (ratings.run_id) only when it was drawn into a step of a version that went live; a
// rejected or failed round leaves its ratings pending. It runs in the trainer worker (worker.ts); tests call it
// in-process too.
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { TrainingProgress } from '../../common/domain.ts';
import type { Settings } from '../../common/config.ts';
import { ReinError } from '../../common/errors.ts';
import { AdamW } from '../../common/engine/adamw.ts';
import { Rng } from '../../common/engine/rng.ts';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { modelLinearParams } from '../../common/engine/families/registry.ts';
import { roundSteps } from '../../common/training/estimate.ts';
import { EARLY_STOP_KL_SHARE, resolveTrainingConfig, type TrainingConfig } from '../../common/training/presets.ts';
import { envGateDecision, gateDecision, type EnvGateMetrics, type GateMetrics } from '../../common/training/gate.ts';
import { Engine, adapterParams, baseEngineOptions } from '../engine/engine.ts';
import { chooseDevice } from '../engine/device.ts';
import type { DeviceChoice } from '../../common/system.ts';
import { loadPeftAdapter } from '../engine/peft.ts';
import type { ReinHome } from '../home.ts';
import type { Store } from '../store/store.ts';
import { readSettings } from '../store/settings.ts';
import { encodeRound, ktoWeights, labelledText, lineageRuns, selectRound, shuffle, weakLabelled, type RatedTurn, type RoundBaseline, type SkippedTurn, type TrainSequence, type WeakMetrics, type WeakSample } from './data.ts';
import { evaluateGate, targetDirection } from './gate.ts';
import { rewardGate, rewardGateBlocks, type RewardGateMetrics } from './reward/gate.ts';
import { turnMessages as messagesOf } from '../../common/sources.ts';
import { modelShape, resolveModelDir } from '../model-files/base-model.ts';
import { weightsId, weightsIdCacheFile } from '../model-files/weights-id.ts';
import { ObjectiveRunner } from './objective-runner.ts';
import { parkUnencodable } from './parking.ts';
import { batchLogprobs, newStepState, trainStep, type StepSequence } from './step.ts';
import { nextVersion, pruneInactive, writeVersion } from '../model-files/adapter-versions.ts';

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
  /**
   * Plays the candidate and its parent on held-out env episodes for an env-gated run (the run's config `gate: 'env'`,
   * common/training/gate.ts envGateDecision): the process that owns the agent and the env answers (worker.ts asks its
   * parent over IPC; the scheduler hands it to the player the gym registered).
   */
  playEnv?: EnvPlayer;
}

/** What an env gate's player is given: the round's candidate and the parent it would replace (null: the base). */
export interface EnvGateRequest {
  runId: number;
  candidate: LoraAdapter;
  parent: LoraAdapter | null;
}

export type EnvPlayer = (req: EnvGateRequest) => Promise<EnvGateMetrics>;

/** The gate kinds (common/training/gate.ts): `ratings` scores held-out rated turns, `env` plays held-out env episodes. */
export type GateKind = 'ratings' | 'env';

/** The gate kind a run was started with (its config's `gate`; `ratings` by default). */
export function runGateKind(config: unknown): GateKind {
  return (config as { gate?: unknown } | null)?.gate === 'env' ? 'env' : 'ratings';
}

export interface RoundResult {
  version: number;
  status: 'active' | 'rejected';
  previousActive: number | null;
  path: string;
  metrics: RoundMetrics;
}

export interface RoundMetrics {
  /**
   * pending: the pending ratings this round trains (the held-out ones excluded); heldout: the ratings the gate scored
   * (pending ones held out, and older ones unseen by the lineage); drawn: the ids of the ratings that gave a gradient.
   */
  /** offPolicy: the trained ratings whose own answer is KTO text, each with why it is not MIS-PO (data.ts offPolicyReason, or the length limit). */
  samples: { pending: number; replay: number; heldout: number; pseudo: number; sequences: number; mispo: number; kto: number; drawn: number[]; skipped: { ratingId: number; why: string }[]; offPolicy: { ratingId: number; why: string }[] };
  /**
   * Unconfirmed weak labels trained (training.implicit weighted; data.ts weakLabelled): each with its rule, confidence
   * and weight. Never held out, never scored by the gate; empty unless the setting is weighted.
   */
  weak: WeakMetrics;
  /**
   * The reward baseline (data.ts onPolicyAdvantages): how many on-policy ratings train and their mean reward; each
   * meets the mean of the others.
   */
  baseline: RoundBaseline;
  /** The MIS-PO advantages A = r − baseline of the trained turns: how many are positive/negative and their means. */
  advantages: { positive: number; negative: number; meanPositive: number | null; meanNegative: number | null };
  /**
   * Per step: the token ratios ρ = exp(π − μ) of the batch's MIS-PO tokens (min, geometric mean, max) and KTO's z0
   * beside the loss; `runs`, the forward-and-backward runs it took (a pack of sequences sharing a prefix is one).
   */
  steps: { step: number; loss: number; kl: number; clipFraction: number; gradNorm: number; ratio: { min: number; geoMean: number; max: number } | null; z0: number; klToParent: number | null; runs: number }[];
  /** The steps this round ran: max(the preset's steps, ceil(epochs × trained sequences / batch)), or fewer when it stopped early. */
  stepCount: number;
  /** The round stopped before its last step: its batch's KL to the parent reached half the preset's KL budget (EARLY_STOP_KL_SHARE). */
  stoppedEarly: { step: number; of: number; klToParent: number; limit: number } | null;
  tokensPerSecond: number;
  trainSeconds: number;
  gate: GateMetrics;
  /** The reward model's score of the candidate's answers against its parent's on held-out prompts; null without a reward model for this base. */
  rewardGate: RewardGateMetrics | null;
  /** Where the step ran (training.device; node/engine/device.ts). */
  device: DeviceChoice;
}


/** Loads the adapter a round continues from: fromVersion, else the active one, else a fresh one (B = 0). */
function startAdapter(store: Store, engine: Engine, modelId: string, fromVersion: number | null, cfg: TrainingConfig): { adapter: LoraAdapter; parent: number | null } {
  const row = fromVersion !== null && fromVersion > 0 ? store.adapters.byVersion(modelId, fromVersion) : fromVersion === 0 ? null : store.adapters.active(modelId);
  if (fromVersion !== null && fromVersion > 0 && row === null) throw new ReinError('not_found', `adapter version ${fromVersion} of ${modelId} does not exist`);
  if (row !== null) {
    const { adapter } = loadPeftAdapter(path.join(row.path, 'peft'), modelLinearParams(engine.config));
    return { adapter, parent: row.version };
  }
  return { adapter: engine.newAdapter({ r: cfg.rank, alpha: cfg.alpha }, cfg.seed), parent: null };
}

/** What prepare hands to the later parts. */
interface Prepared {
  o: RoundOptions;
  modelId: string;
  settings: Settings;
  dir: string;
  cfg: TrainingConfig;
  engine: Engine;
  device: DeviceChoice;
  objectives: ObjectiveRunner;
  turns: RatedTurn[];
  /** Turns the popup did not ask about, labelled by the reward model (reward.pseudoLabelWeight > 0 only); ratingId is −turnId. */
  pseudo: RatedTurn[];
  /** Unconfirmed weak labels (training.implicit weighted only); ratingId is −turnId. */
  weak: WeakSample[];
  sequences: TrainSequence[];
  skipped: SkippedTurn[];
  trainSeqs: TrainSequence[];
  heldSeqs: TrainSequence[];
  baseline: RoundBaseline;
  /** Why the round trains nothing, when no trained rating has a direction (data.ts onPolicyAdvantages); else null. */
  noDirection: string | null;
  adapter: LoraAdapter;
  /** The parent's adapter as the round started (null: the base). */
  parentAdapter: LoraAdapter | null;
  parent: number | null;
  gateKind: GateKind;
  emit: (p: Omit<TrainingProgress, 'runId'>) => void;
  checkCancel: () => void;
}

interface Trained {
  steps: RoundMetrics['steps'];
  stoppedEarly: RoundMetrics['stoppedEarly'];
  drawn: Set<number>;
  /** The turn ids of the weak labels drawn into a step. */
  weakDrawn: Set<number>;
  tokensPerSecond: number;
  trainSeconds: number;
}

const NONE = { loss: null, kl: null, clipFraction: null, tokensPerSecond: null, etaSeconds: null };

export async function runRound(o: RoundOptions): Promise<RoundResult> {
  const p = await prepare(o);
  try {
    const t = await train(p);
    const g = await gateRound(p);
    return commit(p, t, p.noDirection === null ? g : { ...g, decision: { accept: false, reason: p.noDirection } });
  } finally {
    await p.objectives.dispose();
    await p.engine.close();
  }
}

async function prepare(o: RoundOptions): Promise<Prepared> {
  const { store, runId } = o;
  const run = store.runs.get(runId);
  if (run === null) throw new ReinError('not_found', `training run ${runId} does not exist`);
  const modelId = run.modelId;
  const emit = (p: Omit<TrainingProgress, 'runId'>): void => o.progress?.({ runId, ...p });
  const checkCancel = (): void => {
    if (o.signal?.aborted === true) throw new CancelledError(runId);
  };

  emit({ phase: 'preparing', step: 0, steps: 0, ...NONE, message: 'loading the model' });
  const settings = readSettings(store);
  const dir = resolveModelDir(store, modelId);
  const shape = modelShape(dir);
  const cfg = resolveTrainingConfig(settings['training.preset'], shape, settings['training.custom']);
  const replayRatio = settings['training.replayRatio'];
  const device = await chooseDevice(settings['training.device']);
  emit({ phase: 'preparing', step: 0, steps: 0, ...NONE, message: `loading the model (on ${device.provider}: ${device.adapter})` });
  const engine = Engine.load(dir, { ...baseEngineOptions(settings, o.threads), provider: device.provider, missingOps: device.missingOps });
  const objectives = new ObjectiveRunner(cfg);
  try {
    if (engine.tokenizer === null) throw new ReinError('not_available', `model ${dir} has no tokenizer.json, so rated text cannot be encoded`);
    const { adapter, parent } = startAdapter(store, engine, modelId, run.fromVersion, cfg);
    // Turns sampled from other weights than the base's (a quantized copy served under the same id) train as text.
    const baseWeights = weightsId(dir, { cacheFile: weightsIdCacheFile(o.home.modelsDir) });
    const encodeOpts = { modelId, baseWeights, advantageClip: cfg.advantageClip, maxTokens: cfg.maxTokens };
    // Ratings that cannot be encoded are parked before the selection, so the held-out set is drawn from ratings the
    // gate can score; parked ones that encode now are pending again (parking.ts).
    const parking = await parkUnencodable(store, modelId, engine.tokenizer, encodeOpts);
    if (parking.parked.length > 0 || parking.unparked.length > 0) {
      const words = [parking.parked.length > 0 ? `parked ${parking.parked.length} rating${parking.parked.length === 1 ? '' : 's'} that cannot be encoded` : '', parking.unparked.length > 0 ? `${parking.unparked.length} parked rating${parking.unparked.length === 1 ? '' : 's'} pending again` : ''];
      emit({ phase: 'preparing', step: 0, steps: 0, ...NONE, message: words.filter((w) => w !== '').join('; ') });
    }
    // An env-gated round's held-out set is env seeds (gateRound): every pending rating trains.
    const gateKind = runGateKind(run.config);
    const lineage = lineageRuns(store, modelId, parent);
    const turns = await selectRound(store, modelId, {
      replayRatio,
      heldoutFraction: gateKind === 'env' ? 0 : cfg.heldoutFraction,
      gateTurns: gateKind === 'env' ? 0 : cfg.gateTurns,
      seed: cfg.seed + runId,
      lineageRuns: lineage,
    });
    const { sequences, skipped, baseline } = encodeRound(turns, engine.tokenizer, encodeOpts);
    // Weak labels and reward-model labels train as KTO text (no stored μ), so they never join the on-policy baseline,
    // and only train: the held-out set is drawn above from ratings alone. The user's own reaction is better evidence
    // than the reward model's guess, so an answer with a weak label gets no reward-model label.
    const weak = settings['training.implicit'] === 'weighted' ? weakLabelled(store, lineage) : [];
    const weakTurns = new Set(weak.map((w) => w.turn.turnId));
    const pseudo = pseudoLabelled(store, modelId, settings['reward.pseudoLabelWeight']).filter((t) => !weakTurns.has(t.turnId));
    const pseudoSeqs = encodeRound([...pseudo, ...weak.map((w) => w.turn)], engine.tokenizer, encodeOpts).sequences;
    const trainSeqs = [...sequences.filter((s) => s.role !== 'heldout'), ...pseudoSeqs];
    const heldSeqs = sequences.filter((s) => s.role === 'heldout');
    if (trainSeqs.length === 0) throw new ReinError('conflict', `run ${runId}: no rated turn to train on (${turns.length} selected, ${skipped.length} could not be encoded, ${parking.total} parked: see Ratings or \`rein ratings\`)`);
    const noDirection = trainSeqs.some((s) => targetDirection(s) !== 0) ? null : noContrast(baseline);
    checkCancel();
    const parentAdapter = parent === null ? null : structuredClone(adapter);
    return { o, modelId, settings, dir, cfg, engine, device, objectives, turns, pseudo, weak, sequences, skipped, trainSeqs, heldSeqs, baseline, noDirection, adapter, parentAdapter, parent, gateKind, emit, checkCancel };
  } catch (e) {
    await objectives.dispose();
    await engine.close();
    throw e;
  }
}

async function train(p: Prepared): Promise<Trained> {
  const { engine, adapter, cfg, checkCancel } = p;
  // A round without a direction takes no step: its ratings would only be drawn into KL-only steps and used up.
  const trainSeqs = p.noDirection === null ? p.trainSeqs : [];
  // The base (adapter off) never changes during a round: its logprobs are computed once per sequence. So are the
  // parent version's, which the early stop measures the KL to (the base's in a first round: the adapter starts at B = 0).
  // Sequences that share a long prefix (an agent's turns) run it once per pack, as in the step (batchLogprobs).
  const refs = new Map<TrainSequence, Float64Array>();
  const parents = new Map<TrainSequence, Float64Array>();
  const base = await batchLogprobs(engine, trainSeqs, null, checkCancel);
  const parent = p.parentAdapter === null ? base : await batchLogprobs(engine, trainSeqs, p.parentAdapter, checkCancel);
  trainSeqs.forEach((s, i) => {
    refs.set(s, base[i]!);
    parents.set(s, parent[i]!);
  });
  checkCancel();
  const optimizer = new AdamW(adapterParams(adapter), { lr: cfg.lr, weightDecay: cfg.weightDecay });
  const turnOf = new Map([...p.turns, ...p.pseudo, ...p.weak.map((w) => w.turn)].map((t) => [t.ratingId, t]));
  const weights = ktoWeights(trainSeqs, turnOf, { ...cfg, pseudoLabelWeight: p.settings['reward.pseudoLabelWeight'] });
  const stepSeqs = trainSeqs.map((s): StepSequence & Pick<TrainSequence, 'ratingId' | 'role'> => ({ ...s, ref: refs.get(s)!, parent: parents.get(s)!, ktoWeight: weights.get(s)! }));
  const rng = new Rng(cfg.seed + 7919 * p.o.runId);
  let order: number[] = [];
  const drawn = new Set<number>();
  const weakDrawn = new Set<number>();
  const nextBatch = (): StepSequence[] => {
    const out: StepSequence[] = [];
    const b = Math.min(cfg.batchSize, stepSeqs.length);
    while (out.length < b) {
      // Epochs over a fresh shuffle: every sequence is seen before any is seen twice.
      if (order.length === 0) order = shuffle(stepSeqs.length, rng);
      const s = stepSeqs[order.pop()!]!;
      if (s.ratingId > 0) drawn.add(s.ratingId);
      else if (s.role === 'weak') weakDrawn.add(-s.ratingId);
      out.push(s);
    }
    return out;
  };
  const total = stepSeqs.length === 0 ? 0 : roundSteps(cfg, stepSeqs.length);
  const steps: RoundMetrics['steps'] = [];
  const state = newStepState();
  let tokens = 0;
  let stoppedEarly: Trained['stoppedEarly'] = null;
  const klLimit = cfg.klBudget * EARLY_STOP_KL_SHARE;
  const t0 = performance.now();
  for (let step = 1; step <= total; step++) {
    const m = await trainStep(engine, adapter, optimizer, p.objectives, nextBatch(), state, { maxGradNorm: cfg.maxGradNorm, checkCancel });
    tokens += m.tokens;
    steps.push({ step, loss: m.loss, kl: m.kl, clipFraction: m.clipFraction, gradNorm: m.gradNorm, ratio: m.ratio, z0: m.z0, klToParent: m.klToParent, runs: m.runs });
    if (m.klToParent !== null && m.klToParent >= klLimit && step < total) {
      stoppedEarly = { step, of: total, klToParent: m.klToParent, limit: klLimit };
      break;
    }
    const elapsed = (performance.now() - t0) / 1000;
    p.emit({
      phase: 'training',
      step,
      steps: total,
      loss: m.loss,
      kl: m.kl,
      clipFraction: m.clipFraction,
      tokensPerSecond: tokens / Math.max(elapsed, 1e-9),
      etaSeconds: (elapsed / step) * (total - step),
    });
  }
  const trainSeconds = (performance.now() - t0) / 1000;
  return { steps, stoppedEarly, drawn, weakDrawn, tokensPerSecond: tokens / Math.max(trainSeconds, 1e-9), trainSeconds };
}

interface GateOutcome {
  metrics: GateMetrics;
  reward: RewardGateMetrics | null;
  decision: { accept: boolean; reason: string };
}

async function gateRound(p: Prepared): Promise<GateOutcome> {
  if (p.gateKind === 'env') return envGateRound(p);
  p.emit({ phase: 'evaluating', step: 0, steps: 0, ...NONE, message: `scoring the candidate on ${p.heldSeqs.length} held-out turns` });
  p.checkCancel();
  const metrics = await evaluateGate(p.engine, p.adapter, p.parentAdapter, p.heldSeqs, p.cfg.klBudget);
  p.checkCancel();
  // The reward metric: the latest reward model of this base (features are the base's), on the held-out prompts.
  const rm = p.o.store.rewardModels.latest(p.modelId);
  let reward: RewardGateMetrics | null = null;
  const gatePrompts = p.settings['reward.gatePrompts'];
  if (rm !== null && rm.baseModel === p.dir && gatePrompts > 0) {
    const held = new Set(p.heldSeqs.map((s) => s.ratingId));
    const prompts = p.turns.filter((t) => held.has(t.ratingId)).map((t) => messagesOf(t));
    p.emit({ phase: 'evaluating', step: 0, steps: 0, ...NONE, message: `reward model v${rm.version}: scoring the candidate's and its parent's answers on ${Math.min(prompts.length, gatePrompts)} held-out prompts` });
    reward = await rewardGate(p.engine, rm, p.adapter, p.parentAdapter, prompts, p.cfg.seed + p.o.runId, gatePrompts);
    p.checkCancel();
  }
  const decision = gateDecision(metrics);
  const blocked = decision.accept ? rewardGateBlocks(reward, p.settings['reward.gateBlocks']) : null;
  return { metrics, reward, decision: blocked === null ? decision : { accept: false, reason: blocked } };
}

/** The env gate (common/training/gate.ts envGateDecision): the candidate and its parent play the same held-out episodes. */
async function envGateRound(p: Prepared): Promise<GateOutcome> {
  const { runId } = p.o;
  if (p.o.playEnv === undefined) throw new ReinError('not_available', `run ${runId} is env-gated, and nothing plays its env here: env-gated rounds are started by the gym (node/gym), which plays the gate's episodes`);
  p.emit({ phase: 'evaluating', step: 0, steps: 0, ...NONE, message: 'playing the candidate and its parent on held-out env episodes' });
  p.checkCancel();
  const env = await p.o.playEnv({ runId, candidate: p.adapter, parent: p.parentAdapter });
  p.checkCancel();
  const metrics: GateMetrics = { kind: 'env', heldout: 0, correct: 0, accuracy: null, accuracyCi: null, previousAccuracy: null, pairedCi: null, kl: env.kl, klBase: 0, klTokens: env.klTokens, klBudget: p.cfg.klBudget, env };
  return { metrics, reward: null, decision: envGateDecision(env) };
}

function commit(p: Prepared, t: Trained, g: GateOutcome): RoundResult {
  const { store, home, runId } = p.o;
  const { modelId, turns, trainSeqs, sequences, cfg } = p;
  const { decision } = g;
  const version = nextVersion(store, home, modelId);
  const metrics: RoundMetrics = {
    samples: {
      pending: turns.filter((x) => x.role === 'pending').length,
      replay: turns.filter((x) => x.role === 'replay').length,
      heldout: turns.filter((x) => x.role === 'heldout').length,
      pseudo: p.pseudo.length,
      sequences: trainSeqs.length,
      mispo: trainSeqs.filter((s) => s.kind === 'mispo').length,
      kto: trainSeqs.filter((s) => s.kind === 'kto').length,
      drawn: [...t.drawn].sort((a, b) => a - b),
      skipped: p.skipped,
      offPolicy: trainSeqs.flatMap((s) => (s.kind === 'kto' && s.why != null && s.ratingId > 0 ? [{ ratingId: s.ratingId, why: s.why }] : [])),
    },
    weak: weakMetrics(p.weak, t.weakDrawn),
    baseline: p.baseline,
    advantages: advantageStats(trainSeqs),
    steps: t.steps,
    stepCount: t.steps.length,
    stoppedEarly: t.stoppedEarly,
    tokensPerSecond: t.tokensPerSecond,
    trainSeconds: t.trainSeconds,
    gate: g.metrics,
    rewardGate: g.reward,
    device: p.device,
  };
  const last = t.steps.length;
  p.emit({ phase: 'publishing', step: last, steps: last, ...NONE, message: `writing v${version}` });
  const vdir = writeVersion(home, modelId, version, {
    adapter: p.adapter,
    baseModel: p.dir,
    modelConfig: p.engine.config,
    metrics,
    config: cfg,
    lineage: { modelId, baseModel: p.dir, version, parentVersion: p.parent, runId, ratings: turns.map((x) => ({ id: x.ratingId, role: x.role, drawn: t.drawn.has(x.ratingId) })) },
  });
  let previousActive: number | null = null;
  try {
    store.write(() => {
      // An accepted version is written as a candidate and then activated: `activate` is the one place that keeps a
      // single version of the model active.
      const status = decision.accept ? 'candidate' : 'rejected';
      const row = store.adapters.insert(
        { modelId, version, status, path: vdir, runId, parentVersion: p.parent, emaValue: store.emaValue(modelId), metrics: { gate: g.metrics, rewardGate: g.reward, trainSeconds: t.trainSeconds, tokensPerSecond: t.tokensPerSecond }, reason: decision.reason },
        'system',
      );
      if (decision.accept) previousActive = store.adapters.activate(modelId, row.id, 'inactive')?.version ?? null;
      // Trained means: drawn into a step of a version that went live. Held-out ratings, ratings of a rejected
      // round and turns that could not be encoded stay pending. run_samples records what the round did with each
      // rating it drew or scored (ratings.ts lastRound reads it: "not trained (round N rejected)").
      for (const x of turns) {
        const drawn = t.drawn.has(x.ratingId);
        // A round without a direction drew nothing: it records what it saw, so the scheduler waits for new ratings.
        if (x.role !== 'heldout' && !drawn && p.noDirection === null) continue;
        if (decision.accept && drawn && x.role === 'pending') store.markTrained(x.ratingId, runId);
        const seq = sequences.find((s) => s.ratingId === x.ratingId && s.kind === 'mispo');
        store.runs.recordSample(runId, x.ratingId, x.role, seq?.advantage ?? null);
      }
      store.runs.succeed(runId, { metrics, version, config: p.gateKind === 'env' ? { ...cfg, gate: p.gateKind } : cfg });
    });
  } catch (e) {
    // The row did not commit, so the directory must not outlive it.
    if (existsSync(vdir)) rmSync(vdir, { recursive: true, force: true });
    throw e;
  }
  pruneInactive(store, home, modelId, p.settings['adapters.keepInactive']);
  const back = decision.accept ? '' : `; its ${metrics.samples.pending} trained ratings are pending again`;
  p.emit({ phase: 'done', step: last, steps: last, ...NONE, message: `v${version} ${decision.accept ? 'is active' : `was rejected: ${decision.reason}${back}`}` });
  return { version, status: decision.accept ? 'active' : 'rejected', previousActive, path: vdir, metrics };
}

/** Why a round without a direction is rejected: its trained on-policy ratings are all alike, and it has no KTO text. */
function noContrast(b: RoundBaseline): string {
  const after = 'nothing was trained, and the ratings stay pending until one that differs joins them';
  if (b.ratings < 2) return `no contrast: the round trains a single on-policy rating, which has nothing to be compared with (its advantage is 0); ${after}`;
  const r = b.meanReward!;
  const kind = r === 1 ? ' (all Good)' : r === -1 ? ' (all Bad)' : '';
  return `no contrast: the round's ${b.ratings} trained ratings all have reward ${r > 0 ? '+' : ''}${Number(r.toPrecision(3))}${kind}, so each meets a baseline equal to its own reward and has no direction; ${after}`;
}

function weakMetrics(weak: readonly WeakSample[], drawn: ReadonlySet<number>): WeakMetrics {
  const turns = weak.map((w) => ({ turnId: w.turn.turnId, value: w.label.value, rule: w.label.rule, confidence: w.label.confidence, weight: w.weight, drawn: drawn.has(w.turn.turnId) }));
  const trained = turns.filter((w) => w.drawn);
  const meanWeight = trained.length === 0 ? null : trained.reduce((a, w) => a + w.weight, 0) / trained.length;
  return { labels: turns.length, drawn: trained.length, meanWeight, turns };
}

function advantageStats(seqs: readonly TrainSequence[]): RoundMetrics['advantages'] {
  const a = seqs.filter((s) => s.kind === 'mispo').map((s) => s.advantage);
  const pos = a.filter((x) => x > 0);
  const neg = a.filter((x) => x < 0);
  const mean = (x: number[]): number | null => (x.length === 0 ? null : x.reduce((p, q) => p + q, 0) / x.length);
  return { positive: pos.length, negative: neg.length, meanPositive: mean(pos), meanNegative: mean(neg) };
}

/**
 * The reward model's labels for turns the popup did not ask about (rewardAsk recorded them), when
 * reward.pseudoLabelWeight is above 0; none otherwise. They train as KTO text (no stored μ is used), desirable when
 * p > 0.5, and never become ratings.
 */
function pseudoLabelled(store: Store, modelId: string, weight: number): RatedTurn[] {
  if (weight <= 0) return [];
  const rm = store.rewardModels.latest(modelId);
  if (rm === null) return [];
  return store.rewardModels.unaskedPredictions(rm.id).map(({ turnId, p }) => labelledText(store, turnId, 'pending', p > 0.5 ? 1 : -1));
}
