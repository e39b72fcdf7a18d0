// The eval gate's operating characteristic by simulation through the real gateDecision (common/training/gate.ts): how
// often a candidate is accepted, rejected or left undecided when its answers are no better than its parent's, and
// when the rate of good answers users get is higher by `lift`. bench/gate-oc.ts prints it; gate.test.ts asserts the
// bars (P(accept | no better) ≤ 5%, P(accept | +20 points) ≥ 80% at the default round size).
//
// The model of one simulated round: `prompts` held-out prompts; prompt i has a parent rate p_i drawn uniformly from
// [rateLow, rateHigh] and a candidate rate p_i + lift. Each side samples `samples` answers per prompt, each good with
// its side's rate, independently of the other side's (no common-random-numbers coupling: that is the case with the
// most discordant pairs for a given lift, so the least power; CRN only removes ties' noise). The judge labels an
// answer correctly with probability `judgeAccuracy` (1: a perfect judge); a pair is a win when the candidate's answer
// is labelled good and the parent's bad, a loss for the reverse, a tie otherwise.
import { defaultSettings } from '../config.ts';
import { Rng } from '../engine/rng.ts';
import { heldoutCount } from './estimate.ts';
import { presetConfig } from './presets.ts';
import { gateDecision, type GateMetrics, type GateVerdict } from './gate.ts';

export interface OcScenario {
  prompts: number;
  samples: number;
  lift: number;
  rateLow: number;
  rateHigh: number;
  judgeAccuracy: number;
  trials: number;
  seed: number;
}

export type OcResult = Record<GateVerdict, number>;

export function simulateGateOc(s: OcScenario): OcResult {
  if (s.rateHigh + s.lift > 1 || s.rateLow < 0 || s.rateLow > s.rateHigh) throw new RangeError(`gate OC: parent rates [${s.rateLow}, ${s.rateHigh}] + lift ${s.lift} leave [0, 1]`);
  const rng = new Rng(s.seed);
  const counts: OcResult = { accept: 0, reject: 0, undecided: 0 };
  const label = (good: boolean): boolean => (rng.uniform() < s.judgeAccuracy ? good : !good);
  for (let t = 0; t < s.trials; t++) {
    let wins = 0;
    let losses = 0;
    for (let i = 0; i < s.prompts; i++) {
      const p = s.rateLow + (s.rateHigh - s.rateLow) * rng.uniform();
      const c = p + s.lift;
      for (let j = 0; j < s.samples; j++) {
        const cand = label(rng.uniform() < c);
        const par = label(rng.uniform() < p);
        if (cand && !par) wins++;
        else if (par && !cand) losses++;
      }
    }
    const pairs = s.prompts * s.samples;
    const m: GateMetrics = {
      kind: 'ratings',
      heldout: s.prompts,
      correct: 0,
      accuracy: null,
      accuracyCi: null,
      previousAccuracy: null,
      pairedCi: null,
      answers: { judge: 'reward-model', prompts: s.prompts, samples: s.samples, wins, losses, ties: pairs - wins - losses, candidate: 0, parent: 0 },
      // Within the budget: the KL rule is not what is simulated.
      kl: 0,
      klBase: 0,
      klTokens: 1,
      klBudget: 1,
    };
    counts[gateDecision(m).verdict]++;
  }
  return { accept: counts.accept / s.trials, reject: counts.reject / s.trials, undecided: counts.undecided / s.trials };
}

/**
 * The default round's gate: training.threshold ratings (the default setting), the balanced preset's held-out share of
 * them (it does not depend on the model's size) and its answers spread over those prompts.
 */
export function defaultRoundScenario(lift: number, o: Partial<OcScenario> = {}): OcScenario {
  const cfg = presetConfig('balanced', { activeParams: 494e6, totalParams: 494e6, moe: false });
  const prompts = heldoutCount(defaultSettings()['training.threshold'], cfg.heldoutFraction);
  return { prompts, samples: Math.ceil(cfg.gateAnswers / prompts), lift, rateLow: 0, rateHigh: 1 - lift, judgeAccuracy: 1, trials: 4000, seed: 1, ...o };
}
