// The eval gate's reward metric (issue #14 item 3): the latest reward model scores answers the candidate and its
// parent sample on the round's held-out prompts, with the same sampling seed per prompt on both sides (common random
// numbers), and the paired mean difference candidate − parent is reported with its 95% interval. It blocks a
// candidate only with reward.gateBlocks, and then only when the interval lies wholly below 0.
import type { ContextMessage } from '../../../common/domain.ts';
import type { LoraAdapter } from '../../../common/engine/lora.ts';
import { meanEstimate } from '../../../common/training/intervals.ts';
import type { Engine } from '../../engine/engine.ts';
import type { StoredRewardModel } from '../../store/reward.ts';
import { scoreAnswer } from './train.ts';

export interface RewardGateMetrics {
  rewardModelVersion: number;
  /** Held-out prompts sampled on both sides. */
  prompts: number;
  /** Mean p(good) of the candidate's and the parent's answers. */
  candidate: number;
  parent: number;
  /** candidate − parent, paired per prompt, with its 95% normal interval. */
  difference: { mean: number; ci: [number, number] };
}

/** The answer length: the gate samples 2 answers per prompt (reward.gatePrompts of them), each a forward per token. */
export const REWARD_GATE_MAX_TOKENS = 48;

export async function rewardGate(
  engine: Engine,
  model: StoredRewardModel,
  candidate: LoraAdapter,
  parent: LoraAdapter | null,
  prompts: readonly (readonly ContextMessage[])[],
  seed: number,
  maxPrompts: number,
): Promise<RewardGateMetrics | null> {
  const tok = engine.tokenizer;
  if (tok === null || prompts.length === 0 || maxPrompts <= 0) return null;
  const c: number[] = [];
  const p: number[] = [];
  for (const [i, messages] of prompts.slice(0, maxPrompts).entries()) {
    const ids = tok.encodeChat(messages, { addGenerationPrompt: true });
    for (const [adapter, out] of [[candidate, c], [parent, p]] as const) {
      const s = await engine.sample(ids, { adapter, seed: seed + i, maxTokens: REWARD_GATE_MAX_TOKENS, temperature: 1 });
      out.push(await scoreAnswer(engine, model, messages, tok.decode(s.tokens, { skipSpecialTokens: true })));
    }
  }
  const d = meanEstimate(c.map((x, i) => x - p[i]!));
  const mean = (xs: number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;
  return { rewardModelVersion: model.version, prompts: c.length, candidate: mean(c), parent: mean(p), difference: { mean: d.mean, ci: d.ci } };
}

/** Whether the reward metric rejects the candidate (only with reward.gateBlocks), and why. */
export function rewardGateBlocks(m: RewardGateMetrics | null, blocks: boolean): string | null {
  if (!blocks || m === null || m.difference.ci[1] >= 0) return null;
  const [lo, hi] = m.difference.ci;
  return `the reward model scores the candidate's answers below its parent's: ${m.difference.mean.toFixed(3)} [${lo.toFixed(3)}, ${hi.toFixed(3)}] on ${m.prompts} held-out prompts (reward.gateBlocks)`;
}
