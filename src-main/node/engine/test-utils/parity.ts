// Tier-3 numerics (docs/development.md, Tests), shared by parity.test.ts (the Llama family) and parity.families.test.ts
// (Gemma 2/3, Qwen3-MoE, Mixtral), two files so that vitest runs them on both cores: logits parity with llama.cpp.
// Each tiny model is written in the HF layout, converted by our GGUF writer (f32), and loaded by llama.cpp through
// node-llama-cpp; our engine (ORT, fp32) must give the same next-token distribution at every position of a fixed
// token sequence, without and with a trained (nonzero, random) LoRA: PEFT files for us, our GGUF LoRA for
// llama.cpp. Compared as log-softmax, i.e. logits up to the per-position constant that softmax ignores (the engine's
// API returns log-probabilities). A tokenizer round trip checks llama.cpp's tokenization of the GGUF vocabulary
// against @huggingface/tokenizers on tokenizer.json.
// Cost: one llama.cpp model load per architecture, whose base and LoRA contexts come from that load; each side
// computes every position in one pass (llama.cpp one batch, ours Driver.positionLogprobs); H = 32 and ~10 tokens.
// llama.cpp's full-vocabulary logits come back as a sorted Map per position (~0.2 s each at V ≈ 150k), which is
// most of the time left. The sequence spans the tiny Gemmas' sliding window (4), so local and global layers differ.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelLinearParams } from '../../../common/engine/families/registry.ts';
import { Rng } from '../../../common/engine/rng.ts';
import { Engine } from '../engine.ts';
import { hfToGguf } from '../gguf/convert.ts';
import { peftToGguf } from '../gguf/lora.ts';
import { LlamaCppReferee } from '../llamacpp.ts';
import { loadPeftAdapter, savePeftAdapter } from '../peft.ts';
import { writeTinyModel } from '../tiny.ts';
import { loadHfModel } from '../hf.ts';
import { writeSafetensors } from '../safetensors.ts';
import type { TensorToWrite } from '../safetensors.ts';
import type { TinyArch, TinyOptions } from '../tiny.ts';


// fp32 on both sides, with different summation orders (ggml vs MLAS) over H = 32 and V ≈ 150k: differences are a
// few 1e-6; 1e-4 leaves room for other CPUs' kernels and still fails on any real mistake (a missed permutation, bias
// or LoRA scale moves log-probs by 1e-2 or more, see the "changes the output" checks).
const TOL = 1e-4;

const TEXTS = [
  'Hello world',
  '  leading spaces and\ttabs\n\nnew lines  ',
  'def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n',
  'Ünïcödé: naïve café, 日本語のテキスト, русский текст, العربية',
  'emoji 🤖👍🏽🎉 and ZWJ 👨‍👩‍👧',
  'numbers 1234567 3.14159 -42 0x1F',
  "it's we'll they've I'M",
  'const x = { a: [1, 2, 3] }; // comment\r\n',
];

/** log-softmax of a row in float64. */
export function logSoftmax(row: ArrayLike<number>): Float64Array {
  let mx = -Infinity;
  for (let i = 0; i < row.length; i++) mx = Math.max(mx, row[i]!);
  let z = 0;
  for (let i = 0; i < row.length; i++) z += Math.exp(row[i]! - mx);
  const lse = mx + Math.log(z);
  return Float64Array.from(row, (v) => v - lse);
}

function maxAbs(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/**
 * Gemma's GeGLU on llama.cpp's CPU backend is not the exact tanh GELU: ggml_vec_geglu_f32 (ggml-cpu/vec.h, under
 * GGML_GELU_FP16) rounds each gate value to fp16 and reads GELU from a 65536-entry fp16 table, a relative error up to
 * ~5e-4 per activation. With unit-scale MLP outputs that alone moves log p by ~7e-4 (measured), over TOL. So the tiny
 * Gemmas compared here have their post-feed-forward norm scales at ~0.02 ((1 + w), w ≈ −0.98): the MLP still moves
 * every logit (the check below), while llama.cpp's table error shrinks 50×, well below TOL. Everything else keeps full scale.
 */
export const quietMlp = (key: string, data: Float32Array): Float32Array | null =>
  key.endsWith('post_feedforward_layernorm.weight') ? data.map((v) => v * 0.05 - 0.98) : null;

export interface ParityArch {
  arch: TinyArch;
  opts?: Partial<TinyOptions>;
  /** Applied to the written weights before conversion (see quietMlp). */
  tweak?: typeof quietMlp;
}

// ~10 tokens with both tokenizers (Llama 3's and Qwen's).
const TEXT = 'def f(a): return a+1 🤖';

/** Rewrites model.safetensors with `tweak` applied to the tensors it returns a replacement for. */
function tweakWeights(dir: string, tweak: typeof quietMlp): void {
  const m = loadHfModel(dir, { tokenizer: false });
  const tensors: Record<string, TensorToWrite> = {};
  for (const p of m.params) {
    const data = m.read(p.hfKey) as Float32Array;
    tensors[p.hfKey] = { shape: p.shape, data: tweak(p.hfKey, data) ?? data };
  }
  m.close();
  writeSafetensors(path.join(dir, 'model.safetensors'), tensors, { format: 'pt' });
}

/** One architecture's parity suite (a describe block): tiny model, GGUF, one llama.cpp load, base and LoRA. */
export function parityCase({ arch, opts, tweak }: ParityArch): void {
  describe(`llama.cpp parity: tiny ${arch}`, () => {
    const root = mkdtempSync(path.join(tmpdir(), `rein-parity-${arch}-`));
    afterAll(() => rmSync(root, { recursive: true, force: true }));
    let ref: LlamaCppReferee;
    let engine: Engine;
    let tokens: number[] = [];
    // log-softmax rows per position: llama.cpp and ours, base and with the LoRA.
    const rows = { refBase: [] as Float64Array[], refLora: [] as Float64Array[], ours: [] as ArrayLike<number>[], oursLora: [] as ArrayLike<number>[] };

    beforeAll(async () => {
      // std 0.1 (not HF's 0.02) so the logits spread over a few units and a wrong detail shows.
      const dir = writeTinyModel(path.join(root, arch), { arch, hidden: 32, heads: 4, kvHeads: 2, layers: 2, intermediate: 48, std: 0.1, seed: 3, ...opts }).dir;
      if (tweak !== undefined) tweakWeights(dir, tweak);
      const ggufPath = path.join(root, `${arch}.gguf`);
      hfToGguf(dir, ggufPath);
      engine = Engine.load(dir, { threads: 1, buckets: [16] });
      const trained = engine.newAdapter({ r: 4, alpha: 8 }, 11);
      const rng = new Rng(12);
      for (const p of trained.pairs) rng.fork(p.baseKey).fillNormal(p.b, 0.2);
      const peftDir = path.join(root, `${arch}-peft`);
      savePeftAdapter(peftDir, trained, { baseModel: dir });
      const loraPath = path.join(root, `${arch}-lora.gguf`);
      peftToGguf(peftDir, engine.config, loraPath);
      // Our side reads the adapter back from the PEFT files, as the GGUF LoRA was made from them.
      const adapter = loadPeftAdapter(peftDir, modelLinearParams(engine.config)).adapter;
      ref = await LlamaCppReferee.open(ggufPath, { contextSize: 16, threads: 1 });
      tokens = engine.tokenizer!.encode(TEXT);
      rows.refBase = (await ref.logits(tokens)).map(logSoftmax);
      rows.refLora = (await ref.logits(tokens, { lora: loraPath })).map(logSoftmax);
      rows.ours = await engine.driver.positionLogprobs(tokens, null);
      rows.oursLora = await engine.driver.positionLogprobs(tokens, adapter);
    });
    afterAll(async () => {
      await ref?.close();
      await engine?.close();
    });

    const maxOver = (a: readonly ArrayLike<number>[], b: readonly ArrayLike<number>[]): number => {
      expect(a.length).toBe(b.length);
      return Math.max(...a.map((r, t) => maxAbs(r, b[t]!)));
    };

    it('base model: log-softmax of the logits at every position equals llama.cpp', async () => {
      expect(tokens.length).toBeGreaterThanOrEqual(8);
      const delta = maxOver(rows.ours, rows.refBase);
      console.log(`${arch} base: max |Δ log p| = ${delta.toExponential(2)} over ${tokens.length} positions × ${engine.config.vocabSize} tokens`);
      expect(delta).toBeLessThan(TOL);
      // The one-pass rows are what the per-prefix API gives (the causal mask; padding to the bucket changes nothing).
      expect(maxAbs(await engine.driver.nextLogprobs(tokens.slice(0, 5), null), rows.ours[4]!)).toBeLessThan(1e-5);
    });

    it('with a trained LoRA (PEFT for us, GGUF LoRA for llama.cpp): equal, and it changes the output', () => {
      const delta = maxOver(rows.oursLora, rows.refLora);
      const moved = maxOver(rows.refLora, rows.refBase);
      console.log(`${arch} LoRA: max |Δ log p| = ${delta.toExponential(2)}; the adapter moves log p by up to ${moved.toFixed(3)}`);
      expect(moved).toBeGreaterThan(100 * TOL);
      expect(delta).toBeLessThan(TOL);
    });

    if (tweak !== undefined) {
      it('the quieted MLP still moves the output (removing it changes log p by far more than TOL)', async () => {
        const m = loadHfModel(path.join(root, arch), { tokenizer: false });
        // (1 + w) = 0 turns the post-feed-forward norm, and so the MLP's contribution, off.
        const noMlp = Engine.fromWeights(m.config, (k) => (k.endsWith('post_feedforward_layernorm.weight') ? m.read(k).map(() => -1) : m.read(k)), { threads: 1, buckets: [16] });
        m.close();
        const moved = maxOver(await noMlp.driver.positionLogprobs(tokens, null), rows.ours);
        await noMlp.close();
        console.log(`${arch}: the quieted MLP moves log p by up to ${moved.toFixed(4)}`);
        expect(moved).toBeGreaterThan(100 * TOL);
      });
    }

    it('tokenizer round trip: llama.cpp on the GGUF vocabulary tokenizes like @huggingface/tokenizers', () => {
      const tok = engine.tokenizer!;
      for (const text of TEXTS) {
        const ids = ref.tokenize(text);
        expect([text, ids]).toEqual([text, tok.encode(text, { addSpecialTokens: false })]);
        expect(tok.decode(ids)).toBe(text);
      }
      // Special-token text is parsed as special tokens by both when asked.
      const chat = tok.size > 150000 ? '<|im_start|>user\nhi<|im_end|>\n' : '<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>';
      expect(ref.tokenize(chat, true)).toEqual(tok.encode(chat, { addSpecialTokens: false }));
    });
  });
}
