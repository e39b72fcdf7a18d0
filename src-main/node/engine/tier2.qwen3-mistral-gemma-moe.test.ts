// Tier-2 numerics for the architectures beyond Llama/Qwen2 (tier2.llama-qwen2.test.ts covers those): Qwen3's per-head q/k
// RMSNorm, Mistral's sliding attention window, Gemma 2 (soft-caps, alternating local/global layers, (1 + w) norms,
// GeGLU) and Gemma 3 (q/k norm, two RoPE bases), and the MoEs (Qwen3-MoE, Mixtral: the LoRA gradient flows through
// the router's top-k weights), on tiny random models in the HF layout, in float64.
// LoRA gradients of the round's step (node/training/step.ts, MIS-PO and KTO) against central differences (labelled per tensor), the q/k-norm weights actually used, and the
// window's receptive field (L layers of window W see L·(W − 1) tokens back, and no further).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peftKeys } from '../../common/engine/lora.ts';
import { Rng } from '../../common/engine/rng.ts';
import { causalMask } from '../../common/engine/families/llama.ts';
import { Engine } from './engine.ts';
import { StepCheck } from './test-utils/step-check.ts';
import { loadHfModel } from './hf.ts';
import { writeTinyModel } from './tiny.ts';
import { Graph } from '../../common/engine/ir.ts';
import * as op from '../../common/engine/ops.ts';
import { topKRouting } from '../../common/engine/families/moe.ts';
import { Runtime } from './runtime.ts';
import { gradcheck } from './test-utils/gradcheck.ts';
import type { TinyArch, TinyOptions } from './tiny.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-tier2-variants-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const WINDOW = 3;
const LAYERS = 2;

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const OPTS: Partial<Record<TinyArch, Partial<TinyOptions>>> = {
  gemma2: { attnSoftcap: 1.5, finalSoftcap: 3 },
  gemma3: { swaPattern: 2 },
  qwen3moe: { experts: 4, topK: 2 },
  mixtral: { experts: 4, topK: 2 },
};

describe.each<TinyArch>(['qwen3', 'mistral', 'gemma2', 'gemma3', 'qwen3moe', 'mixtral'])('tier 2: tiny %s', (arch) => {
  const dir = path.join(root, arch);
  let engine: Engine;
  const tokens = [11, 950, 3, 77, 4096, 12, 5, 60, 301, 9];
  let check: StepCheck;

  beforeAll(async () => {
    writeTinyModel(dir, { arch, layers: LAYERS, hidden: 32, heads: 4, kvHeads: 2, intermediate: 48, seed: 7, std: 0.2, slidingWindow: WINDOW, ...OPTS[arch] });
    engine = Engine.load(dir, { dtype: 'float64', headChunk: 8, threads: 1, buckets: [8, 16] });
    check = await StepCheck.build(engine, [
      { tokens, start: 3, advantage: 0.7 },
      { tokens: tokens.slice(2), start: 2, desirable: false },
    ]);
  });
  afterAll(async () => {
    await check.dispose();
    await engine.close();
  });

  it("LoRA gradients of the round's step (MIS-PO and KTO) match central differences, per tensor", async () => {
    const adapter = engine.newAdapter({ r: 2, alpha: 4 }, 3);
    const rng = new Rng(4);
    for (const p of adapter.pairs) rng.fork(p.baseKey).fillNormal(p.b, 0.05);
    const step = await check.step(adapter);
    const grads = new Map(adapter.pairs.flatMap((p, k) => [[peftKeys(p.baseKey).a, step.grads[2 * k]!], [peftKeys(p.baseKey).b, step.grads[2 * k + 1]!]]));
    const lossAt = (): Promise<number> => check.lossAt(adapter, step.z0);
    expect(step.loss).toBeCloseTo(await lossAt(), 12);
    const pick = new Rng(11);
    const report: string[] = [];
    for (const p of adapter.pairs) {
      const keys = peftKeys(p.baseKey);
      for (const [which, arr, key] of [['A', p.a, keys.a], ['B', p.b, keys.b]] as const) {
        const g = grads.get(key)!;
        const i = Math.floor(pick.uniform() * arr.length);
        const keep = arr[i]!;
        arr[i] = keep + 1e-4;
        const hi = arr[i]!;
        const up = await lossAt();
        arr[i] = keep - 1e-4;
        const lo = arr[i]!;
        const dn = await lossAt();
        arr[i] = keep;
        const fd = (up - dn) / (hi - lo);
        const d = Math.abs(fd - g[i]!);
        report.push(`${p.module}[${p.layer}].lora_${which}: |fd − grad| ${d.toExponential(2)} (grad ${g[i]!.toExponential(2)})`);
        expect(d, report.at(-1)).toBeLessThan(1e-7 + 1e-5 * Math.abs(g[i]!));
      }
    }
    console.log(`${arch}: ${report.length} LoRA tensors\n  ${report.join('\n  ')}`);
  });

  if (arch === 'qwen3') {
    it('the per-head q/k norm weights are read: scaling k_norm changes the logprobs, the base is unchanged without', async () => {
      const m = loadHfModel(dir, { tokenizer: false });
      expect(m.params.filter((p) => p.name === 'q_norm' || p.name === 'k_norm').map((p) => p.shape)).toEqual([[8], [8], [8], [8]]);
      const read = (key: string): Float64Array => m.read(key, { as: 'f64' }) as Float64Array;
      const same = Engine.fromWeights(m.config, read, { dtype: 'float64', threads: 1, buckets: [16] });
      const bent = Engine.fromWeights(m.config, (k) => (k.endsWith('layers.1.self_attn.k_norm.weight') ? read(k).map((v) => 2 * v) : read(k)), { dtype: 'float64', threads: 1, buckets: [16] });
      m.close();
      const base = await engine.logprobs(tokens);
      expect(maxAbsDiff(await same.logprobs(tokens), base)).toBe(0);
      expect(maxAbsDiff(await bent.logprobs(tokens), base)).toBeGreaterThan(1e-3);
      await same.close();
      await bent.close();
    });
  } else if (arch === 'mistral') {
    it(`the sliding window (W = ${WINDOW}) bounds what a position sees to L·(W − 1) tokens back`, async () => {
      expect(engine.config.slidingWindow).toBe(WINDOW);
      const reach = LAYERS * (WINDOW - 1);
      const n = 9; // the last row, n − 1, sees tokens n − 1 − reach … n − 1
      const seq = tokens.slice(0, n);
      const base = await engine.driver.nextLogprobs(seq, null);
      const outside = [...seq];
      outside[n - 2 - reach] = 4000;
      const inside = [...seq];
      inside[n - 1 - reach] = 4000;
      expect(maxAbsDiff(await engine.driver.nextLogprobs(outside, null), base)).toBe(0);
      expect(maxAbsDiff(await engine.driver.nextLogprobs(inside, null), base)).toBeGreaterThan(1e-6);
      // The mask itself: row i is open exactly on (i − W, i].
      const m = causalMask(5, 2);
      expect(Array.from(m.subarray(15, 20))).toEqual([-Infinity, -Infinity, 0, 0, -Infinity]);
    });
  }
});

describe('MoE routing (families/moe.ts topKRouting)', () => {
  const rt = new Runtime({ intraOpThreads: 1, optimization: 'basic' });
  afterAll(async () => rt.dispose());
  const T = 6;
  const E = 5;
  const logits = new Rng(21).fillUniform(new Float64Array(T * E), -2, 2);

  it.each([true, false])('selects each row\'s top 2 of the softmax (renormalised: %s), zero elsewhere, as torch.topk', async (norm) => {
    const g = new Graph('routing');
    const x = g.input('x', 'float64', [T, E]);
    g.output('w', topKRouting(op.softmax(x, 1), 2, norm));
    const w = (await rt.run(g, {}, { x: logits }))['w']!.data as Float64Array;
    for (let t = 0; t < T; t++) {
      const row = Array.from(logits.subarray(t * E, (t + 1) * E));
      const z = row.reduce((s, v) => s + Math.exp(v), 0);
      const p = row.map((v) => Math.exp(v) / z);
      const top = [...p.keys()].sort((a, b) => p[b]! - p[a]!).slice(0, 2);
      const kept = top.reduce((s, e) => s + p[e]!, 0);
      for (let e = 0; e < E; e++) {
        const want = top.includes(e) ? p[e]! / (norm ? kept : 1) : 0;
        expect(Math.abs(w[t * E + e]! - want), `row ${t} expert ${e}`).toBeLessThan(1e-14);
      }
    }
  });

  it.each([true, false])('its gradient toward the router logits matches central differences (renormalised: %s)', async (norm) => {
    const r = await gradcheck(rt, {
      name: `topk_routing_${norm}`,
      eps: 1e-6,
      build: (g) => {
        const x = g.input('x', 'float64', [T, E]);
        return { inputs: [{ tensor: x, data: logits }], outputs: [topKRouting(op.softmax(x, 1), 2, norm)] };
      },
    });
    expect(r.worst, `${r.name}: worst at ${r.worstAt}, max |err| ${r.maxAbsErr}`).toBeLessThanOrEqual(1);
  });
});
