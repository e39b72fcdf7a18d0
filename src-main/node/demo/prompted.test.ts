// The prompt-conditional corpus: its answers follow every prompt feature, each feature's detector fails on an answer
// to another prompt, the styles keep their documented base rates independent of the prompt, and the held-out
// compositions never reach training while every pair of factor values does.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Rng } from '../../common/engine/rng.ts';
import { loadTokenizer } from '../engine/tokenizer.ts';
import { STYLES } from './corpus.ts';
import {
  codeLangs, COMPOSITIONS, corpus, featureRates, HELD_OUT, HELD_OUT_SHARE, isHeldOut, LANGS, PROMPT_FEATURES, prose, sampleAnswer, sampleDialogue,
  SHAPES, SHORT_MAX_WORDS, TASKS, wordCount, type FeatureSpec,
} from './prompted.ts';
import { renderDialogue, writeSmallLm } from './small-lm.ts';

const tmp = mkdtempSync(path.join(tmpdir(), 'rein-prompted-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const N = 20_000;
const ds = corpus(N, 7);

describe('prompted corpus: prompt features', () => {
  it('every answer follows every feature its prompt sets, and each feature applies to many answers', () => {
    const rates = featureRates(ds);
    for (const f of rates) {
      expect(f.n, f.name).toBeGreaterThan(1000);
      expect(f.followed, f.name).toBe(f.n);
    }
    expect(rates.map((f) => f.name)).toEqual(PROMPT_FEATURES.map((f) => f.name));
  });

  it('each detector fails on answers to a prompt that asks otherwise', () => {
    // The answer stays; the spec it is judged against changes one factor.
    type Change = 'lang' | 'task' | 'short' | 'list' | 'banned' | 'open';
    const other = (s: FeatureSpec, k: Change): FeatureSpec => {
      if (k === 'lang') return { ...s, lang: (s.lang + 1) % LANGS.length };
      if (k === 'task') return { ...s, task: (s.task + 1) % TASKS.length };
      // Asked short where it was not, or not where it was; likewise for a list.
      if (k === 'short') return { ...s, shape: s.shape === 'short' ? 'none' : 'short' };
      if (k === 'list') return { ...s, shape: s.shape === 'list' ? 'none' : 'list' };
      if (k === 'banned') return { ...s, banned: !s.banned };
      return { ...s, open: s.open === null ? null : (s.open + 1) % 4 };
    };
    const factor: Record<string, Change> = {
      language: 'lang', short: 'short', 'not-short': 'short', list: 'list', constraint: 'banned', 'default-method': 'banned', topic: 'task', opening: 'open',
    };
    for (const f of PROMPT_FEATURES) {
      const judged = ds.slice(0, 4000).map((d) => ({ spec: other(d.spec, factor[f.name]!), answer: d.answer })).filter((x) => f.applies(x.spec, x.answer));
      const followed = judged.filter((x) => f.follows(x.spec, x.answer)).length;
      expect(judged.length, f.name).toBeGreaterThan(200);
      expect(followed / judged.length, f.name).toBeLessThan(0.02);
    }
  });

  it('short answers have at most SHORT_MAX_WORDS words of prose, all others more; code is in the asked language', () => {
    const words = (shape: string) => ds.filter((d) => d.spec.shape === shape).map((d) => wordCount(prose(d.answer)));
    expect(Math.max(...words('short'))).toBeLessThanOrEqual(SHORT_MAX_WORDS);
    expect(Math.min(...words('none'), ...words('list'))).toBeGreaterThan(SHORT_MAX_WORDS);
    for (const d of ds.slice(0, 2000)) if (d.styles.code) expect(codeLangs(d.answer), d.answer).toEqual([d.spec.lang]);
    // A stray or unclosed fence, or code in another language, does not follow the prompt.
    const language = PROMPT_FEATURES.find((f) => f.name === 'language')!;
    const d = ds.find((x) => x.styles.code)!;
    expect(language.follows(d.spec, d.answer)).toBe(true);
    expect(language.follows(d.spec, d.answer.slice(0, d.answer.lastIndexOf('```')))).toBe(false);
    expect(language.follows(d.spec, `${d.answer}\n\`\`\``)).toBe(false);
    expect(language.follows(d.spec, 'Sure. ```')).toBe(false);
    // Each language's code is recognised as that language only.
    for (const [i, l] of LANGS.entries()) {
      const code = '```' + l.tag + '\n' + l.code(['a', 'b'], ['c', 'd']) + '\n```';
      expect(codeLangs(code)).toEqual([i]);
      expect(LANGS.filter((m) => m.signature.test(l.code(['a'], ['b']).split('\n')[0]!)).map((m) => m.name)).toEqual([l.name]);
    }
  });
});

describe('prompted corpus: styles', () => {
  it('each style fires at its documented base rate, exactly when drawn, independent of shape and constraint', () => {
    for (const s of STYLES) {
      const fire = ds.map((d) => s.detect(d.answer));
      expect(fire.every((f, j) => f === ds[j]!.styles[s.name]), s.name).toBe(true);
      const rate = fire.filter(Boolean).length / N;
      expect(Math.abs(rate - s.rate), `${s.name}: ${rate} vs ${s.rate}`).toBeLessThan(0.015);
      for (const split of [(d: (typeof ds)[number]) => d.spec.shape === 'short', (d: (typeof ds)[number]) => d.spec.banned, (d: (typeof ds)[number]) => d.spec.lang === 0]) {
        const inside = ds.filter(split);
        const outside = ds.filter((d) => !split(d));
        const r = (xs: typeof ds) => xs.filter((d) => s.detect(d.answer)).length / xs.length;
        expect(Math.abs(r(inside) - r(outside)), s.name).toBeLessThan(0.03);
      }
    }
    for (let a = 0; a < STYLES.length; a++) {
      for (let b = a + 1; b < STYLES.length; b++) {
        const joint = ds.filter((d) => STYLES[a]!.detect(d.answer) && STYLES[b]!.detect(d.answer)).length / N;
        expect(Math.abs(joint - STYLES[a]!.rate * STYLES[b]!.rate), `${STYLES[a]!.name} × ${STYLES[b]!.name}`).toBeLessThan(0.008);
      }
    }
  });

  it('a second sampler with another style rate moves only that style', () => {
    const rng = new Rng(3);
    const xs = Array.from({ length: 4000 }, () => sampleDialogue(rng, 'train', { question: 0.5 }));
    const rate = (name: string) => xs.filter((d) => STYLES.find((s) => s.name === name)!.detect(d.answer)).length / xs.length;
    expect(Math.abs(rate('question') - 0.5)).toBeLessThan(0.03);
    expect(Math.abs(rate('tests') - 0.18)).toBeLessThan(0.03);
    expect(featureRates(xs).every((f) => f.followed === f.n)).toBe(true);
  });
});

describe('prompted corpus: held-out compositions', () => {
  it('holds out a fixed share of the compositions, never drawn for training, while every pair of factor values is trained', () => {
    expect(COMPOSITIONS).toHaveLength(LANGS.length * TASKS.length * SHAPES.length * 2);
    expect(HELD_OUT.size).toBe(Math.round(COMPOSITIONS.length * HELD_OUT_SHARE));
    expect(ds.some((d) => isHeldOut(d.spec))).toBe(false);
    const rng = new Rng(5);
    const held = Array.from({ length: 500 }, () => sampleDialogue(rng, 'held-out'));
    expect(held.every((d) => isHeldOut(d.spec))).toBe(true);
    expect(new Set(held.map((d) => `${d.spec.lang}/${d.spec.task}/${d.spec.shape}/${d.spec.banned}`)).size).toBeGreaterThan(HELD_OUT.size * 0.9);
    const factors = ['lang', 'task', 'shape', 'banned'] as const;
    const trained = COMPOSITIONS.filter((c) => !isHeldOut(c));
    for (let i = 0; i < factors.length; i++) {
      for (let j = i + 1; j < factors.length; j++) {
        const pairs = (cs: typeof COMPOSITIONS) => new Set(cs.map((c) => `${c[factors[i]!]}|${c[factors[j]!]}`));
        expect(pairs(trained).size, `${factors[i]} × ${factors[j]}`).toBe(pairs(COMPOSITIONS).size);
      }
    }
  });

  it('is deterministic per seed, and an answer depends on its prompt', () => {
    expect(corpus(50, 7)).toEqual(ds.slice(0, 50));
    expect(corpus(50, 8)).not.toEqual(ds.slice(0, 50));
    const spec = ds[0]!.spec;
    const a = sampleAnswer(new Rng(1), spec).answer;
    expect(sampleAnswer(new Rng(1), { ...spec, task: (spec.task + 1) % TASKS.length }).answer).not.toBe(a);
    expect(sampleAnswer(new Rng(1), { ...spec, banned: !spec.banned }).answer).not.toBe(a);
  });
});

describe('prompted corpus: tokenizer', () => {
  it('a tokenizer trained on it round-trips its dialogues and compresses them', () => {
    const dir = writeSmallLm(path.join(tmp, 'model'), { seed: 2, corpus: 'prompted', hidden: 32, layers: 1, tokenizerDialogues: 1000 }).dir;
    const tok = loadTokenizer(dir);
    const text = corpus(100, 11).map(renderDialogue).join('');
    expect(tok.decode(tok.encode(text))).toBe(text);
    expect(tok.encode(text).length).toBeLessThan(new TextEncoder().encode(text).length / 3);
  });
});
