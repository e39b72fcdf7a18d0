// The round's step (step.ts batchGradient: MIS-PO and KTO sequences, KTO's z0) under WebGPU against the same step on
// the CPU, on tier-2 tiny models (Llama, Qwen2) in the real HF layout: log-probs within LOGPROB_TOLERANCE, every LoRA
// gradient within GRAD_REL_TOLERANCE of its tensor's scale, and the loss alike.
//
// Where no adapter is configured, Vulkan is pointed at the SwiftShader ICD that Debian's Chromium ships (the e2e
// tests' browser), a software Vulkan device that Dawn accepts (Mesa 22's lavapipe it refuses: "Vulkan
// shaderUniform*ArrayDynamicIndexing required"). On a machine with a GPU, run with REIN_GPU_TEST_SYSTEM_ADAPTER=1 (Dawn
// picks the system's adapter) or with VK_ICD_FILENAMES naming its ICD (a value already set is kept). Dawn loads the
// Vulkan loader, libvulkan.so.1, by name: where the libvulkan1 package is not installed, Chromium's copy serves, but
// only if the process starts with it on the library path (LD_LIBRARY_PATH=/usr/lib/chromium npx vitest run ...).
// `.ci/run` installs libvulkan1, so CI runs this file on SwiftShader (about 2 minutes on two cores).
// Without any adapter every test is skipped with the probe's error. On two shared cores with SwiftShader this file
// takes minutes (Dawn compiles each kernel's shader through SwiftShader's LLVM JIT).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { Rng } from '../../common/engine/rng.ts';
import { GRAD_REL_TOLERANCE, LOGPROB_TOLERANCE, maxAbsDiff, maxRelDiff, probeOnce } from '../engine/device.ts';
import { formatOpProbe } from '../engine/op-probe.ts';
import { llamaParams, parseLlamaConfig } from '../../common/engine/families/llama.ts';
import { quantize, type QuantWeight } from '../../common/engine/quant.ts';
import { Engine } from '../engine/engine.ts';
import { writeTinyModel, type TinyArch } from '../engine/tiny.ts';
import { ObjectiveRunner } from './objective-runner.ts';
import { batchGradient, newStepState, type StepSequence } from './step.ts';

const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
if (process.env['VK_ICD_FILENAMES'] === undefined && process.env['REIN_GPU_TEST_SYSTEM_ADAPTER'] !== '1' && existsSync(SWIFTSHADER_ICD)) {
  process.env['VK_ICD_FILENAMES'] = SWIFTSHADER_ICD;
}

const probe = await probeOnce('webgpu');
const root = mkdtempSync(path.join(tmpdir(), 'rein-gpu-step-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const OPTS = { beta: 0.001, bandLow: 0.994, bandHigh: 1.002, drift: 'scale' as const, ratioClipLow: 0.5, ratioClipHigh: 2, ktoBeta: 0.1 };

function randomized(a: LoraAdapter, seed: number): LoraAdapter {
  const rng = new Rng(seed);
  for (const p of a.pairs) rng.fork(p.baseKey).fillNormal(p.b, 0.05);
  return a;
}

async function batchOn(engine: Engine, objectives: ObjectiveRunner, adapter: LoraAdapter, V: number) {
  const rng = new Rng(4);
  const toks = (n: number): number[] => Array.from({ length: n }, () => Math.floor(rng.uniform() * V));
  const seqs: StepSequence[] = [];
  for (const [n, start, kind, desirable] of [[14, 5, 'mispo', true], [11, 4, 'mispo', false], [12, 6, 'kto', true], [13, 5, 'kto', false]] as const) {
    const tokens = toks(n);
    const ref = await engine.logprobs(tokens, { start, adapter: null });
    const mu = ref.map((x, i) => x - 0.05 * ((i % 3) - 1));
    seqs.push({ tokens, start, mask: tokens.slice(start).map((_, i) => (i === 1 ? 0 : 1)), ref, kind, mu: kind === 'mispo' ? mu : null, advantage: desirable ? 0.7 : -0.4, desirable, ktoWeight: 1.3 });
  }
  const logp = await Promise.all(seqs.map((s) => engine.logprobs(s.tokens, { start: s.start, adapter })));
  const g = await batchGradient(engine, adapter, objectives, seqs, newStepState());
  return { logp, g };
}

describe('the round step under WebGPU against the CPU', () => {
  for (const arch of ['llama', 'qwen2'] as TinyArch[]) {
    it(`${arch}: log-probs and LoRA gradients`, async (ctx) => {
      if (!probe.ok) ctx.skip(`no usable WebGPU adapter (the provider probe failed: ${probe.error})`);
      const dir = path.join(root, arch);
      writeTinyModel(dir, { arch, layers: 1, hidden: 32, heads: 4, kvHeads: 2, intermediate: 48, dtype: 'F32', std: 0.3 });
      const opts = { threads: 1, headChunk: 16, buckets: [16] };
      const cpu = Engine.load(dir, { ...opts, provider: 'cpu' });
      const gpu = Engine.load(dir, { ...opts, provider: 'webgpu' });
      const objectives = new ObjectiveRunner(OPTS);
      try {
        const want = await batchOn(cpu, objectives, randomized(cpu.newAdapter({ r: 4, alpha: 8 }, 1), 2), cpu.config.vocabSize);
        const got = await batchOn(gpu, objectives, randomized(gpu.newAdapter({ r: 4, alpha: 8 }, 1), 2), cpu.config.vocabSize);
        const lpDiff = Math.max(...got.logp.map((l, i) => maxAbsDiff(l, want.logp[i]!)));
        const gradDiff = maxRelDiff(got.g.grads, want.g.grads);
        console.log(`${arch} on ${probe.adapter}: max |Δlogp| ${lpDiff.toExponential(2)}, max rel Δgrad ${gradDiff.toExponential(2)}, loss ${want.g.loss} vs ${got.g.loss}`);
        expect(lpDiff).toBeLessThanOrEqual(LOGPROB_TOLERANCE);
        expect(gradDiff).toBeLessThanOrEqual(GRAD_REL_TOLERANCE);
        expect(got.g.grads.some((t) => t.some((x) => x !== 0))).toBe(true);
        expect(Math.abs(got.g.loss - want.g.loss)).toBeLessThanOrEqual(1e-3 * Math.max(1, Math.abs(want.g.loss)));
      } finally {
        await objectives.dispose();
        await cpu.close();
        await gpu.close();
      }
    }, 600_000);
  }

  it('weights stay on the device: a second step moves only its inputs and the LoRA tensors there', async (ctx) => {
    if (!probe.ok) ctx.skip(`no usable WebGPU adapter (the provider probe failed: ${probe.error})`);
    const dir = path.join(root, 'resident');
    writeTinyModel(dir, { arch: 'qwen2', layers: 2, hidden: 32, heads: 4, kvHeads: 2, intermediate: 48, dtype: 'F32', std: 0.3 });
    const opts = { threads: 1, headChunk: 16, buckets: [16] };
    const cpu = Engine.load(dir, { ...opts, provider: 'cpu' });
    const gpu = Engine.load(dir, { ...opts, provider: 'webgpu' });
    const objectives = new ObjectiveRunner(OPTS);
    try {
      const V = cpu.config.vocabSize;
      const adapter = randomized(gpu.newAdapter({ r: 4, alpha: 8 }, 1), 2);
      const rng = new Rng(6);
      const tokens = Array.from({ length: 14 }, () => Math.floor(rng.uniform() * V));
      const ref = await cpu.logprobs(tokens, { start: 5, adapter: null });
      const seqs: StepSequence[] = [{ tokens, start: 5, mask: tokens.slice(5).map(() => 1), ref, kind: 'mispo', mu: ref, advantage: 0.7, desirable: true, ktoWeight: 1 }];
      const step = () => batchGradient(gpu, adapter, objectives, seqs, newStepState());
      gpu.resetTraffic();
      const first = await step();
      const t1 = gpu.resetTraffic();
      const second = await step();
      const t2 = gpu.resetTraffic();
      const want = await batchGradient(cpu, randomized(cpu.newAdapter({ r: 4, alpha: 8 }, 1), 2), objectives, seqs, newStepState());

      // The frozen weights each layer graph reads (the embedding is a row copy on the host; the head reads lm_head tiles).
      const weights = gpu.params.filter((p) => p.layer !== null);
      const weightBytes = weights.reduce((n, p) => n + 4 * p.shape.reduce((a, d) => a * d, 1), 0);
      const loraBytes = adapter.pairs.reduce((n, p) => n + 4 * (p.a.length + p.b.length), 0);
      const mib = (b: number): string => `${(b / 2 ** 20).toFixed(3)} MiB`;
      console.log(`to the device: step 1 ${mib(t1.toDevice)} (${mib(t1.resident)} uploaded once), step 2 ${mib(t2.toDevice)} (${mib(t2.resident)} LoRA); to the host ${mib(t1.toHost)}, ${mib(t2.toHost)}; layer weights ${mib(weightBytes)}, LoRA ${mib(loraBytes)}`);
      console.log(`step 2 by input: ${[...t2.byInput].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ')}`);
      for (const p of weights) expect(t1.byInput.get(p.name) ?? 0, `step 1 uploads ${p.name}`).toBeGreaterThan(0);
      expect(t1.resident).toBeGreaterThanOrEqual(weightBytes);
      for (const p of weights) expect(t2.byInput.has(p.name), `step 2 moved ${p.name}`).toBe(false);
      expect([...t2.byInput.keys()].filter((k) => k === 'norm' || k.startsWith('lm_head.tile'))).toEqual([]);
      // What step 2 uploads as resident is the adapter, once per call that reads it (the policy's forward and backward).
      expect(t2.resident).toBeLessThanOrEqual(2 * loraBytes);
      expect(t2.toDevice).toBeLessThan(weightBytes);
      expect([...t2.byInput.values()].reduce((a, b) => a + b, 0)).toBe(t2.toDevice);
      // The device copies are the weights: both steps give the CPU's answer.
      for (const g of [first, second]) {
        expect(maxRelDiff(g.grads, want.grads)).toBeLessThanOrEqual(GRAD_REL_TOLERANCE);
        expect(Math.abs(g.loss - want.loss)).toBeLessThanOrEqual(1e-3 * Math.max(1, Math.abs(want.loss)));
      }
    } finally {
      await objectives.dispose();
      await cpu.close();
      await gpu.close();
    }
  }, 600_000);

  it('a block-quantized base: MatMulNBits reads weights uploaded once (without zero points), zero points are dequantized', async (ctx) => {
    if (!probe.ok) ctx.skip(`no usable WebGPU adapter (the provider probe failed: ${probe.error})`);
    const c = parseLlamaConfig({
      architectures: ['Qwen2ForCausalLM'], vocab_size: 64, hidden_size: 64, intermediate_size: 96, num_hidden_layers: 2,
      num_attention_heads: 4, num_key_value_heads: 2, rms_norm_eps: 1e-6, rope_theta: 10000,
    });
    for (const zeroPoints of [false, true]) {
      // Q4_0 and Q8_0 layouts; with zeroPoints every third linear is Q4_1-like, the lm_head among them.
      const specs = [{ bits: 4, zeroPoints: false }, { bits: 8, zeroPoints: false }, { bits: 4, zeroPoints }] as const;
      const rng = new Rng(3);
      const w = new Map<string, Float32Array | QuantWeight>();
      llamaParams(c).forEach((p, i) => {
        const v = rng.fillNormal(new Float32Array(p.shape.reduce((a, d) => a * (d as number), 1)), p.kind === 'norm' ? 0.1 : 0.08);
        if (p.kind === 'norm') v.forEach((_, j) => (v[j]! += 1));
        w.set(p.hfKey, p.kind === 'linear' ? quantize(v, p.shape[0] as number, p.shape[1] as number, specs[i % 3]!) : v);
      });
      const opts = { dtype: 'float32', threads: 1, buckets: [16] } as const;
      const cpu = Engine.fromWeights(c, (k) => w.get(k)!, { ...opts, provider: 'cpu' });
      // As a round builds it: with the probe's missing ops lowered as compositions.
      const gpu = Engine.fromWeights(c, (k) => w.get(k)!, { ...opts, provider: 'webgpu', missingOps: probe.ops?.missing ?? [] });
      try {
        const step = async (e: Engine) => {
          const a = randomized(e.newAdapter({ r: 4, alpha: 8 }, 1), 2);
          const tokens = Array.from({ length: 12 }, (_, i) => (i * 7 + 3) % c.vocabSize);
          const lp = await e.logprobs(tokens, { adapter: a });
          const g = await e.driver.grad(tokens, 1, a, (l) => new Float64Array(l.length).fill(-1));
          return { lp, grads: g.grads.flatMap((p) => [p.a, p.b]) };
        };
        const want = await step(cpu);
        gpu.resetTraffic();
        const first = await step(gpu);
        gpu.resetTraffic();
        const second = await step(gpu);
        const t2 = gpu.resetTraffic();
        for (const got of [first, second]) {
          expect(maxAbsDiff(got.lp, want.lp)).toBeLessThanOrEqual(LOGPROB_TOLERANCE);
          expect(maxRelDiff(got.grads, want.grads)).toBeLessThanOrEqual(GRAD_REL_TOLERANCE);
        }
        const moved = [...t2.byInput.keys()].filter((k) => !k.includes('.lora_') && !['x', 'h', 'd_y', 'lm_head.rows', 'targets'].includes(k));
        console.log(`quantized base${zeroPoints ? ' with zero points' : ''}: step 2 moved ${t2.toDevice} bytes; weights among them: ${moved.join(', ') || 'none'}`);
        // Layers with zero points are dequantized on the host at each run, so their weights do cross.
        if (!zeroPoints) expect(moved).toEqual([]);
        else expect(moved.length).toBeGreaterThan(0);
      } finally {
        await cpu.close();
        await gpu.close();
      }
    }
  }, 600_000);

  it('the op probe lists every op type of the training graphs on the adapter, and each one it lacks has a composition', (ctx) => {
    if (!probe.ok || probe.ops === null) ctx.skip(`no usable WebGPU adapter (the provider probe failed: ${probe.error})`);
    console.log(formatOpProbe(probe.ops!));
    expect(probe.ops!.checked.length).toBeGreaterThan(20);
    // Each missing op either has a composition, or is MatMulNBits with float zero points, which the driver does not
    // use on WebGPU (it dequantizes such weights: the test above).
    const unreplaced = probe.ops!.checked.filter((c) => !c.ok && !c.substitutable).map((c) => c.opType);
    expect(unreplaced.filter((t) => t !== 'com.microsoft.MatMulNBits(f32,u8,f32,f32)')).toEqual([]);
  });
});
