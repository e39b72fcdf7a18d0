// Pretraining the small LM through the engine: full-parameter gradients from Driver.fullGrad on corpus dialogues
// (next-token cross-entropy over every token), AdamW (common/engine/adamw.ts) with global-norm clipping, linear
// warmup then cosine decay. Single-threaded ORT and a seeded corpus make a run deterministic on one machine.
import path from 'node:path';
import { AdamW, clipGradNorm } from '../../common/engine/adamw.ts';
import { modelParams } from '../../common/engine/families/registry.ts';
import { Rng } from '../../common/engine/rng.ts';
import { Engine } from '../engine/engine.ts';
import type { FArray } from '../engine/driver.ts';
import { writeSafetensors, type TensorToWrite } from '../engine/safetensors.ts';
import { instructDialogue, sampleDialogue } from './corpus.ts';
import { renderDialogue, writeSmallLm, type SmallLmOptions } from './small-lm.ts';

export interface PretrainOptions extends SmallLmOptions {
  steps?: number;
  /** Dialogues per step. */
  batch?: number;
  lr?: number;
  warmup?: number;
  /** The share of dialogues whose prompt names the answer's opening (corpus.ts instructDialogue; default 0, none). */
  instructed?: number;
  onProgress?: (p: { step: number; steps: number; loss: number; elapsedS: number; etaS: number }) => void;
}

export interface PretrainResult {
  dir: string;
  params: number;
  vocabSize: number;
  /** Mean token loss of the first and last step. */
  firstLoss: number;
  lastLoss: number;
}

/** Writes a freshly initialised model to `dir`, trains it on the corpus, and writes the trained weights back. */
export async function pretrainSmallLm(dir: string, o: PretrainOptions = {}): Promise<PretrainResult> {
  const seed = o.seed ?? 0;
  const steps = o.steps ?? 600;
  const batch = o.batch ?? 8;
  const lrMax = o.lr ?? 3e-3;
  const warmup = o.warmup ?? Math.min(50, Math.floor(steps / 10));
  const instructed = o.instructed ?? 0;
  if (!(instructed >= 0 && instructed <= 1)) throw new RangeError(`instructed must be a share in [0, 1], got ${instructed}`);
  const written = writeSmallLm(dir, o);
  const engine = Engine.load(written.dir, { threads: 1, buckets: [32, 64, 96, 128, 192, 256] });
  const tok = engine.tokenizer!;
  const w = engine.driver.weights;
  const params = modelParams(engine.config);
  const weightOf = (p: (typeof params)[number]): FArray =>
    p.layer !== null ? w.layers[p.layer]![p.name]! : p.name === 'embed_tokens' ? w.embed : p.name === 'norm' ? w.norm : w.lmHead;
  const arrays = params.map(weightOf) as Float32Array[];
  const opt = new AdamW(arrays, { lr: lrMax, weightDecay: 0.01, beta2: 0.99 });
  const rng = new Rng(seed).fork('pretrain');
  const t0 = Date.now();
  let firstLoss = NaN;
  let lastLoss = NaN;
  for (let step = 0; step < steps; step++) {
    const sums = arrays.map((a) => new Float64Array(a.length));
    let tokens = 0;
    let nll = 0;
    for (let b = 0; b < batch; b++) {
      const d = sampleDialogue(rng);
      // No draw when nothing is instructed: the default model's stream stays what it was.
      const ids = tok.encode(renderDialogue(instructed > 0 && rng.uniform() < instructed ? instructDialogue(d) : d));
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
    if (step === 0) firstLoss = loss;
    lastLoss = loss;
    const elapsedS = (Date.now() - t0) / 1000;
    o.onProgress?.({ step: step + 1, steps, loss, elapsedS, etaS: (elapsedS / (step + 1)) * (steps - step - 1) });
  }
  // The trained weights replace the initial ones, under the same HF keys (the parameter table's).
  const tensors: Record<string, TensorToWrite> = {};
  params.forEach((p, j) => (tensors[p.hfKey] = { shape: p.shape, data: arrays[j]! }));
  writeSafetensors(path.join(written.dir, 'model.safetensors'), tensors, { format: 'pt' }); // atomic (fs-atomic.ts)
  return { dir: written.dir, params: written.params, vocabSize: written.vocabSize, firstLoss, lastLoss };
}
