// AdamW (Loshchilov & Hutter 2019, arXiv:1711.05101): Adam with decoupled weight decay, written to match
// torch.optim.AdamW (torch/optim/adamw.py, single-tensor path) step for step:
//   p ← p·(1 − lr·wd)
//   m ← β1·m + (1 − β1)·g          v ← β2·v + (1 − β2)·g²
//   p ← p − (lr / (1 − β1ᵗ)) · m / (√v / √(1 − β2ᵗ) + ε)
// Moments are kept in float64 so the result does not depend on summation order or Float32 rounding of the
// state; parameters stay Float32Array (what the graphs take). Plus global grad-norm clipping
// (torch.nn.utils.clip_grad_norm_) and a gradient accumulator.
import { ReinError } from '../errors.ts';

export interface AdamWOptions {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
}

export const ADAMW_DEFAULTS: AdamWOptions = { lr: 1e-4, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01 };

export class OptimizerError extends ReinError {
  constructor(message: string, detail?: unknown) {
    super('bad_input', message, { detail });
    this.name = 'OptimizerError';
  }
}

export type Grads = readonly (Float32Array | Float64Array)[];

/** The optimizer's state, for checkpoints: step count and both moments of every parameter. */
export interface AdamWState {
  step: number;
  m: Float64Array[];
  v: Float64Array[];
}

export class AdamW {
  readonly params: readonly Float32Array[];
  readonly options: AdamWOptions;
  private state: AdamWState;

  constructor(params: readonly Float32Array[], options: Partial<AdamWOptions> = {}) {
    const o = { ...ADAMW_DEFAULTS, ...options };
    for (const [k, v] of Object.entries(o)) {
      if (!Number.isFinite(v) || v < 0) throw new OptimizerError(`AdamW option ${k} must be a finite number ≥ 0, got ${v}`);
    }
    if (o.beta1 >= 1 || o.beta2 >= 1) throw new OptimizerError(`AdamW betas must be < 1, got ${o.beta1}, ${o.beta2}`);
    this.params = params;
    this.options = o;
    this.state = { step: 0, m: params.map((p) => new Float64Array(p.length)), v: params.map((p) => new Float64Array(p.length)) };
  }

  get stepCount(): number {
    return this.state.step;
  }

  /**
   * One update. `lr` overrides the learning rate for this step (schedules). Throws OptimizerError, leaving
   * every parameter and moment untouched, when a gradient is missing, misshaped or not finite.
   */
  step(grads: Grads, lr = this.options.lr): void {
    if (grads.length !== this.params.length) {
      throw new OptimizerError(`AdamW.step got ${grads.length} gradients for ${this.params.length} parameters`);
    }
    for (let j = 0; j < grads.length; j++) {
      const g = grads[j]!;
      if (g.length !== this.params[j]!.length) {
        throw new OptimizerError(`gradient ${j} has ${g.length} values, its parameter ${this.params[j]!.length}`, { index: j });
      }
      for (let i = 0; i < g.length; i++) {
        if (!Number.isFinite(g[i]!)) throw new OptimizerError(`gradient ${j} is not finite at ${i} (${g[i]})`, { index: j, at: i });
      }
    }
    const { beta1, beta2, eps, weightDecay } = this.options;
    const t = this.state.step + 1;
    const bc1 = 1 - beta1 ** t;
    const bc2Sqrt = Math.sqrt(1 - beta2 ** t);
    const stepSize = lr / bc1;
    const decay = 1 - lr * weightDecay;
    for (let j = 0; j < this.params.length; j++) {
      const p = this.params[j]!;
      const g = grads[j]!;
      const m = this.state.m[j]!;
      const v = this.state.v[j]!;
      for (let i = 0; i < p.length; i++) {
        const gi = g[i]!;
        const mi = beta1 * m[i]! + (1 - beta1) * gi;
        const vi = beta2 * v[i]! + (1 - beta2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = p[i]! * decay - (stepSize * mi) / (Math.sqrt(vi) / bc2Sqrt + eps);
      }
    }
    this.state.step = t;
  }

  /** A deep copy of the state (for a checkpoint). */
  saveState(): AdamWState {
    return { step: this.state.step, m: this.state.m.map((a) => a.slice()), v: this.state.v.map((a) => a.slice()) };
  }

  loadState(s: AdamWState): void {
    const ok =
      Number.isInteger(s.step) &&
      s.step >= 0 &&
      s.m.length === this.params.length &&
      s.v.length === this.params.length &&
      this.params.every((p, j) => s.m[j]!.length === p.length && s.v[j]!.length === p.length);
    if (!ok) throw new OptimizerError('AdamW state does not match the parameters (count or sizes differ)');
    this.state = { step: s.step, m: s.m.map((a) => Float64Array.from(a)), v: s.v.map((a) => Float64Array.from(a)) };
  }
}

/** The L2 norm over all gradients together. */
export function globalNorm(grads: Grads): number {
  let ss = 0;
  for (const g of grads) for (let i = 0; i < g.length; i++) ss += g[i]! * g[i]!;
  return Math.sqrt(ss);
}

/**
 * Scale gradients in place so that their global L2 norm is at most maxNorm, as
 * torch.nn.utils.clip_grad_norm_ does (coefficient maxNorm / (norm + 1e-6), capped at 1).
 * Returns the norm before clipping. A non-finite norm throws instead of poisoning the parameters.
 */
export function clipGradNorm(grads: Grads, maxNorm: number): number {
  if (!(maxNorm > 0)) throw new OptimizerError(`maxNorm must be positive, got ${maxNorm}`);
  const norm = globalNorm(grads);
  if (!Number.isFinite(norm)) throw new OptimizerError(`the gradient norm is not finite (${norm})`);
  const coef = maxNorm / (norm + 1e-6);
  if (coef < 1) for (const g of grads) for (let i = 0; i < g.length; i++) g[i] = g[i]! * coef;
  return norm;
}

/**
 * Sums gradients over micro-batches in float64 and hands back their weighted mean, so accumulating N
 * sequences equals one step over all N (given per-sequence weights such as token counts).
 */
export class GradAccumulator {
  private readonly sums: Float64Array[];
  private total = 0;
  private count = 0;

  constructor(sizes: readonly number[]) {
    this.sums = sizes.map((n) => new Float64Array(n));
  }

  get micro(): number {
    return this.count;
  }

  /** Add one micro-batch's gradients with weight `weight` (1, or its token count). */
  add(grads: Grads, weight = 1): void {
    if (grads.length !== this.sums.length) throw new OptimizerError(`expected ${this.sums.length} gradients, got ${grads.length}`);
    if (!(weight > 0) || !Number.isFinite(weight)) throw new OptimizerError(`accumulation weight must be positive, got ${weight}`);
    grads.forEach((g, j) => {
      if (g.length !== this.sums[j]!.length) throw new OptimizerError(`gradient ${j} has ${g.length} values, expected ${this.sums[j]!.length}`);
    });
    grads.forEach((g, j) => {
      const s = this.sums[j]!;
      for (let i = 0; i < g.length; i++) s[i] += weight * g[i]!;
    });
    this.total += weight;
    this.count++;
  }

  /** The weighted mean Σ wᵢ·gᵢ / Σ wᵢ as Float32Arrays; throws when nothing was added. */
  mean(): Float32Array[] {
    if (this.count === 0) throw new OptimizerError('no gradients were accumulated');
    return this.sums.map((s) => {
      const out = new Float32Array(s.length);
      for (let i = 0; i < s.length; i++) out[i] = s[i]! / this.total;
      return out;
    });
  }

  reset(): void {
    for (const s of this.sums) s.fill(0);
    this.total = 0;
    this.count = 0;
  }
}
