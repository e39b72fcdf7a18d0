// The whole-model finite-difference checks (tier 2) run the round's step (node/training/step.ts): a batch of
// MIS-PO and KTO sequences built here on the model under test, the step's gradients, and the loss recomputed from
// logprobs alone through the same objective graphs, for central differences at a perturbed adapter.
import type { LoraAdapter } from '../../../common/engine/lora.ts';
import { ObjectiveRunner } from '../../training/objective-runner.ts';
import { batchGradient, newStepState, type BatchGradient, type StepSequence } from '../../training/step.ts';
import type { Engine } from '../engine.ts';

export interface CheckSequence {
  tokens: number[];
  start: number;
  /** MIS-PO with this advantage; KTO when `desirable` is set. */
  advantage?: number;
  desirable?: boolean;
  /** Per response token, 1 where it trains (default all ones). */
  mask?: number[];
}

// A wide band and β large enough that the KL term matters in the gradient; the clip is MIS-PO's.
const OPTIONS = { beta: 0.5, bandLow: 0.5, bandHigh: 2, drift: 'scale' as const, ratioClipLow: 0.5, ratioClipHigh: 2, ktoBeta: 0.3 };

export class StepCheck {
  readonly objectives = new ObjectiveRunner(OPTIONS);
  batch: StepSequence[] = [];
  private readonly engine: Engine;

  private constructor(engine: Engine) {
    this.engine = engine;
  }

  /** The batch on this engine: ref from the base; MIS-PO's μ is the base's logprob shifted by ±0.1 (ratios inside the clip). */
  static async build(engine: Engine, seqs: readonly CheckSequence[]): Promise<StepCheck> {
    const c = new StepCheck(engine);
    for (const s of seqs) {
      const ref = await engine.logprobs(s.tokens, { start: s.start });
      const kto = s.desirable !== undefined;
      c.batch.push({
        tokens: s.tokens,
        start: s.start,
        mask: s.mask ?? s.tokens.slice(s.start).map(() => 1),
        ref,
        kind: kto ? 'kto' : 'mispo',
        mu: kto ? null : ref.map((x, i) => x + (i % 2 === 0 ? 0.1 : -0.1)),
        advantage: s.advantage ?? 0,
        desirable: s.desirable ?? false,
        ktoWeight: s.desirable === false ? 1.25 : 1,
      });
    }
    return c;
  }

  /** The round's step at the adapter as it is. */
  step(adapter: LoraAdapter, engine = this.engine): Promise<BatchGradient> {
    return batchGradient(engine, adapter, this.objectives, this.batch, newStepState());
  }

  /** The step's loss from logprobs alone (forward only), with KTO's z0 held at the step's detached value. */
  async lossAt(adapter: LoraAdapter, z0: number): Promise<number> {
    let loss = 0;
    const w = 1 / this.batch.length;
    for (const s of this.batch) {
      const logp = await this.engine.logprobs(s.tokens, { start: s.start, adapter });
      const r =
        s.kind === 'mispo'
          ? await this.objectives.misPo({ logp, mu: s.mu!, ref: s.ref, mask: s.mask, advantage: s.advantage })
          : await this.objectives.ktoSeq({ logp, ref: s.ref, mask: s.mask, desirable: s.desirable, z0, weight: s.ktoWeight });
      loss += w * r.loss;
    }
    return loss;
  }

  dispose(): Promise<void> {
    return this.objectives.dispose();
  }
}
