// Runs the objective graphs of common/training/objectives.ts on ONNX Runtime, one sequence at a time, padded to a
// power-of-two bucket so a few sessions serve a whole round. Always float64: the graphs are tiny next to the model,
// and the ratios exp(π − μ) are where float32 rounding would show.
import { BadInputError } from '../../common/errors.ts';
import type { Graph } from '../../common/engine/ir.ts';
import { ktoGraph, misPoGraph, objectiveBucket, type KtoOptions, type MisPoOptions } from '../../common/training/objectives.ts';
import { Runtime } from '../engine/runtime.ts';

export interface MisPoTerms {
  logp: Float64Array;
  mu: Float64Array;
  ref: Float64Array;
  /** 1 on the tokens that train, 0 on context inside the response (an agent turn's tool results). */
  mask: ArrayLike<number>;
  advantage: number;
}

export interface MisPoResult {
  loss: number;
  dlogp: Float64Array;
  kl: number;
  clipFrac: number;
  rhoBar: number;
  scale: number;
}

export interface KtoTerms {
  logp: Float64Array;
  ref: Float64Array;
  /** As MisPoTerms.mask: the sequence's log-ratio, the anchor and the gradient cover the 1s only. */
  mask: ArrayLike<number>;
  desirable: boolean;
  z0: number;
  /** The class weight λ times the rating's magnitude. */
  weight: number;
}

export interface KtoResult {
  loss: number;
  dlogp: Float64Array;
  logRatio: number;
  kl: number;
}

function padded(src: Float64Array, n: number): Float64Array {
  const out = new Float64Array(n);
  out.set(src);
  return out;
}

/** The graph's mask input, padded to N: the sequence's own 0/1 mask, which must have n entries and one 1 at least. */
function paddedMask(what: string, mask: ArrayLike<number>, n: number, N: number): Float64Array {
  if (mask.length !== n) throw new BadInputError(`${what}: ${n} policy logprobs but a mask of ${mask.length}`, 'mask');
  const out = new Float64Array(N);
  let ones = 0;
  for (let i = 0; i < n; i++) {
    const m = mask[i]!;
    if (m !== 0 && m !== 1) throw new BadInputError(`${what}: mask[${i}] is ${m}, not 0 or 1`, 'mask');
    out[i] = m;
    ones += m;
  }
  // The graphs average over the mask: with no 1 there is nothing to train and the mean is 0/0.
  if (ones === 0) throw new BadInputError(`${what}: the mask trains none of the ${n} response tokens`, 'mask');
  return out;
}

function finite(name: string, a: Float64Array): void {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i]!)) throw new BadInputError(`objective: ${name}[${i}] is ${a[i]}`, name);
}

export class ObjectiveRunner {
  private readonly rt: Runtime;
  private readonly ownRuntime: boolean;
  private readonly mispo: Graph;
  private readonly kto: Graph;

  constructor(o: MisPoOptions & KtoOptions, runtime?: Runtime) {
    this.ownRuntime = runtime === undefined;
    this.rt = runtime ?? new Runtime({ intraOpThreads: 1, optimization: 'basic' });
    this.mispo = misPoGraph(o);
    this.kto = ktoGraph(o);
  }

  async misPo(t: MisPoTerms): Promise<MisPoResult> {
    const n = t.logp.length;
    if (n === 0) throw new BadInputError('MIS-PO: a sequence has no response tokens', 'tokens');
    if (t.mu.length !== n || t.ref.length !== n) {
      throw new BadInputError(`MIS-PO: ${n} policy logprobs but ${t.mu.length} behaviour and ${t.ref.length} reference ones`, 'logprobs');
    }
    if (!Number.isFinite(t.advantage)) throw new BadInputError(`MIS-PO: advantage must be finite, got ${t.advantage}`, 'advantage');
    finite('logp', t.logp);
    finite('mu', t.mu);
    finite('ref', t.ref);
    const N = objectiveBucket(n);
    const mask = paddedMask('MIS-PO', t.mask, n, N);
    const out = await this.rt.run(this.mispo, { N }, {
      logp: padded(t.logp, N),
      mu: padded(t.mu, N),
      ref: padded(t.ref, N),
      mask,
      adv: Float64Array.of(t.advantage),
    });
    return {
      loss: out['loss']!.data[0] as number,
      dlogp: (out['dlogp']!.data as Float64Array).slice(0, n),
      kl: out['kl']!.data[0] as number,
      clipFrac: out['clip_frac']!.data[0] as number,
      rhoBar: out['rho_bar']!.data[0] as number,
      scale: out['scale']!.data[0] as number,
    };
  }

  async ktoSeq(t: KtoTerms): Promise<KtoResult> {
    const n = t.logp.length;
    if (n === 0) throw new BadInputError('KTO: a sequence has no response tokens', 'tokens');
    if (t.ref.length !== n) throw new BadInputError(`KTO: ${n} policy logprobs but ${t.ref.length} reference ones`, 'logprobs');
    if (!(t.weight >= 0) || !Number.isFinite(t.weight)) throw new BadInputError(`KTO: weight must be finite and ≥ 0, got ${t.weight}`, 'weight');
    if (!Number.isFinite(t.z0)) throw new BadInputError(`KTO: z0 must be finite, got ${t.z0}`, 'z0');
    finite('logp', t.logp);
    finite('ref', t.ref);
    const N = objectiveBucket(n);
    const mask = paddedMask('KTO', t.mask, n, N);
    const out = await this.rt.run(this.kto, { N }, {
      logp: padded(t.logp, N),
      ref: padded(t.ref, N),
      mask,
      desirable: Float64Array.of(t.desirable ? 1 : 0),
      z0: Float64Array.of(t.z0),
      weight: Float64Array.of(t.weight),
    });
    return {
      loss: out['loss']!.data[0] as number,
      dlogp: (out['dlogp']!.data as Float64Array).slice(0, n),
      logRatio: out['log_ratio']!.data[0] as number,
      kl: out['kl']!.data[0] as number,
    };
  }

  async dispose(): Promise<void> {
    if (this.ownRuntime) await this.rt.dispose();
    else {
      await this.rt.dispose(this.mispo);
      await this.rt.dispose(this.kto);
    }
  }
}
