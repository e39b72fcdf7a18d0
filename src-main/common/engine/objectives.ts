// Training objectives over per-token log-probabilities. Pure TS: the engine computes π_t (and the base's ref_t when
// asked), an objective turns them into a loss and dLoss/dπ_t, and the engine backpropagates dπ through the lm_head
// and the layers. Because the loss depends on the model only through π, this is all an objective needs to know.
//
// For now: a plain policy gradient with a k3 KL penalty to the base (ARCHITECTURE.md §4, without MIS-PO's ratio):
//   per token  ℓ_t = −A·π_t + β·k3_t,   k3_t = exp(ref_t − π_t) − (ref_t − π_t) − 1   (Schulman, "Approximating KL
//   divergence", 2020: k3 is unbiased for KL(π‖ref) and never negative)
//   per sequence  mean_t ℓ_t over its response tokens; per batch, the sequences' weights (1/B by default) sum them.
//   dℓ_t/dπ_t = −A + β·(1 − exp(ref_t − π_t)).
import { BadInputError } from '../errors.ts';

export interface SequenceTerms {
  /** π_t: the policy's log-probabilities of the response tokens, [n]. */
  logp: Float64Array;
  /** The base model's (adapter off) log-probabilities of the same tokens, [n]; null when the objective needs none. */
  ref: Float64Array | null;
  /** The sequence's advantage A (reward minus baseline, already clipped by the caller). */
  advantage: number;
}

export interface SequenceLoss {
  /** This sequence's weighted contribution to the batch loss. */
  loss: number;
  /** dLoss/dπ_t, [n], with the weight applied. */
  dlogp: Float64Array;
  /** Per-token k3 KL to the base, [n], when ref was given. */
  kl: Float64Array | null;
}

export interface Objective {
  readonly name: string;
  /** Whether the engine must run the base model (adapter off) to fill `ref`. */
  readonly needsRef: boolean;
  sequence(terms: SequenceTerms, weight: number): SequenceLoss;
}

export interface PolicyGradientOptions {
  /** β, the weight of the k3 KL to the base; 0 turns the reference forward off. */
  beta: number;
}

export function policyGradient(opts: PolicyGradientOptions): Objective {
  const { beta } = opts;
  if (!Number.isFinite(beta) || beta < 0) throw new BadInputError(`policyGradient: beta must be a finite number ≥ 0, got ${beta}`, 'beta');
  return {
    name: 'policy_gradient',
    needsRef: beta > 0,
    sequence(terms: SequenceTerms, weight: number): SequenceLoss {
      const { logp, ref, advantage } = terms;
      const n = logp.length;
      if (n === 0) throw new BadInputError('policyGradient: a sequence has no response tokens', 'start');
      if (!Number.isFinite(advantage)) throw new BadInputError(`policyGradient: advantage must be finite, got ${advantage}`, 'advantage');
      if (beta > 0 && (ref === null || ref.length !== n)) {
        throw new BadInputError(`policyGradient: beta > 0 needs ${n} reference logprobs, got ${ref === null ? 'none' : ref.length}`, 'ref');
      }
      const w = weight / n;
      const dlogp = new Float64Array(n);
      const kl = beta > 0 ? new Float64Array(n) : null;
      let loss = 0;
      for (let t = 0; t < n; t++) {
        let lt = -advantage * logp[t]!;
        let dt = -advantage;
        if (kl !== null) {
          const d = ref![t]! - logp[t]!;
          const e = Math.exp(d);
          kl[t] = e - d - 1;
          lt += beta * kl[t]!;
          dt += beta * (1 - e);
        }
        loss += w * lt;
        dlogp[t] = w * dt;
      }
      return { loss, dlogp, kl };
    },
  };
}
