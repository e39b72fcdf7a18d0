// Tier-3 referee for quantized GGUF bases: a tiny Llama (q/k rows permuted in the file, untied lm_head) quantized to
// Q8_0 and a tiny Qwen2 (biases, tied) quantized to Q4_K by our writer load in llama.cpp (node-llama-cpp), and our
// engine, loading the same .gguf alone, gives llama.cpp's next-token log-probs at every position: within 0.05, and
// at least 5× closer than llama.cpp on the f32 file is to llama.cpp on the quantized one (so we compute what
// llama.cpp computes from the quantized weights, not merely something near it). The same with a trained LoRA (PEFT
// for us, GGUF LoRA for llama.cpp).
// llama.cpp does not multiply by the dequantized weights: its CPU kernels quantize the activations too (Q8_0
// weights meet Q8_0 activations, Q4_K weights Q8_K ones, ggml-cpu type_traits vec_dot_type). Our engine does the same
// on a GGUF base (config.actQuant, composites.ts quantizeActivations, on by default), so most positions agree to
// float32 noise. What remains is a rounding that lands the other way: where our value before a rounding differs from
// llama.cpp's in its last bits (sums taken in another order) and lies on a .5 boundary, one q differs by 1, and the
// positions that depend on it move by up to a few 1e-2 at this model's gain. Each row's difference is printed.
// std 0.04 keeps the per-layer gain of the H = 32, std 0.1 parity models (std·√H about equal); at std 0.1 and
// H = 256 the random net is so sensitive that llama.cpp's own f32 and Q8_0 runs differ by 0.5 in log p.
// hidden 256 and intermediate 256 so that every weight's rows fit Q4_K's 256-value blocks.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelLinearParams } from '../../common/engine/families/registry.ts';
import { Rng } from '../../common/engine/rng.ts';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { Engine } from './engine.ts';
import { hfToGguf } from './gguf/convert.ts';
import type { GgufOutType } from './gguf/convert.ts';
import { peftToGguf } from './gguf/lora.ts';
import { LlamaCppReferee } from './llamacpp.ts';
import { loadPeftAdapter, savePeftAdapter } from './peft.ts';
import { writeTinyModel } from './tiny.ts';
import { logSoftmax } from './test-utils/parity.ts';

const TEXT = 'def f(a): return a+1 🤖';
// The bars, for both types, base and LoRA.
const BAR = 0.05;
const CLOSER = 5;

/** max |a − b| per row, for the printout. */
function rowMax(a: readonly ArrayLike<number>[], b: readonly ArrayLike<number>[]): string {
  return a
    .map((r, t) => {
      let m = 0;
      for (let i = 0; i < r.length; i++) m = Math.max(m, Math.abs(r[i]! - b[t]![i]!));
      return m.toExponential(1);
    })
    .join(' ');
}

function maxOver(a: readonly ArrayLike<number>[], b: readonly ArrayLike<number>[]): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  a.forEach((r, t) => {
    const s = b[t]!;
    expect(r.length).toBe(s.length);
    for (let i = 0; i < r.length; i++) m = Math.max(m, Math.abs(r[i]! - s[i]!));
  });
  return m;
}

// One quantization per model: Q4_K of a ~150k × 256 embedding takes 20-60 s in JS here.
describe.each([
  { arch: 'llama', type: 'q8_0' },
  { arch: 'qwen2', type: 'q4_k' },
] as const)('llama.cpp referee on a GGUF quantized by our writer: tiny $arch, $type', ({ arch, type }) => {
  const root = mkdtempSync(path.join(tmpdir(), 'rein-parity-gguf-'));
  const files: Record<string, string> = {};
  let tokens: number[] = [];
  let loraPath = '';
  let adapter: LoraAdapter;
  // llama.cpp's log-softmax rows on the f32 file, base and LoRA.
  let f32Rows: { base: Float64Array[]; lora: Float64Array[] };
  // Control: ours on the f32 file vs llama.cpp on it (the f32 parity of parity.test.ts, at this model's size).
  let f32Control = NaN;

  const llamaRows = async (file: string): Promise<{ base: Float64Array[]; lora: Float64Array[] }> => {
    const ref = await LlamaCppReferee.open(file, { contextSize: 16, threads: 1 });
    try {
      return { base: (await ref.logits(tokens)).map(logSoftmax), lora: (await ref.logits(tokens, { lora: loraPath })).map(logSoftmax) };
    } finally {
      await ref.close();
    }
  };

  beforeAll(async () => {
    const dir = writeTinyModel(path.join(root, arch), { arch, hidden: 256, heads: 4, kvHeads: 2, layers: 2, intermediate: 256, std: 0.04, seed: 3 }).dir;
    for (const t of ['f32', type] as GgufOutType[]) {
      files[t] = path.join(root, `${arch}-${t}.gguf`);
      expect(hfToGguf(dir, files[t], { type: t }).fallbacks).toEqual([]);
    }
    const engine = Engine.load(dir, { threads: 1, buckets: [16] });
    const trained = engine.newAdapter({ r: 4, alpha: 8 }, 11);
    const rng = new Rng(12);
    for (const p of trained.pairs) rng.fork(p.baseKey).fillNormal(p.b, 0.2);
    const peftDir = path.join(root, 'peft');
    savePeftAdapter(peftDir, trained, { baseModel: dir });
    loraPath = path.join(root, 'lora.gguf');
    peftToGguf(peftDir, engine.config, loraPath);
    adapter = loadPeftAdapter(peftDir, modelLinearParams(engine.config)).adapter;
    tokens = engine.tokenizer!.encode(TEXT);
    await engine.close();
    f32Rows = await llamaRows(files['f32']!);
    const oursF32 = Engine.load(files['f32']!, { threads: 1, buckets: [16] });
    f32Control = maxOver(await oursF32.driver.positionLogprobs(tokens, null), f32Rows.base);
    await oursF32.close();
    console.log(`${arch} f32 control: max |Δ log p| ours vs llama.cpp on the f32 file = ${f32Control.toExponential(2)}`);
  }, 600_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('ours on the file equals llama.cpp on the file within 0.05 and 5× closer than llama.cpp on f32, base and LoRA', async () => {
    const t = type;
    const ref = await llamaRows(files[t]!);
    const ours = Engine.load(files[t]!, { threads: 1, buckets: [16] });
    // The option off: exact f32 products with the dequantized weights (what the engine did before).
    const exact = Engine.load(files[t]!, { threads: 1, buckets: [16], matchLlamaCpp: false });
    try {
      expect(ours.config.actQuant).toBeDefined();
      expect(exact.config.actQuant).toBeUndefined();
      expect(ours.tokenizer!.encode(TEXT)).toEqual(tokens);
      const base = await ours.driver.positionLogprobs(tokens, null);
      const lora = await ours.driver.positionLogprobs(tokens, adapter);
      // Both rows measured and printed before either is checked, so a failure still reports every number.
      const rows = (['base', 'LoRA'] as const).map((what) => {
        const [o, r, f] = what === 'base' ? [base, ref.base, f32Rows.base] : [lora, ref.lora, f32Rows.lora];
        const delta = maxOver(o, r);
        const f32Delta = maxOver(f, r);
        console.log(`${arch} ${t} ${what}: max |Δ log p| ours vs llama.cpp = ${delta.toExponential(2)}; llama.cpp f32 vs ${t} = ${f32Delta.toExponential(2)} (${(f32Delta / delta).toFixed(1)}× farther); per position: ${rowMax(o, r)}`);
        return { what, delta, f32Delta };
      });
      const exactRows = await exact.driver.positionLogprobs(tokens, null);
      const exactDelta = maxOver(exactRows, ref.base);
      console.log(`${arch} ${t} base with matchLlamaCpp off: max |Δ log p| ours vs llama.cpp = ${exactDelta.toExponential(2)}; per position: ${rowMax(exactRows, ref.base)}`);
      expect(exactDelta).toBeGreaterThan(rows[0]!.delta);
      for (const { what, delta, f32Delta } of rows) {
        expect({ what, withinBar: delta <= BAR, closer: f32Delta >= CLOSER * delta }).toEqual({ what, withinBar: true, closer: true });
      }
      expect(f32Control).toBeLessThan(1e-4);
      // The adapter moves the output by far more than the agreement.
      expect(maxOver(ref.lora, ref.base)).toBeGreaterThan(4 * BAR);
    } finally {
      await ours.close();
      await exact.close();
    }
  }, 300_000);
});
