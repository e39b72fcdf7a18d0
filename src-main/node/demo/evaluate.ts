// How closely the small LM's sampled answers follow the corpus: answers sampled at temperature 1 (full
// distribution) to corpus prompts, rated by each style detector next to its documented rate, and, for the prompted
// corpus, by each prompt-feature detector (prompted.ts PROMPT_FEATURES) on prompts of held-out compositions.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Rng } from '../../common/engine/rng.ts';
import { wilson } from '../../common/training/gate.ts';
import type { Engine } from '../engine/engine.ts';
import { hfToGguf } from '../engine/gguf/convert.ts';
import { LlamaCppReferee } from '../engine/llamacpp.ts';
import { loadTokenizer } from '../engine/tokenizer.ts';
import { demoPrompt, STYLES, type StyleName } from './corpus.ts';
import { samplePrompt, type PromptSpec } from './prompted.ts';

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

/**
 * n answers of the model in `dir` to prompted-corpus prompts of `split`'s compositions, sampled by llama.cpp (the
 * model converted to GGUF, as Rein serves it), temperature 1. Deterministic per seed.
 */
export async function samplePromptedAnswers(dir: string, n: number, seed: number, split: 'train' | 'held-out', maxTokens = 256): Promise<{ spec: PromptSpec; answer: string }[]> {
  const tmp = mkdtempSync(path.join(tmpdir(), 'rein-small-lm-eval-'));
  try {
    const gguf = path.join(tmp, 'model.gguf');
    hfToGguf(dir, gguf);
    const tok = loadTokenizer(dir);
    const ref = await LlamaCppReferee.open(gguf, { contextSize: 512, threads: 1 });
    try {
      const rng = new Rng(seed).fork(`prompted ${split} prompts`);
      const out: { spec: PromptSpec; answer: string }[] = [];
      for (let i = 0; i < n; i++) {
        const spec = samplePrompt(rng, split);
        const ids = tok.encodeChat([{ role: 'user', content: spec.text }], { addGenerationPrompt: true });
        const s = await ref.sample(ids, { stop: tok.eosIds, maxTokens, seed: seed * 100_003 + i });
        out.push({ spec, answer: tok.decode(s, { skipSpecialTokens: true }) });
      }
      return out;
    } finally {
      await ref.close();
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

export function measureStyles(answers: readonly string[]): StyleRate[] {
  return STYLES.map((s) => {
    const k = answers.filter((a) => s.detect(a)).length;
    return { name: s.name, documented: s.rate, measured: k / answers.length, ci: wilson(k, answers.length) };
  });
}
