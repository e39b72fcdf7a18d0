// Tier-2 numerics (docs/development.md, Tests): whole-model checks in float64 on tiny random Llama and Qwen2 models written
// in the real HF layout. The LoRA gradients of the round's step (node/training/step.ts: MIS-PO and KTO sequences,
// test-utils/step-check.ts) against central differences (every tensor labelled with its max difference), a fresh adapter against the base, a fused adapter against the unfused one, and
// our forward against the independent PyTorch float64 reference (bench/reference/llama_ref.py).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fuse, loraScale, peftKeys } from '../../common/engine/lora.ts';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { Rng } from '../../common/engine/rng.ts';
import { Engine } from './engine.ts';
import { StepCheck, type CheckSequence } from './test-utils/step-check.ts';
import { loadHfModel } from './hf.ts';
import { savePeftAdapter } from './peft.ts';
import { writeTinyModel } from './tiny.ts';
import { Runtime } from './runtime.ts';
import { llamaHeadGraph, parseLlamaConfig } from '../../common/engine/families/llama.ts';
import type { TinyArch } from './tiny.ts';

const PYTHON = process.env['REIN_PYTHON'] ?? '/usr/bin/python3';
const REF = path.resolve(import.meta.dirname, '../../../bench/reference/llama_ref.py');
const hasTorch = spawnSync(PYTHON, ['-c', 'import torch, numpy'], { stdio: 'ignore' }).status === 0;

const root = mkdtempSync(path.join(tmpdir(), 'rein-tier2-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A nonzero adapter: A from the fresh init, B drawn N(0, 0.05²), so both A and B get real gradients. */
function randomized(a: LoraAdapter, seed: number): LoraAdapter {
  const rng = new Rng(seed);
  for (const p of a.pairs) rng.fork(p.baseKey).fillNormal(p.b, 0.05);
  return a;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe.each<[TinyArch, boolean]>([
  ['llama', false],
  ['qwen2', true],
])('tier 2: tiny %s (tied embeddings: %s)', (arch, tied) => {
  const dir = path.join(root, arch);
  let engine: Engine;
  // Sequences stay short and the head chunk small: the vocabulary is the real tokenizer's (~128k / ~151k).
  const tokens = [11, 950, 3, 77, 4096, 12, 5, 60, 301, 9];
  // Two carry an agent turn's mask (a step, a masked tool result, the answer): the masked tokens are context only.
  const batch: CheckSequence[] = [
    { tokens, start: 4, advantage: 0.8, mask: [1, 1, 0, 0, 1, 1] },
    { tokens: [5, 6, 7, 8, 9, 10, 11], start: 3, advantage: -1.3 },
    { tokens: [3, 77, 4096, 12, 5, 60], start: 2, desirable: true, mask: [1, 0, 0, 1] },
    { tokens: [950, 3, 301, 9, 11, 77, 5], start: 3, desirable: false },
  ];
  let check: StepCheck;

  beforeAll(async () => {
    writeTinyModel(dir, { arch, layers: 2, hidden: 32, heads: 4, kvHeads: 2, intermediate: 48, dtype: 'F32', seed: 7, tieWordEmbeddings: tied, std: 0.2 });
    engine = Engine.load(dir, { dtype: 'float64', headChunk: 8, threads: 1, buckets: [8, 16] });
    check = await StepCheck.build(engine, batch);
  });
  afterAll(async () => {
    await check.dispose();
    await engine.close();
  });

  it("LoRA gradients of the round's step (MIS-PO and KTO) match central differences, per tensor", async () => {
    const adapter = randomized(engine.newAdapter({ r: 2, alpha: 4 }, 3), 4);
    const step = await check.step(adapter);
    const grads = new Map(adapter.pairs.flatMap((p, k) => [[peftKeys(p.baseKey).a, step.grads[2 * k]!], [peftKeys(p.baseKey).b, step.grads[2 * k + 1]!]]));

    // The same loss, from logprobs alone (z0 detached at the step's value), recomputed for a perturbed adapter.
    const lossAt = (): Promise<number> => check.lossAt(adapter, step.z0);
    expect(step.loss).toBeCloseTo(await lossAt(), 12);

    const rng = new Rng(11);
    const eps = 1e-4;
    const report: string[] = [];
    let worst = 0;
    for (const p of adapter.pairs) {
      const keys = peftKeys(p.baseKey);
      for (const [which, arr, key] of [['A', p.a, keys.a], ['B', p.b, keys.b]] as const) {
        const g = grads.get(key)!;
        let maxDiff = 0;
        let maxG = 0;
        // A random subset of entries of every tensor (2 each) keeps the check fast.
        for (let n = 0; n < 2; n++) {
          const i = Math.floor(rng.uniform() * arr.length);
          const keep = arr[i]!;
          arr[i] = keep + eps;
          const hi = arr[i]!;
          const up = await lossAt();
          arr[i] = keep - eps;
          const lo = arr[i]!;
          const dn = await lossAt();
          arr[i] = keep;
          // Adapter tensors are Float32Array (PEFT's dtype): divide by the step actually stored, not by 2ε.
          const fd = (up - dn) / (hi - lo);
          maxDiff = Math.max(maxDiff, Math.abs(fd - g[i]!));
          maxG = Math.max(maxG, Math.abs(g[i]!));
        }
        worst = Math.max(worst, maxDiff);
        report.push(`${p.module}[${p.layer}].lora_${which}: max |fd - grad| ${maxDiff.toExponential(2)} (|grad| up to ${maxG.toExponential(2)})`);
        expect(maxDiff, report[report.length - 1]).toBeLessThan(1e-7 + 1e-5 * maxG);
      }
    }
    console.log(`${arch}: ${report.length} LoRA tensors, worst max difference ${worst.toExponential(2)}\n  ${report.join('\n  ')}`);
  });

  it('per-layer recompute gives the same step as stored residuals', async () => {
    const adapter = randomized(engine.newAdapter({ r: 2, alpha: 4 }, 3), 4);
    const recompute = Engine.load(dir, { dtype: 'float64', headChunk: 8, threads: 1, buckets: [8, 16], recomputeAbove: 0 });
    const a = await check.step(adapter);
    const b = await check.step(adapter, recompute);
    expect(b.loss).toBe(a.loss);
    let worst = 0;
    a.grads.forEach((g, k) => (worst = Math.max(worst, maxAbsDiff(g, b.grads[k]!))));
    expect(worst).toBeLessThan(1e-13);
    await recompute.close();
  });

  it('a fresh adapter (B = 0) gives exactly the base logprobs', async () => {
    const base = await engine.logprobs(tokens, { start: 2 });
    const fresh = await engine.logprobs(tokens, { start: 2, adapter: engine.newAdapter({ r: 4 }, 9) });
    expect([...fresh]).toEqual([...base]);
  });

  it('a fused adapter gives the logprobs of the unfused one', async () => {
    const adapter = randomized(engine.newAdapter({ r: 4, alpha: 8 }, 5), 6);
    const unfused = await engine.logprobs(tokens, { start: 1, adapter });
    const scale = loraScale(adapter.spec);
    const byKey = new Map(adapter.pairs.map((p) => [p.baseKey, p]));
    // The base weights with every pair fused in (float64 throughout), in an engine of their own.
    const m2 = loadHfModel(dir);
    const fusedEngine = Engine.fromWeights(m2.config, (key) => {
      const w = m2.read(key, { as: 'f64' }) as Float64Array;
      const p = byKey.get(key);
      return p === undefined ? w : fuse(w, p, adapter.spec.r, scale);
    }, { dtype: 'float64', headChunk: 8, threads: 1, buckets: [8, 16] });
    m2.close();
    const got = await fusedEngine.logprobs(tokens, { start: 1 });
    const plain = await engine.logprobs(tokens, { start: 1 });
    const d = maxAbsDiff(got, unfused);
    console.log(`${arch}: fused vs unfused max |Δlogp| ${d.toExponential(2)}; adapter moved logp by ${maxAbsDiff(plain, unfused).toExponential(2)}`);
    expect(d).toBeLessThan(1e-10);
    // The adapter must actually change the output, or the comparison above proves nothing.
    expect(maxAbsDiff(plain, unfused)).toBeGreaterThan(1e-4);
    await fusedEngine.close();
  });

  it.skipIf(!hasTorch)('matches the PyTorch float64 reference, with and without a LoRA', async () => {
    const adapter = randomized(engine.newAdapter({ r: 4, alpha: 8 }, 5), 6);
    const adapterDir = path.join(root, `${arch}-adapter`);
    savePeftAdapter(adapterDir, adapter, { baseModel: dir, overwrite: true });
    // targets[t] = tokens[t+1]: position t predicts the next token; the last position has none.
    const targets = [...tokens.slice(1), -1].join(',');
    const run = (extra: string[]): number[] => {
      const out = execFileSync(PYTHON, [REF, '--model', dir, '--ids', tokens.join(','), '--targets', targets, '--threads', '1', ...extra], { encoding: 'utf8' });
      return (JSON.parse(out) as { logprobs: (number | null)[] }).logprobs.slice(0, -1) as number[];
    };
    for (const [label, a, extra] of [['base', null, []], ['lora', adapter, ['--adapter', adapterDir]]] as const) {
      const ours = await engine.logprobs(tokens, { start: 1, adapter: a });
      const theirs = run([...extra]);
      const d = maxAbsDiff(ours, theirs);
      console.log(`${arch} ${label}: ours vs PyTorch float64 max |Δlogp| ${d.toExponential(2)}`);
      expect(d).toBeLessThan(1e-9);
    }
  });
});

it('the hand-fused lm_head backward equals the symbolic one (float64)', async () => {
  const c = parseLlamaConfig({ architectures: ['Qwen2ForCausalLM'], vocab_size: 300, hidden_size: 24, intermediate_size: 32, num_hidden_layers: 1, num_attention_heads: 2, rms_norm_eps: 1e-6 });
  const rt = new Runtime({ intraOpThreads: 1, optimization: 'basic' });
  const rng = new Rng(21);
  const T = 6;
  const feeds = {
    h: rng.fillNormal(new Float64Array(T * 24), 1),
    norm: rng.fillNormal(new Float64Array(24), 0.1, 1),
    lm_head: rng.fillNormal(new Float64Array(300 * 24), 0.5),
    targets: [0, 299, 17, 17, 150, 3],
  };
  const sym = await rt.run(llamaHeadGraph(c, 'float64', 'symbolic'), { T }, feeds);
  const fused = await rt.run(llamaHeadGraph(c, 'float64', 'fused'), { T }, feeds);
  expect(maxAbsDiff(fused['logp']!.data as Float64Array, sym['logp']!.data as Float64Array)).toBe(0);
  const d = maxAbsDiff(fused['dlogp_dh']!.data as Float64Array, sym['dlogp_dh']!.data as Float64Array);
  expect(d).toBeLessThan(1e-12);
  // And it is not trivially zero.
  expect(Math.max(...Array.from(sym['dlogp_dh']!.data as Float64Array, Math.abs))).toBeGreaterThan(1e-3);
  await rt.dispose();
});

it('refuses a start outside the sequence and tokens outside the vocabulary, by name', async () => {
  const dir = path.join(root, 'bad');
  writeTinyModel(dir, { arch: 'qwen2', layers: 1, hidden: 16, heads: 2, kvHeads: 1, intermediate: 16, dtype: 'F32' });
  const e = Engine.load(dir, { dtype: 'float64', headChunk: 4, threads: 1 });
  await expect(e.logprobs([1, 2, 3], { start: 0 })).rejects.toThrow(/start must be/);
  await expect(e.logprobs([1, 2, 3], { start: 3 })).rejects.toThrow(/start must be/);
  await expect(e.logprobs([1, -2, 3])).rejects.toThrow(/outside the vocabulary/);
  await expect(e.logprobs([1, e.config.vocabSize])).rejects.toThrow(/outside the vocabulary/);
  await e.close();
});
