// The small LM's corpus, tokenizer and files: the corpus shows its documented style rates, independent of each
// other and of the prompt; the BPE tokenizer we train loads through the engine's tokenizer, round-trips text, and
// the GGUF writer's vocabulary tokenizes identically in llama.cpp.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Engine } from '../engine/engine.ts';
import { hfToGguf } from '../engine/gguf/convert.ts';
import { LlamaCppReferee } from '../engine/llamacpp.ts';
import { loadTokenizer } from '../engine/tokenizer.ts';
import { preTokenize, trainBpe } from './bpe.ts';
import { samplePromptedAnswers } from './evaluate.ts';
import { featureRates } from './prompted.ts';
import { corpus, STYLES } from './corpus.ts';
import { renderDialogue, writeSmallLm, type SmallLmOptions } from './small-lm.ts';

const tmp = mkdtempSync(path.join(tmpdir(), 'rein-small-lm-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('small LM corpus', () => {
  const N = 20_000;
  const ds = corpus(N, 7);

  it('each detector fires at its documented base rate (5-25%), pairs are independent, and rates do not depend on the prompt', () => {
    const fire = STYLES.map((s) => ds.map((d) => s.detect(d.answer)));
    for (const [i, s] of STYLES.entries()) {
      expect(s.rate).toBeGreaterThanOrEqual(0.05);
      expect(s.rate).toBeLessThanOrEqual(0.25);
      // The detector reads the text, and agrees with the drawn dimension on every answer.
      expect(fire[i]!.every((f, j) => f === ds[j]!.styles[s.name]), s.name).toBe(true);
      const rate = fire[i]!.filter(Boolean).length / N;
      expect(Math.abs(rate - s.rate), `${s.name}: ${rate} vs ${s.rate}`).toBeLessThan(0.015); // > 4 SE at N = 20k
      // Independent of the prompt: the same rate on prompts that ask in Python and on the rest.
      const py = ds.map((d, j) => [d.prompt.includes('Python'), fire[i]![j]!] as const);
      const rateIn = (want: boolean) => py.filter(([p, f]) => p === want && f).length / py.filter(([p]) => p === want).length;
      expect(Math.abs(rateIn(true) - rateIn(false)), s.name).toBeLessThan(0.03);
    }
    for (let a = 0; a < STYLES.length; a++) {
      for (let b = a + 1; b < STYLES.length; b++) {
        const joint = ds.filter((_, j) => fire[a]![j] && fire[b]![j]).length / N;
        expect(Math.abs(joint - STYLES[a]!.rate * STYLES[b]!.rate), `${STYLES[a]!.name} × ${STYLES[b]!.name}`).toBeLessThan(0.008);
      }
    }
  });

  it('is deterministic per seed', () => {
    expect(corpus(50, 7)).toEqual(ds.slice(0, 50));
    expect(corpus(50, 8)).not.toEqual(ds.slice(0, 50));
  });
});

describe('small LM tokenizer', () => {
  const dir = path.join(tmp, 'model');
  const written = writeSmallLm(dir, { seed: 3, hidden: 32, layers: 1 });
  const texts = [
    ...corpus(20, 99).map(renderDialogue),
    'Ünïcödé: naïve café, 日本語, emoji 🤖👍🏽 and tabs\t\r\n',
    "it's we'll 1234 x=0x1F;  two  spaces",
  ];

  it('trains merges deterministically and stops at the requested size', () => {
    const a = trainBpe(['aaab aaab aab', 'ab ab'], 258);
    expect(a).toEqual(trainBpe(['aaab aaab aab', 'ab ab'], 258));
    expect(a.vocab.size).toBe(258);
    expect(a.merges).toEqual([['a', 'a'], ['a', 'b']]); // a a and a b both occur 5 times: the smaller pair first
    expect(trainBpe(['ab'], 300).vocab.size).toBe(256); // no pair occurs twice
    // The corpus runs out of pairs that occur twice before 1024: every word it uses is then one token.
    expect(written.vocabSize).toBeGreaterThanOrEqual(512);
    expect(written.vocabSize).toBeLessThanOrEqual(1024);
    expect(() => trainBpe(['x'], 100)).toThrow(/at least 256/);
  });

  it('loads through the engine tokenizer, round-trips any text and compresses the corpus', () => {
    const tok = loadTokenizer(dir);
    expect(tok.size).toBe(written.vocabSize);
    for (const t of texts) expect(tok.decode(tok.encode(t))).toBe(t);
    const chat = tok.encodeTurn('How do I sort a list in Go?', 'You can call the built-in sort.');
    expect(tok.decode(chat.responseIds)).toBe('You can call the built-in sort.<|im_end|>');
    const d = corpus(200, 5).map(renderDialogue).join('');
    const bytes = new TextEncoder().encode(d).length;
    expect(tok.encode(d).length).toBeLessThan(bytes / 3); // trained merges, not bytes
    // Our pre-tokenizer is the one tokenizer.json names.
    expect(preTokenize('a  b').length).toBe(3);
  });

  it('converts to GGUF (the committed, trained model); llama.cpp tokenizes exactly as the engine does and its logits match our forward', async () => {
    const dir = path.resolve('resources/small-lm');
    const gguf = path.join(tmp, 'model.gguf');
    hfToGguf(dir, gguf);
    const ref = await LlamaCppReferee.open(gguf, { contextSize: 64, threads: 1 });
    const tok = loadTokenizer(dir);
    for (const t of texts) {
      expect(ref.tokenize(t, true), JSON.stringify(t)).toEqual(tok.encode(t));
      expect(ref.detokenize(tok.encode(t))).toBe(t);
    }
    // Logits parity at the tolerance of engine/test-utils/parity.ts (fp32 both sides, compared as log-softmax).
    const tokens = tok.encode(texts[0]!).slice(0, 40);
    const engine = Engine.load(dir, { threads: 1, buckets: [64] });
    const ours = await engine.driver.positionLogprobs(tokens, null);
    const theirs = await ref.logits(tokens);
    let worst = 0;
    let spread = 0;
    for (const [t, row] of theirs.entries()) {
      let mx = -Infinity;
      for (const v of row) mx = Math.max(mx, v);
      let z = 0;
      for (const v of row) z += Math.exp(v - mx);
      const lse = mx + Math.log(z);
      for (let i = 0; i < row.length; i++) {
        worst = Math.max(worst, Math.abs(row[i]! - lse - ours[t]![i]!));
        spread = Math.max(spread, Math.abs(ours[t]![i]! + Math.log(row.length)));
      }
    }
    expect(worst).toBeLessThan(1e-4);
    expect(spread).toBeGreaterThan(1e-2); // the distributions are far from uniform, so a wrong weight would show
  }, 120_000);
});

describe('the committed small LM (resources/small-lm, built by npm run build:small-lm)', () => {
  const dir = path.resolve('resources/small-lm');
  // A build before the prompted corpus recorded only its seed: the styles corpus, 4 layers of 128 in f32.
  const build = JSON.parse(readFileSync(path.join(dir, 'BUILD.json'), 'utf8')) as { sha256: string } & Pick<SmallLmOptions, 'seed' | 'corpus' | 'dtype' | 'hidden' | 'layers' | 'bpeSize' | 'tokenizerDialogues'>;

  it('is the file its build recorded, with the tokenizer the build trains from the same seed', () => {
    expect(createHash('sha256').update(readFileSync(path.join(dir, 'model.safetensors'))).digest('hex')).toBe(build.sha256);
    const fresh = path.join(tmp, 'fresh');
    const { seed, corpus: c, dtype, hidden, layers, bpeSize, tokenizerDialogues } = build;
    writeSmallLm(fresh, { seed, corpus: c, dtype, hidden, layers, bpeSize, tokenizerDialogues });
    expect(readFileSync(path.join(fresh, 'tokenizer.json'), 'utf8')).toBe(readFileSync(path.join(dir, 'tokenizer.json'), 'utf8'));
    expect(readFileSync(path.join(fresh, 'config.json'), 'utf8')).toBe(readFileSync(path.join(dir, 'config.json'), 'utf8'));
  });
});

describe('the prompt-reading small LM (resources/small-lm-prompted)', () => {
  it('reads its prompt: on prompts of held-out compositions, sampled by llama.cpp as Rein serves it, each prompt feature is followed ≥ 90% of the time', async () => {
    // The compositions (language × task × shape × constraint) never appeared in its pretraining stream, so following
    // them is composition, not recall. Temperature 1: the whole distribution, as the learning loop samples it.
    const pairs = await samplePromptedAnswers(path.resolve('resources/small-lm-prompted'), 120, 7, 'held-out');
    const rates = featureRates(pairs);
    for (const f of rates) {
      expect(f.n, `${f.name} applies to some answers`).toBeGreaterThanOrEqual(10);
      expect(f.followed / f.n, `${f.name}: ${f.followed}/${f.n}`).toBeGreaterThanOrEqual(0.9);
    }
  }, 600_000);
});
