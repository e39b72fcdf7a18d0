// How closely the small LM's sampled answers follow the corpus: n answers sampled with the engine's sampler
// (temperature 1, full distribution) to corpus prompts, rated by each style detector, next to its documented rate.
import { Rng } from '../../common/engine/rng.ts';
import { wilson } from '../../common/training/gate.ts';
import type { Engine } from '../engine/engine.ts';
import { demoPrompt, STYLES, type StyleName } from './corpus.ts';

export interface StyleRate {
  name: StyleName;
  documented: number;
  measured: number;
  ci: [number, number];
}

export async function sampleAnswers(engine: Engine, n: number, seed: number, maxTokens = 96): Promise<string[]> {
  const tok = engine.tokenizer!;
  const rng = new Rng(seed).fork('prompts');
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const ids = tok.encodeChat([{ role: 'user', content: demoPrompt(rng) }], { addGenerationPrompt: true });
    const s = await engine.sample(ids, { temperature: 1, maxTokens, seed: seed * 100_003 + i });
    out.push(tok.decode(s.tokens, { skipSpecialTokens: true }));
  }
  return out;
}

export function measureStyles(answers: readonly string[]): StyleRate[] {
  return STYLES.map((s) => {
    const k = answers.filter((a) => s.detect(a)).length;
    return { name: s.name, documented: s.rate, measured: k / answers.length, ci: wilson(k, answers.length) };
  });
}
