// Pretraining the small LM through the engine: full-parameter gradients from Driver.fullGrad on corpus dialogues
// (next-token cross-entropy over every token), AdamW (common/engine/adamw.ts) with global-norm clipping, linear
// warmup then cosine decay. Single-threaded ORT and a seeded corpus make a run deterministic on one machine.
//
// Each step's data comes from its own stream, Rng(seed).fork(`pretrain step ${step}`), so the data a step sees
// depends on (seed, step) alone: the RNG state of a checkpoint is its step. With seqLen > 0 the dialogues are
// packed, whole and in order, into sequences of at most seqLen tokens (GPT-2's packing: a dialogue attends to the
// ones before it in its sequence, as a chat's later turns do); the driver pads a sequence to its shape bucket.
//
// Resumable: with `checkpoints`, every checkpointEvery steps the weights (F32), AdamW's moments (F64) and
// state.json (step, losses, elapsed seconds, the settings) go to checkpoints/step-NNNNNNN (staged, then renamed into
// place), and a run starts from the newest checkpoint there. A resumed run gives the bytes an uninterrupted one
// does (the test kills and resumes one). Settings that change the result must match the checkpoint's.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AdamW, clipGradNorm } from '../../common/engine/adamw.ts';
import { modelParams } from '../../common/engine/families/registry.ts';
import { Rng } from '../../common/engine/rng.ts';
import { ConflictError } from '../../common/errors.ts';
import { Engine } from '../engine/engine.ts';
import type { FArray } from '../engine/driver.ts';
import { SafetensorsFile, writeSafetensors, type TensorToWrite } from '../engine/safetensors.ts';
import { sampleDialogue as sampleStyles } from './corpus.ts';
import { sampleDialogue as samplePrompted } from './prompted.ts';
import { renderDialogue, writeSmallLm, type SmallLmOptions } from './small-lm.ts';

export interface PretrainOptions extends SmallLmOptions {
  steps?: number;
  /** Sequences per step. */
  batch?: number;
  /** Tokens per packed sequence (0: one dialogue per sequence). */
  seqLen?: number;
  lr?: number;
  warmup?: number;
  /** A folder for checkpoints; the run resumes from the newest one there. */
  checkpoints?: string;
  checkpointEvery?: number;
  /** Checkpoints kept (the newest). */
  keep?: number;
  /** Stop once this step is done and checkpointed (a build split into parts); default: run every step. */
  until?: number;
  onProgress?: (p: { step: number; steps: number; loss: number; tokens: number; elapsedS: number; etaS: number }) => void;
  log?: (line: string) => void;
}

export interface PretrainResult {
  dir: string;
  params: number;
  vocabSize: number;
  /** Steps done (less than `steps` when `until` stopped the run). */
  step: number;
  /** Mean token loss of every step so far. */
  losses: number[];
  firstLoss: number;
  lastLoss: number;
  /** Tokens trained on, over every run of the build. */
  tokens: number;
  /** Seconds of training, over every run of the build. */
  elapsedS: number;
  /** The step this run resumed from (0: a fresh start). */
  resumedFrom: number;
}

interface CheckpointState {
  step: number;
  losses: number[];
  tokens: number;
  elapsedS: number;
  settings: Record<string, unknown>;
}

const stepDir = (root: string, step: number): string => path.join(root, `step-${String(step).padStart(7, '0')}`);

/** The newest complete checkpoint under `root` (a staged one that was never renamed is ignored), or null. */
export function newestCheckpoint(root: string): { dir: string; step: number } | null {
  if (!existsSync(root)) return null;
  const steps = readdirSync(root)
    .map((n) => /^step-(\d{7})$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null && existsSync(path.join(root, m[0], 'state.json')))
    .map((m) => Number(m[1]))
    .sort((a, b) => b - a);
  return steps.length === 0 ? null : { dir: stepDir(root, steps[0]!), step: steps[0]! };
}

/** Writes a freshly initialised model to `dir` (or resumes from a checkpoint), trains it, and writes the weights. */
export async function pretrainSmallLm(dir: string, o: PretrainOptions = {}): Promise<PretrainResult> {
  const seed = o.seed ?? 0;
  const steps = o.steps ?? 600;
  const batch = o.batch ?? 8;
  const seqLen = o.seqLen ?? 0;
  const lrMax = o.lr ?? 3e-3;
  const warmup = o.warmup ?? Math.min(50, Math.floor(steps / 10));
  const every = o.checkpointEvery ?? 100;
  const keep = o.keep ?? 2;
  const corpus = o.corpus ?? 'styles';
  const log = o.log ?? (() => {});
  if (!(Number.isInteger(every) && every >= 1)) throw new RangeError(`checkpointEvery must be a positive integer, got ${every}`);
  const written = writeSmallLm(dir, o);
  const buckets = seqLen > 0 ? [...new Set([64, 128, 256, 384, seqLen].filter((b) => b <= seqLen))].sort((a, b) => a - b) : [32, 64, 96, 128, 192, 256];
  const engine = Engine.load(written.dir, { threads: 1, buckets });
  const tok = engine.tokenizer!;
  const w = engine.driver.weights;
  const params = modelParams(engine.config);
  const weightOf = (p: (typeof params)[number]): FArray =>
    p.layer !== null ? w.layers[p.layer]![p.name]! : p.name === 'embed_tokens' ? w.embed : p.name === 'norm' ? w.norm : w.lmHead;
  const arrays = params.map(weightOf) as Float32Array[];
  const opt = new AdamW(arrays, { lr: lrMax, weightDecay: 0.01, beta2: 0.99 });

  /** The step's sequences: dialogues from the step's own stream, one per sequence or packed. */
  const sequences = (step: number): number[][] => {
    const rng = new Rng(seed).fork(`pretrain step ${step}`);
    const next = (): number[] => tok.encode(renderDialogue(corpus === 'styles' ? sampleStyles(rng) : samplePrompted(rng)));
    if (seqLen === 0) return Array.from({ length: batch }, next);
    const out: number[][] = [];
    let cur: number[] = [];
    while (out.length < batch) {
      const d = next().slice(0, seqLen);
      if (cur.length + d.length > seqLen) {
        out.push(cur);
        cur = [];
      }
      cur.push(...d);
    }
    return out;
  };

  // What a checkpoint must agree on to be resumed (the rest, such as `until`, only says when to stop).
  const settings = {
    seed, steps, batch, seqLen, lr: lrMax, warmup, corpus, dtype: o.dtype ?? 'F32',
    hidden: o.hidden ?? 128, layers: o.layers ?? 4, bpeSize: o.bpeSize ?? null, tokenizerDialogues: o.tokenizerDialogues ?? null,
    // The first step's token ids: a change to the corpus generator or the tokenizer changes them.
    data: createHash('sha256').update(JSON.stringify(sequences(0))).digest('hex').slice(0, 16),
  };
  let state: CheckpointState = { step: 0, losses: [], tokens: 0, elapsedS: 0, settings };
  const ck = o.checkpoints === undefined ? null : newestCheckpoint(o.checkpoints);
  if (ck !== null) {
    const saved = JSON.parse(readFileSync(path.join(ck.dir, 'state.json'), 'utf8')) as CheckpointState;
    if (JSON.stringify(saved.settings) !== JSON.stringify(settings)) {
      throw new ConflictError(`the checkpoint ${ck.dir} was made with other settings (${JSON.stringify(saved.settings)}, now ${JSON.stringify(settings)}): resume with those, or use another checkpoint folder`, { dir: ck.dir });
    }
    const wf = SafetensorsFile.open(path.join(ck.dir, 'model.safetensors'));
    const of = SafetensorsFile.open(path.join(ck.dir, 'optimizer.safetensors'));
    try {
      params.forEach((p, j) => arrays[j]!.set(wf.read(p.hfKey)));
      opt.loadState({ step: saved.step, m: params.map((p) => of.read(`m.${p.hfKey}`, { as: 'f64' }) as Float64Array), v: params.map((p) => of.read(`v.${p.hfKey}`, { as: 'f64' }) as Float64Array) });
    } finally {
      wf.close();
      of.close();
    }
    state = saved;
    log(`resuming from ${ck.dir} (step ${saved.step} of ${steps})`);
  }
  const resumedFrom = state.step;

  const writeCheckpoint = (): void => {
    const root = o.checkpoints!;
    mkdirSync(root, { recursive: true });
    const final = stepDir(root, state.step);
    const stage = `${final}.tmp-${process.pid}`;
    rmSync(stage, { recursive: true, force: true });
    mkdirSync(stage);
    const wts: Record<string, TensorToWrite> = {};
    const mom: Record<string, TensorToWrite> = {};
    const st = opt.saveState();
    params.forEach((p, j) => {
      wts[p.hfKey] = { shape: p.shape, data: arrays[j]! };
      mom[`m.${p.hfKey}`] = { shape: p.shape, data: st.m[j]!, dtype: 'F64' };
      mom[`v.${p.hfKey}`] = { shape: p.shape, data: st.v[j]!, dtype: 'F64' };
    });
    writeSafetensors(path.join(stage, 'model.safetensors'), wts, { format: 'pt' });
    writeSafetensors(path.join(stage, 'optimizer.safetensors'), mom);
    writeFileSync(path.join(stage, 'state.json'), JSON.stringify(state) + '\n');
    rmSync(final, { recursive: true, force: true });
    renameSync(stage, final);
    const old = readdirSync(root).filter((n) => /^step-\d{7}$/.test(n)).sort().slice(0, -keep);
    for (const n of old) rmSync(path.join(root, n), { recursive: true, force: true });
  };

  const t0 = performance.now();
  const elapsedBefore = state.elapsedS;
  const stopAt = Math.min(steps, o.until ?? steps);
  const sums = arrays.map((a) => new Float64Array(a.length));
  for (let step = state.step; step < stopAt; step++) {
    for (const s of sums) s.fill(0);
    let tokens = 0;
    let nll = 0;
    for (const ids of sequences(step)) {
      const g = await engine.driver.fullGrad(ids, 1, (lp) => new Float64Array(lp.length).fill(-1));
      for (const v of g.logp) nll -= v;
      tokens += g.logp.length;
      params.forEach((p, j) => {
        const gj = p.layer !== null ? g.grads.layers[p.layer]![p.name]! : p.name === 'embed_tokens' ? g.grads.embed : p.name === 'norm' ? g.grads.norm : g.grads.lmHead!;
        const s = sums[j]!;
        for (let i = 0; i < s.length; i++) s[i] += gj[i]!;
      });
    }
    for (const s of sums) for (let i = 0; i < s.length; i++) s[i]! /= tokens;
    clipGradNorm(sums, 1);
    const lr = step < warmup ? (lrMax * (step + 1)) / warmup : 0.5 * lrMax * (1 + Math.cos((Math.PI * (step - warmup)) / Math.max(1, steps - warmup)));
    opt.step(sums, lr);
    const loss = nll / tokens;
    state.step = step + 1;
    state.losses.push(loss);
    state.tokens += tokens;
    state.elapsedS = elapsedBefore + (performance.now() - t0) / 1000;
    const runS = (performance.now() - t0) / 1000;
    o.onProgress?.({ step: state.step, steps, loss, tokens: state.tokens, elapsedS: state.elapsedS, etaS: (runS / (state.step - resumedFrom)) * (steps - state.step) });
    if (o.checkpoints !== undefined && (state.step % every === 0 || state.step === stopAt)) writeCheckpoint();
  }
  if (state.step === steps) {
    // The trained weights replace the initial ones, under the same HF keys (the parameter table's).
    const tensors: Record<string, TensorToWrite> = {};
    params.forEach((p, j) => (tensors[p.hfKey] = { shape: p.shape, data: arrays[j]!, dtype: settings.dtype }));
    writeSafetensors(path.join(written.dir, 'model.safetensors'), tensors, { format: 'pt' }); // atomic (fs-atomic.ts)
  }
  return {
    dir: written.dir,
    params: written.params,
    vocabSize: written.vocabSize,
    step: state.step,
    losses: state.losses,
    firstLoss: state.losses[0] ?? NaN,
    lastLoss: state.losses.at(-1) ?? NaN,
    tokens: state.tokens,
    elapsedS: state.elapsedS,
    resumedFrom,
  };
}
