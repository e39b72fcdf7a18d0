// Tier-3 numerics (ARCHITECTURE.md §7): logits parity with llama.cpp. Tiny random Llama-3, Qwen2, Qwen3 (q/k norm)
// and Mistral models are written in the HF layout, converted by our GGUF writer (f32), and loaded by llama.cpp through
// node-llama-cpp; our engine (ORT, fp32) must give the same next-token distribution at every position of a fixed
// token sequence, without and with a trained (nonzero, random) LoRA: PEFT files for us, our GGUF LoRA for
// llama.cpp. Compared as log-softmax, i.e. logits up to the per-position constant that softmax ignores (the engine's
// API returns log-probabilities). A tokenizer round trip checks llama.cpp's tokenization of the GGUF vocabulary
// against @huggingface/tokenizers on tokenizer.json. One llama.cpp model load per architecture.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { llamaLinearParams } from '../../common/engine/models/llama.ts';
import { Rng } from '../../common/engine/rng.ts';
import { Engine } from './engine.ts';
import { hfToGguf } from './gguf/convert.ts';
import { peftToGguf } from './gguf/lora.ts';
import { LlamaCppReferee } from './llamacpp.ts';
import { loadPeftAdapter, savePeftAdapter } from './peft.ts';
import { writeTinyModel } from './tiny.ts';
import type { TinyArch } from './tiny.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-parity-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// fp32 on both sides, with different summation orders (ggml vs MLAS) over H = 64 and V ≈ 150k: differences are a
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
function logSoftmax(row: ArrayLike<number>): Float64Array {
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

for (const arch of ['llama', 'qwen2', 'qwen3', 'mistral'] as const satisfies readonly TinyArch[]) {
  describe(`llama.cpp parity: tiny ${arch}`, () => {
    let dir = '';
    let ggufPath = '';
    let loraPath = '';
    let peftDir = '';
    let ref: LlamaCppReferee;
    let engine: Engine;
    let tokens: number[] = [];

    beforeAll(async () => {
      // std 0.1 (not HF's 0.02) so the logits spread over a few units and a wrong detail shows.
      dir = writeTinyModel(path.join(root, arch), { arch, hidden: 64, heads: 4, kvHeads: 2, layers: 2, intermediate: 96, std: 0.1, seed: 3 }).dir;
      ggufPath = path.join(root, `${arch}.gguf`);
      hfToGguf(dir, ggufPath);
      engine = Engine.load(dir, { threads: 1, buckets: [16, 32] });
      const adapter = engine.newAdapter({ r: 4, alpha: 8 }, 11);
      const rng = new Rng(12);
      for (const p of adapter.pairs) rng.fork(p.baseKey).fillNormal(p.b, 0.2);
      peftDir = path.join(root, `${arch}-peft`);
      savePeftAdapter(peftDir, adapter, { baseModel: dir });
      loraPath = path.join(root, `${arch}-lora.gguf`);
      peftToGguf(peftDir, engine.config, loraPath);
      ref = await LlamaCppReferee.open(ggufPath, { contextSize: 32, threads: 1 });
      tokens = engine.tokenizer!.encode('def add(a, b):\n    return a + b  # 日本 🤖');
    });
    afterAll(async () => {
      await ref?.close();
      await engine?.close();
    });

    /** Max |Δ log p| over every position and vocabulary entry; also returns llama.cpp's rows. */
    async function compare(adapterFromPeft: boolean): Promise<{ delta: number; rows: Float64Array[] }> {
      const adapter = adapterFromPeft ? loadPeftAdapter(peftDir, llamaLinearParams(engine.config)).adapter : null;
      const logits = await ref.logits(tokens, adapterFromPeft ? { lora: loraPath } : {});
      let delta = 0;
      const rows: Float64Array[] = [];
      for (let t = 0; t < tokens.length; t++) {
        const ours = await engine.driver.nextLogprobs(tokens.slice(0, t + 1), adapter);
        const theirs = logSoftmax(logits[t]!);
        rows.push(theirs);
        delta = Math.max(delta, maxAbs(ours, theirs));
      }
      return { delta, rows };
    }

    it('base model: log-softmax of the logits at every position equals llama.cpp', async () => {
      expect(tokens.length).toBeGreaterThan(8);
      const { delta } = await compare(false);
      console.log(`${arch} base: max |Δ log p| = ${delta.toExponential(2)} over ${tokens.length} positions × ${engine.config.vocabSize} tokens`);
      expect(delta).toBeLessThan(TOL);
    });

    it('with a trained LoRA (PEFT for us, GGUF LoRA for llama.cpp): equal, and it changes the output', async () => {
      const base = await ref.logits(tokens);
      const { delta, rows } = await compare(true);
      const moved = Math.max(...rows.map((r, t) => maxAbs(r, logSoftmax(base[t]!))));
      console.log(`${arch} LoRA: max |Δ log p| = ${delta.toExponential(2)}; the adapter moves log p by up to ${moved.toFixed(3)}`);
      expect(moved).toBeGreaterThan(100 * TOL);
      expect(delta).toBeLessThan(TOL);
    });

    it('tokenizer round trip: llama.cpp on the GGUF vocabulary tokenizes like @huggingface/tokenizers', () => {
      const tok = engine.tokenizer!;
      for (const text of TEXTS) {
        const ids = ref.tokenize(text);
        expect([text, ids]).toEqual([text, tok.encode(text, { addSpecialTokens: false })]);
        expect(tok.decode(ids)).toBe(text);
      }
      // Special-token text is parsed as special tokens by both when asked.
      const chat = arch.startsWith('qwen') ? '<|im_start|>user\nhi<|im_end|>\n' : '<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>';
      expect(ref.tokenize(chat, true)).toEqual(tok.encode(chat, { addSpecialTokens: false }));
    });
  });
}
