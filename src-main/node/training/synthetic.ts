// Synthetic preference rounds on the demo model (demo-model.ts): sample on-policy answers with their behaviour
// logprobs, rate them with a visible rule, and measure how often held-out answers follow the rule. `rein demo` and
// the learning test both use it; the rule itself is the caller's.
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { Rng } from '../../common/engine/rng.ts';
import { wilson } from '../../common/training/gate.ts';
import type { Engine } from '../engine/engine.ts';
import type { ReinCore } from '../core/core.ts';
import { activeModelId } from '../serving/producer.ts';
import { demoPrompt } from './demo-model.ts';

export const SAMPLE_OPTS = { temperature: 1, topP: 1, maxTokens: 6 } as const;

export interface SampledTurn {
  prompt: string;
  promptIds: number[];
  tokens: number[];
  logprobs: number[];
  text: string;
}

export async function sampleTurns(engine: Engine, n: number, seed: number, adapter: LoraAdapter | null = null): Promise<SampledTurn[]> {
  const tok = engine.tokenizer!;
  const rng = new Rng(seed);
  const out: SampledTurn[] = [];
  for (let i = 0; i < n; i++) {
    const prompt = demoPrompt(rng);
    const promptIds = tok.encodeChat([{ role: 'user', content: prompt }], { addGenerationPrompt: true });
    const s = await engine.sample(promptIds, { ...SAMPLE_OPTS, seed: seed * 100_003 + i, adapter });
    out.push({ prompt, promptIds, tokens: s.tokens, logprobs: s.logprobs, text: tok.decode(s.tokens, { skipSpecialTokens: true }) });
  }
  return out;
}

/** The share of `turns` the rule likes, with its 95% Wilson interval. */
export function preferredRate(turns: readonly SampledTurn[], rule: (text: string) => boolean): { rate: number; ci: [number, number]; k: number; n: number } {
  const k = turns.filter((t) => rule(t.text)).length;
  return { rate: k / turns.length, ci: wilson(k, turns.length), k, n: turns.length };
}

/** Stores the turns through the core as on-policy captures and rates each one by the rule. */
export async function captureAndRate(core: ReinCore, turns: readonly SampledTurn[], rule: (text: string) => boolean, tag: string): Promise<{ good: number; bad: number }> {
  let good = 0;
  // sampleTurns draws from the active model; its id is what the round trains.
  const modelId = activeModelId(core);
  for (const [i, t] of turns.entries()) {
    const { turn } = await core.call(
      'captureTurn',
      {
        source: 'api',
        eventId: `${tag}-${i}`,
        prompt: t.prompt,
        response: t.text,
        tokens: t.tokens,
        logprobs: t.logprobs.map((x) => Math.min(0, x)),
        policy: { modelId, temperature: SAMPLE_OPTS.temperature, topP: SAMPLE_OPTS.topP },
      },
      'test',
    );
    // A direct core (the demo, the tests) stores or throws; only the server's core spools.
    if (turn === null) throw new Error(`captureAndRate: turn ${tag}-${i} was spooled, not stored`);
    const ok = rule(t.text);
    if (ok) good++;
    await core.call('rate', { turnId: turn.id, value: ok ? 'good' : 'bad', rater: 'rule' }, 'test');
  }
  return { good, bad: turns.length - good };
}
