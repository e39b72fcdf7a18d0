// Block-quantized frozen weights (common/engine/quant.ts) run in ORT: MatMulNBits forward and its gradient rule's
// dequantized dX equal f32 Gemm on the dequantized weights; a Llama decoder layer with quantized linears and LoRA,
// split by vjpSplit, gives the f32 layer's outputs and gradients on the same dequantized weights.
import { afterAll, describe, expect, it } from 'vitest';
import { Graph } from '../../common/engine/ir.ts';
import * as op from '../../common/engine/ops.ts';
import { grad, vjpSplit } from '../../common/engine/autodiff.ts';
import { Rng } from '../../common/engine/rng.ts';
import { type QuantSpec, type QuantWeight, QUANT_CHUNK_VALUES, dequantize, frozenLinear, quantFeeds, quantInputs, quantParts, quantize } from '../../common/engine/quant.ts';
import { llamaLayerGraph, llamaLayerParams, llamaParams, parseLlamaConfig, ropeTablesFor } from '../../common/engine/families/llama.ts';
import { causalMaskTable } from '../../common/engine/composites.ts';
import { loraInputNames } from '../../common/engine/lora.ts';
import { numel } from '../../common/engine/families/params.ts';
import { CompiledGraph, type Feed, Runtime } from './runtime.ts';
import { Engine } from './engine.ts';
import { maxRelErr } from './test-utils/compare.ts';

const rt = new Runtime({ intraOpThreads: 1 });
afterAll(() => rt.dispose());

const SPECS: [string, QuantSpec][] = [
  ['int4 symmetric', { bits: 4, zeroPoints: false }],
  ['int4 with f32 zero points', { bits: 4, zeroPoints: true }],
  ['int8 symmetric', { bits: 8, zeroPoints: false }],
];

describe('quantized linear', () => {
  // [N, K] = [48, 96] (one part) and [2304, 4096] (9.4M values: fed in two parts of rows, one MatMulNBits each).
  for (const [N, K] of [[48, 96], [2304, 4096]] as const) {
    for (const [label, spec] of SPECS) {
      it(`${label} [${N}, ${K}]: forward and dX equal f32 Gemm on the dequantized weights`, async () => {
        expect(quantParts(N, K)).toHaveLength(N * K > QUANT_CHUNK_VALUES ? 2 : 1);
        const rng = new Rng(3);
        const T = 5;
        const wf = rng.fillNormal(new Float32Array(N * K), 0.05);
        const q = quantize(wf, N, K, spec);
        const deq = dequantize(q);
        const x = rng.fillNormal(new Float32Array(T * K), 1);
        const c = rng.fillNormal(new Float32Array(T * N), 1);

        const build = (quantized: boolean): Graph => {
          const g = new Graph(quantized ? 'qlin' : 'flin');
          const xi = g.input('x', 'float32', [T, K]);
          const ci = g.input('c', 'float32', [T, N]);
          const w = quantized ? quantInputs(g, 'w', N, K, spec) : g.input('w', 'float32', [N, K]);
          const y = frozenLinear(xi, w); // [T, N]
          g.output('y', y);
          g.output('dx', grad([op.reduceSum(op.mul(y, ci), [], false)], [xi])[0]!); // [T, K] = c·W
          return g;
        };
        const qo = await rt.run(build(true), {}, { x, c, ...quantFeeds('w', q) });
        const fo = await rt.run(build(false), {}, { x, c, w: deq });
        expect(maxRelErr(qo['y']!.data as Float32Array, fo['y']!.data as Float32Array)).toBeLessThan(1e-5);
        expect(maxRelErr(qo['dx']!.data as Float32Array, fo['dx']!.data as Float32Array)).toBeLessThan(1e-5);
        // Baked in as constants (Driver's prepack: ORT prepacks MatMulNBits' weights), the same product; the dX
        // dequantization still reads the fed weights, and a forward-only session reads none.
        const consts = { id: 'w', values: quantFeeds('w', q) };
        const po = await rt.run(build(true), {}, { x, c, ...quantFeeds('w', q) }, undefined, consts);
        expect(maxRelErr(po['y']!.data as Float32Array, fo['y']!.data as Float32Array)).toBeLessThan(1e-5);
        expect(maxRelErr(po['dx']!.data as Float32Array, fo['dx']!.data as Float32Array)).toBeLessThan(1e-5);
        const fwd = new Graph(`qfwd${N}`);
        fwd.output('y', frozenLinear(fwd.input('x', 'float32', [T, K]), quantInputs(fwd, 'w', N, K, spec)));
        const compiled = await rt.compile(fwd, {}, consts);
        expect(compiled.inputNames).toEqual(['x']);
        expect(maxRelErr((await compiled.run({ x }))['y']!.data as Float32Array, fo['y']!.data as Float32Array)).toBeLessThan(1e-5);
        // The quantization itself is not the identity: the f32 weights give a different product.
        const raw = await rt.run(build(false), {}, { x, c, w: wf });
        expect(maxRelErr(raw['y']!.data as Float32Array, fo['y']!.data as Float32Array)).toBeGreaterThan(1e-4);
      }, 60_000);
    }
  }

  it('refuses float64 activations and a weight whose rows are not whole blocks', () => {
    const g = new Graph('bad');
    expect(() => quantInputs(g, 'w', 4, 40, { bits: 4, zeroPoints: false })).toThrow(/multiple of 32/);
    const w = quantInputs(g, 'w2', 4, 64, { bits: 4, zeroPoints: false });
    expect(() => frozenLinear(g.input('x', 'float64', [2, 64]), w)).toThrow(/float32/);
  });
});

describe('quantized decoder layer through vjpSplit', () => {
  const c = parseLlamaConfig({
    architectures: ['Qwen2ForCausalLM'], vocab_size: 64, hidden_size: 64, intermediate_size: 96, num_hidden_layers: 1,
    num_attention_heads: 4, num_key_value_heads: 2, rms_norm_eps: 1e-6, rope_theta: 10000,
  });
  const lora = { targets: ['q_proj', 'v_proj', 'down_proj'], r: 4, scale: 2 };
  const wrt = ['x', ...lora.targets.flatMap((m) => [loraInputNames(m).a, loraInputNames(m).b])];

  it('forward, dX and the LoRA gradients equal the f32 layer on the dequantized weights', async () => {
    const rng = new Rng(9);
    const T = 16;
    const params = llamaLayerParams(c, 0);
    const f32: Record<string, Feed> = {};
    const qfeeds: Record<string, Feed> = {};
    const layout: Record<string, QuantSpec> = {};
    params.forEach((p, i) => {
      const v = rng.fillNormal(new Float32Array(numel(p.shape)), p.kind === 'norm' ? 0.1 : 0.08);
      if (p.kind === 'norm') v.forEach((_, j) => (v[j]! += 1));
      if (p.kind === 'linear') {
        const spec = SPECS[i % SPECS.length]![1];
        const q = quantize(v, p.shape[0] as number, p.shape[1] as number, spec);
        layout[p.name] = spec;
        Object.assign(qfeeds, quantFeeds(p.name, q));
        f32[p.name] = dequantize(q);
      } else {
        f32[p.name] = v;
        qfeeds[p.name] = v;
      }
    });
    expect(Object.keys(layout)).toHaveLength(7);
    const tabs = ropeTablesFor(c, T);
    const common: Record<string, Feed> = {
      x: rng.fillNormal(new Float32Array(T * c.hiddenSize), 1),
      rope_cos: Float32Array.from(tabs.cos),
      rope_sin: Float32Array.from(tabs.sin),
      mask: Float32Array.from(causalMaskTable(T)),
      d_y: rng.fillNormal(new Float32Array(T * c.hiddenSize), 1),
    };
    const fp = llamaLayerParams(c, 0);
    for (const m of lora.targets) {
      const p = fp.find((q) => q.name === m)!;
      const [out, inF] = p.shape as [number, number];
      common[loraInputNames(m).a] = rng.fillNormal(new Float32Array(lora.r * inF), 0.1);
      common[loraInputNames(m).b] = rng.fillNormal(new Float32Array(out * lora.r), 0.1);
    }
    const run = async (quant: Record<string, QuantSpec>, w: Record<string, Feed>): Promise<Record<string, Float32Array>> => {
      const s = vjpSplit(llamaLayerGraph(c, 'float32', lora, undefined, quant), { outputs: ['y'], wrt });
      const fwd = await rt.run(s.forward, { T }, { ...common, ...w });
      const res: Record<string, Feed> = {};
      for (const r of s.residuals) res[r] = fwd[r]!.data;
      const bwd = await rt.run(s.backward, { T }, { ...common, ...w, ...res });
      const out: Record<string, Float32Array> = { y: fwd['y']!.data as Float32Array };
      for (const n of wrt) out[n] = bwd[s.gradients[n]!]!.data as Float32Array;
      return out;
    };
    const q = await run(layout, qfeeds);
    const f = await run({}, f32);
    for (const k of ['y', ...wrt]) {
      const e = maxRelErr(q[k]!, f[k]!);
      expect(e, `${k}: max rel diff ${e.toExponential(2)}`).toBeLessThan(2e-5);
    }
  }, 60_000);
});

/**
 * A random Qwen2 with `layers` layers whose linears are quantized by SPECS in turn: the quantized weights, and the
 * same dequantized to f32.
 */
function randomQuantQwen2(layers: number, seed: number): { c: ReturnType<typeof parseLlamaConfig>; quant: Map<string, Float32Array | QuantWeight>; f32: Map<string, Float32Array> } {
  const c = parseLlamaConfig({
    architectures: ['Qwen2ForCausalLM'], vocab_size: 64, hidden_size: 64, intermediate_size: 96, num_hidden_layers: layers,
    num_attention_heads: 4, num_key_value_heads: 2, rms_norm_eps: 1e-6, rope_theta: 10000,
  });
  const rng = new Rng(seed);
  const quant = new Map<string, Float32Array | QuantWeight>();
  const f32 = new Map<string, Float32Array>();
  llamaParams(c).forEach((p, i) => {
    const v = rng.fillNormal(new Float32Array(numel(p.shape)), p.kind === 'norm' ? 0.1 : 0.08);
    if (p.kind === 'norm') v.forEach((_, j) => (v[j]! += 1));
    const q = p.kind === 'linear' ? quantize(v, p.shape[0] as number, p.shape[1] as number, SPECS[i % SPECS.length]![1]) : v;
    quant.set(p.hfKey, q);
    f32.set(p.hfKey, q instanceof Float32Array ? q : dequantize(q));
  });
  return { c, quant, f32 };
}

/** Log-probs and LoRA gradients of `tokens` under a fixed rank-4 adapter (its B seeded, so both are non-zero). */
async function adapterStep(e: Engine, tokens: number[]) {
  const adapter = e.newAdapter({ r: 4, alpha: 8 }, 1);
  for (const p of adapter.pairs) new Rng(5).fork(p.baseKey).fillNormal(p.b, 0.05);
  const lp = await e.logprobs(tokens, { adapter });
  const g = await e.driver.grad(tokens, 1, adapter, (l) => new Float64Array(l.length).fill(-1));
  return { lp, grads: g.grads };
}

describe('prepacked quantized layers (DriverOptions.prepack)', () => {
  it('give the default path’s log-probs and LoRA gradients (layers dequantized per run), for two shape buckets in turn', async () => {
    const { c, quant: weights } = randomQuantQwen2(2, 21);
    const engines = [false, true].map((prepack) => Engine.fromWeights(c, (k) => weights.get(k)!, { dtype: 'float32', threads: 1, buckets: [16, 32], prepack }));
    try {
      for (const n of [12, 30, 12]) {
        const tokens = Array.from({ length: n }, (_, i) => (i * 7 + 3) % c.vocabSize);
        const [fed, packed] = await Promise.all(engines.map((e) => adapterStep(e, tokens)));
        expect(maxRelErr(packed!.lp, fed!.lp)).toBeLessThan(1e-5);
        fed!.grads.forEach((g, i) => {
          expect(maxRelErr(packed!.grads[i]!.a, g.a)).toBeLessThan(1e-4);
          expect(maxRelErr(packed!.grads[i]!.b, g.b)).toBeLessThan(1e-4);
        });
      }
    } finally {
      await Promise.all(engines.map((e) => e.close()));
    }
  }, 120_000);
});

describe('a quantized base runs the f32 layer graph on its weights dequantized per run (the default)', () => {
  it('equals an f32 engine on the dequantized weights bit for bit, never runs MatMulNBits in a layer, and concurrent calls agree', async () => {
    const { c, quant, f32 } = randomQuantQwen2(3, 31);
    const opts = { dtype: 'float32', threads: 1, buckets: [16, 32] } as const;
    const engines = {
      dequantized: Engine.fromWeights(c, (k) => quant.get(k)!, opts),
      nbits: Engine.fromWeights(c, (k) => quant.get(k)!, { ...opts, dequantizeLayerMaxBytes: 0 }),
      f32: Engine.fromWeights(c, (k) => f32.get(k)!, opts),
    };
    // Which graphs each engine runs: the default must not reach MatMulNBits in a layer graph.
    const nbitsRuns = new Map<string, number>();
    let current = '';
    // Layer graphs run through runKeep (their outputs may stay on the device).
    const run0 = CompiledGraph.prototype.runKeep;
    CompiledGraph.prototype.runKeep = function (this: CompiledGraph, ...a: Parameters<CompiledGraph['runKeep']>) {
      if (this.graph.name.includes('_layer') && this.graph.nodes.some((n) => n.op === 'MatMulNBits')) nbitsRuns.set(current, (nbitsRuns.get(current) ?? 0) + 1);
      return run0.apply(this, a);
    };
    try {
      for (const n of [12, 30]) {
        const tokens = Array.from({ length: n }, (_, i) => (i * 7 + 3) % c.vocabSize);
        const out: Record<string, Awaited<ReturnType<typeof adapterStep>>> = {};
        for (const [name, e] of Object.entries(engines)) {
          current = name;
          out[name] = await adapterStep(e, tokens);
        }
        expect(out['dequantized']!.lp).toEqual(out['f32']!.lp);
        out['f32']!.grads.forEach((g, i) => {
          expect(out['dequantized']!.grads[i]!.a).toEqual(g.a);
          expect(out['dequantized']!.grads[i]!.b).toEqual(g.b);
          expect(maxRelErr(out['nbits']!.grads[i]!.a, g.a)).toBeLessThan(1e-4);
          expect(maxRelErr(out['nbits']!.grads[i]!.b, g.b)).toBeLessThan(1e-4);
        });
        expect(maxRelErr(out['nbits']!.lp, out['f32']!.lp)).toBeLessThan(1e-5);
        // Three calls in flight on one engine: each takes its own scratch, so none reads another's layer.
        current = 'dequantized';
        const other = tokens.map((t) => (t * 5 + 1) % c.vocabSize);
        const [a, b, s] = await Promise.all([adapterStep(engines.dequantized, tokens), engines.dequantized.logprobs(other), adapterStep(engines.dequantized, other)]);
        expect(a.lp).toEqual(out['dequantized']!.lp);
        a.grads.forEach((g, i) => expect(g.a).toEqual(out['dequantized']!.grads[i]!.a));
        expect(b).toEqual(await engines.f32.logprobs(other));
        expect(s.lp).toEqual((await adapterStep(engines.f32, other)).lp);
      }
      expect(nbitsRuns.get('dequantized') ?? 0).toBe(0);
      expect(nbitsRuns.get('nbits') ?? 0).toBeGreaterThan(0);
    } finally {
      CompiledGraph.prototype.runKeep = run0;
      await Promise.all(Object.values(engines).map((e) => e.close()));
    }
  }, 120_000);
});
