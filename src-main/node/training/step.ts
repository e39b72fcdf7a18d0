// The one training step (docs/architecture.md, "A round, end to end"): a batch's gradient, accumulated over its MIS-PO and KTO sequences (each
// weighs 1/B), then the global-norm clip and the AdamW step. The round runs it; so do the benchmark
// (bench/train-step.ts) and the whole-model finite-difference checks (engine/*.tier2.test.ts), which call
// batchGradient for the loss and the gradients the round would apply.
//
// KTO's reference point z0 (Ethayarajh et al. 2024, arXiv:2402.01306, §4.1): the KL of the policy to the base,
// estimated on mismatched pairs of the batch, the prompt of sequence i with the completion of sequence i+1 (mod m):
//   z0 = max(0, (1/m) Σ_i [log π(y_{i+1} | x_i) − log ref(y_{i+1} | x_i)])
// detached (it enters the graph as an input); the sums run over the completion's mask-1 tokens, as KTO's r does.
// With fewer than two KTO sequences in a batch there is no mismatched pair, and the last estimate is kept (0 before
// the first).
import { BadInputError } from '../../common/errors.ts';
import { clipGradNorm, type AdamW } from '../../common/engine/adamw.ts';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { k3 } from '../../common/training/gate.ts';
import { PACK_SPAN, packGroups, runCost, type PackGroup, type PackInput } from '../../common/training/pack.ts';
import type { Engine } from '../engine/engine.ts';
import type { ObjectiveRunner } from './objective-runner.ts';

/** One sequence of a step: prompt + response ids, where the response starts, the base's logprobs, and its target. */
export interface StepSequence {
  tokens: readonly number[];
  /** Index of the first response token (≥ 1). */
  start: number;
  /**
   * Per response token, 1 where it trains and 0 where it is context (an agent turn's tool results): the losses, the
   * KL anchor, KTO's log-ratio and z0, and the ratio metrics count the 1s only.
   */
  mask: readonly number[];
  /** The base model's (adapter off) logprobs of the response tokens. */
  ref: Float64Array;
  kind: 'mispo' | 'kto';
  /** MIS-PO: the behaviour logprobs of the response tokens. */
  mu: Float64Array | null;
  /** MIS-PO: r − baseline, clipped. */
  advantage: number;
  /** KTO: desirable or undesirable. */
  desirable: boolean;
  /** KTO: the term's weight, the class weight λ_D or λ_U (ktoClassWeights) times the rating's magnitude |r|. */
  ktoWeight: number;
  /**
   * The round's parent version's logprobs of the response tokens (the base's, `ref`, in a first round): the step
   * then reports the policy's KL to it (klToParent), the measure the gate's budget bounds. Not part of the loss.
   */
  parent?: Float64Array;
}

/** What persists across a round's steps: KTO's last z0 and the base's logprobs of mismatched pairs (it never changes). */
export interface StepState {
  z0: number;
  mismatchedRefs: Map<string, Float64Array>;
}

export function newStepState(): StepState {
  return { z0: 0, mismatchedRefs: new Map() };
}

export interface BatchGradient {
  loss: number;
  /** Mean per-token k3 KL to the base over the batch. */
  kl: number;
  /** Share of the MIS-PO tokens whose ratio left the clip, averaged over the MIS-PO sequences. */
  clipFraction: number;
  /** ρ = exp(π − μ) over the batch's MIS-PO tokens. */
  ratio: { min: number; geoMean: number; max: number } | null;
  /** KTO's z0 used in this step. */
  z0: number;
  /**
   * Mean per-token k3 = (ρ − 1) − log ρ, ρ = π / π_parent, over the masked tokens of the sequences that carry
   * `parent`, at the adapter as it was before this step (null when none carries it): the gate's KL estimator.
   */
  klToParent: number | null;
  /** dLoss/d tensor in the order of adapterParams: [A₀, B₀, A₁, B₁, …], float64. */
  grads: Float64Array[];
  tokens: number;
  /** Forward-and-backward runs the step took: one per pack of sequences sharing a prefix, one per lone sequence. */
  runs: number;
}

export interface StepMetrics {
  loss: number;
  kl: number;
  clipFraction: number;
  gradNorm: number;
  ratio: { min: number; geoMean: number; max: number } | null;
  z0: number;
  klToParent: number | null;
  tokens: number;
  /** As BatchGradient.runs. */
  runs: number;
}

/** Sum and count of the gate's per-token k3 (common/training/gate.ts) of logp against parent over the masked tokens. */
function k3ToParent(logp: ArrayLike<number>, parent: Float64Array, mask: readonly number[]): { sum: number; n: number } {
  let sum = 0;
  let n = 0;
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] !== 1) continue;
    sum += k3(logp[i]! - parent[i]!);
    n++;
  }
  return { sum, n };
}

function addInto(dst: Float64Array, src: ArrayLike<number>): void {
  for (let i = 0; i < dst.length; i++) dst[i] += src[i]!;
}

/** The mismatched sequence prompt(a) + response(b), cut from the left of the prompt to the longer one's length. */
function mismatched(a: StepSequence, b: StepSequence): { tokens: number[]; start: number; mask: readonly number[] } {
  const resp = b.tokens.slice(b.start);
  const budget = Math.max(a.tokens.length, b.tokens.length);
  const keep = Math.max(1, Math.min(a.start, budget - resp.length));
  return { tokens: [...a.tokens.slice(a.start - keep, a.start), ...resp], start: keep, mask: b.mask };
}

/** KTO's z0 from the batch's mismatched pairs (see the head of this file); null with fewer than two KTO sequences. */
export async function ktoReferencePoint(engine: Engine, adapter: LoraAdapter, kto: readonly StepSequence[], cache?: Map<string, Float64Array>): Promise<number | null> {
  const m = kto.length;
  if (m < 2) return null;
  let sum = 0;
  for (let i = 0; i < m; i++) {
    const x = mismatched(kto[i]!, kto[(i + 1) % m]!);
    const key = x.tokens.join(',') + '@' + x.start;
    let ref = cache?.get(key);
    if (ref === undefined) {
      ref = await engine.logprobs(x.tokens, { start: x.start, adapter: null });
      cache?.set(key, ref);
    }
    const logp = await engine.logprobs(x.tokens, { start: x.start, adapter });
    for (let t = 0; t < logp.length; t++) if (x.mask[t] === 1) sum += logp[t]! - ref[t]!;
  }
  return Math.max(0, sum / m);
}

/** How a step runs its sequences. */
export interface StepOptions {
  /**
   * Sequences that begin with the same ids run as packs of up to `packSpan` times their longest member
   * (common/training/pack.ts, PACK_SPAN by default); 0 runs every sequence alone. Either way the loss and gradient
   * are the same, to float rounding.
   */
  packSpan?: number;
}

/** The packs and lone sequences a step (or the round's forward passes over the same sequences) runs a batch as. */
export function packBatch(engine: Engine, batch: readonly PackInput[], o: StepOptions = {}): PackGroup[] {
  const driver = engine.driver;
  // A run over more than recomputeAbove tokens runs each layer's forward twice (driver.ts): a third more work.
  const cost = (n: number): number => {
    const T = driver.bucket(n);
    return runCost(driver.config, T) * (T > driver.recomputeAbove ? 4 / 3 : 1);
  };
  return packGroups(batch, { cost, span: o.packSpan ?? PACK_SPAN });
}

/**
 * The logprobs of each sequence's tokens[start..n) under `adapter` (null: the base), in the batch's order, with the
 * step's packs (packBatch): the round's base and parent logprobs and the gate's run each shared prefix once per pack.
 */
export async function batchLogprobs(engine: Engine, batch: readonly PackInput[], adapter: LoraAdapter | null, checkCancel?: () => void): Promise<Float64Array[]> {
  const out: Float64Array[] = [];
  for (const g of packBatch(engine, batch)) {
    checkCancel?.();
    const seqs = g.members.map((i) => batch[i]!);
    const lps = g.prefix === 0 ? [await engine.logprobs(seqs[0]!.tokens, { start: seqs[0]!.start, adapter })] : await engine.driver.packedLogprobs(g.prefix, seqs, adapter);
    g.members.forEach((i, k) => (out[i] = lps[k]!));
  }
  return out;
}

/**
 * The batch's loss and LoRA gradients at the adapter as it is (nothing is updated). Sequences that share a long
 * leading run of ids (an agent's system prompt and tools) run it once, as one pack (common/training/pack.ts,
 * Driver.packedGrad); the rest run alone.
 */
export async function batchGradient(
  engine: Engine,
  adapter: LoraAdapter,
  objectives: ObjectiveRunner,
  batch: readonly StepSequence[],
  state: StepState,
  checkCancel?: () => void,
  o: StepOptions = {},
): Promise<BatchGradient> {
  if (batch.length === 0) throw new BadInputError('a training step needs at least one sequence', 'batch');
  for (const s of batch) {
    const n = s.tokens.length - s.start;
    if (s.mask.length !== n) throw new BadInputError(`a sequence has ${n} response tokens but a mask of ${s.mask.length}`, 'mask');
  }
  const z = await ktoReferencePoint(engine, adapter, batch.filter((s) => s.kind === 'kto'), state.mismatchedRefs);
  if (z !== null) state.z0 = z;
  const z0 = state.z0;
  const grads = adapter.pairs.flatMap((p) => [new Float64Array(p.a.length), new Float64Array(p.b.length)]);
  const w = 1 / batch.length;
  let loss = 0;
  let kl = 0;
  let clip = 0;
  let nMispo = 0;
  let rMin = Infinity;
  let rMax = -Infinity;
  let logSum = 0;
  let nTok = 0;
  let tokens = 0;
  let klParentSum = 0;
  let klParentN = 0;
  // One sequence's share of the loss and metrics, and its dLoss/dlogp.
  const objective = async (s: StepSequence, logp: Float64Array): Promise<Float64Array> => {
    if (s.parent !== undefined) {
      const k = k3ToParent(logp, s.parent, s.mask);
      klParentSum += k.sum;
      klParentN += k.n;
    }
    if (s.kind === 'mispo') {
      if (s.mu === null) throw new BadInputError('a MIS-PO sequence has no behaviour logprobs', 'mu');
      for (let i = 0; i < logp.length; i++) {
        if (s.mask[i] !== 1) continue;
        const d = logp[i]! - s.mu[i]!;
        rMin = Math.min(rMin, d);
        rMax = Math.max(rMax, d);
        logSum += d;
        nTok++;
      }
      const r = await objectives.misPo({ logp, mu: s.mu, ref: s.ref, mask: s.mask, advantage: s.advantage });
      loss += w * r.loss;
      kl += w * r.kl;
      clip += r.clipFrac;
      nMispo++;
      return r.dlogp.map((d) => d * w);
    }
    const r = await objectives.ktoSeq({ logp, ref: s.ref, mask: s.mask, desirable: s.desirable, z0, weight: s.ktoWeight });
    loss += w * r.loss;
    kl += w * r.kl;
    return r.dlogp.map((d) => d * w);
  };
  const driver = engine.driver;
  const groups = packBatch(engine, batch, o);
  for (const grp of groups) {
    checkCancel?.();
    const seqs = grp.members.map((i) => batch[i]!);
    let g: { a: ArrayLike<number>; b: ArrayLike<number> }[];
    if (grp.prefix === 0) {
      const s = seqs[0]!;
      g = (await driver.grad(s.tokens, s.start, adapter, (logp) => objective(s, logp))).grads;
    } else {
      g = (
        await driver.packedGrad(grp.prefix, seqs, adapter, async (logps) => {
          const d: Float64Array[] = [];
          for (let k = 0; k < seqs.length; k++) d.push(await objective(seqs[k]!, logps[k]!));
          return d;
        })
      ).grads;
    }
    g.forEach((p, k) => {
      addInto(grads[2 * k]!, p.a);
      addInto(grads[2 * k + 1]!, p.b);
    });
    for (const s of seqs) tokens += s.tokens.length;
  }
  const ratio = nTok === 0 ? null : { min: Math.exp(rMin), geoMean: Math.exp(logSum / nTok), max: Math.exp(rMax) };
  return { loss, kl, clipFraction: nMispo > 0 ? clip / nMispo : 0, ratio, z0, klToParent: klParentN > 0 ? klParentSum / klParentN : null, grads, tokens, runs: groups.length };
}

/** One optimizer step: batchGradient, the global-norm clip (maxGradNorm 0 = off), AdamW on the adapter in place. */
export async function trainStep(
  engine: Engine,
  adapter: LoraAdapter,
  optimizer: AdamW,
  objectives: ObjectiveRunner,
  batch: readonly StepSequence[],
  state: StepState,
  o: { maxGradNorm: number; checkCancel?: () => void } & StepOptions,
): Promise<StepMetrics> {
  const params = adapter.pairs.flatMap((p) => [p.a, p.b]);
  if (optimizer.params.length !== params.length || optimizer.params.some((p, i) => p !== params[i])) {
    throw new BadInputError('trainStep: the optimizer was not built over this adapter (use new AdamW(adapterParams(adapter)))', 'optimizer');
  }
  const g = await batchGradient(engine, adapter, objectives, batch, state, o.checkCancel, o);
  const grads = g.grads.map((x) => Float32Array.from(x));
  const gradNorm = o.maxGradNorm > 0 ? clipGradNorm(grads, o.maxGradNorm) : 0;
  optimizer.step(grads);
  return { loss: g.loss, kl: g.kl, clipFraction: g.clipFraction, gradNorm, ratio: g.ratio, z0: g.z0, klToParent: g.klToParent, tokens: g.tokens, runs: g.runs };
}
