// On-policy turns of the small LM for round tests that need a round's mechanics (kill -9, a poison turn, rollback),
// not its learning: answers sampled with the engine (temperature 1, full distribution) to training prompts, stored
// through the core with their tokens and μ, and rated by a corpus style rule. The learning curve itself samples
// through the serve-model stack (node/demo/learning.ts).
import { Rng } from '../../../common/engine/rng.ts';
import type { ReinCore } from '../../core/core.ts';
import type { Engine } from '../../engine/engine.ts';
import { activeModelId } from '../../serving/producer.ts';
import { TRAINING_PROMPTS } from '../../demo/learning.ts';

/** How these turns are sampled: the full distribution at temperature 1, so μ is the engine's plain logprob. */
export const SAMPLE_OPTS = { temperature: 1, topP: 1 } as const;

export interface SampledTurn {
  prompt: string;
  /** The prompt as the chat template renders it, up to the assistant header. */
  promptIds: number[];
  tokens: number[];
  logprobs: number[];
  text: string;
}

export async function sampleTurns(engine: Engine, n: number, seed: number, maxTokens = 32): Promise<SampledTurn[]> {
  const tok = engine.tokenizer!;
  const rng = new Rng(seed);
  const out: SampledTurn[] = [];
  for (let i = 0; i < n; i++) {
    const prompt = TRAINING_PROMPTS[Math.floor(rng.uniform() * TRAINING_PROMPTS.length)]!;
    const ids = tok.encodeChat([{ role: 'user', content: prompt }], { addGenerationPrompt: true });
    const s = await engine.sample(ids, { ...SAMPLE_OPTS, maxTokens, seed: seed * 100_003 + i });
    out.push({ prompt, promptIds: ids, tokens: s.tokens, logprobs: s.logprobs, text: tok.decode(s.tokens, { skipSpecialTokens: true }) });
  }
  return out;
}

/** Stores the turns through the core as on-policy captures of the active model and rates each one by the rule. */
export async function captureAndRate(core: ReinCore, turns: readonly SampledTurn[], rule: (text: string) => boolean, tag: string): Promise<{ good: number; bad: number }> {
  let good = 0;
  const modelId = activeModelId(core);
  for (const [i, t] of turns.entries()) {
    const { turn } = await core.call(
      'captureTurn',
      { source: 'api', eventId: `${tag}-${i}`, prompt: t.prompt, response: t.text, tokens: t.tokens, logprobs: t.logprobs.map((x) => Math.min(0, x)), policy: { modelId, ...SAMPLE_OPTS } },
      'test',
    );
    if (turn === null) throw new Error(`captureAndRate: turn ${tag}-${i} was spooled, not stored`);
    const ok = rule(t.text);
    if (ok) good++;
    await core.call('rate', { turnId: turn.id, value: ok ? 'good' : 'bad', rater: 'rule' }, 'test');
  }
  return { good, bad: turns.length - good };
}
