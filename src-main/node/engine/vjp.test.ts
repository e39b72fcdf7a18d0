// The vjp split against the single-graph gradient, on a small transformer layer with LoRA, run in ORT.
import { afterAll, describe, expect, it } from 'vitest';
import { type DType, Graph, type Tensor } from '../../common/engine/ir.ts';
import * as op from '../../common/engine/ops.ts';
import * as C from '../../common/engine/composites.ts';
import { grad, vjpSplit } from '../../common/engine/autodiff.ts';
import { Rng } from '../../common/engine/rng.ts';
import { type HostArray, Runtime } from './runtime.ts';
import { maxRelErr } from './test-utils/compare.ts';

const rt = new Runtime({ intraOpThreads: 1 });
afterAll(() => rt.dispose());

const H = 8;
const NH = 2;
const NKV = 1;
const HD = 4;
const FF = 12;
const R = 2;
const FROZEN: Record<string, number[]> = {
  norm1: [H],
  wq: [NH * HD, H],
  wk: [NKV * HD, H],
  wv: [NKV * HD, H],
  wo: [H, NH * HD],
  norm2: [H],
  wg: [FF, H],
  wu: [FF, H],
  wd: [H, FF],
};
const LORA: Record<string, number[]> = { qa: [R, H], qb: [NH * HD, R], va: [R, H], vb: [NKV * HD, R] };

/** One pre-norm Llama-style layer with LoRA on q and v; `p` maps a parameter name to its tensor. */
function layer(x: Tensor, p: (n: string) => Tensor, cos: Tensor, sin: Tensor): Tensor {
  const lin = (h: Tensor, w: string, a?: string, b?: string): Tensor => {
    const y = op.gemm(h, p(w), { transB: true }); // [T, out]
    if (a === undefined || b === undefined) return y;
    return op.add(y, op.mul(op.gemm(op.gemm(h, p(a), { transB: true }), p(b), { transB: true }), 2)); // α/r = 2
  };
  const h = C.rmsNorm(x, p('norm1'), 1e-5); // [T, H]
  const attn = C.causalAttention(lin(h, 'wq', 'qa', 'qb'), lin(h, 'wk'), lin(h, 'wv', 'va', 'vb'), { nHeads: NH, nKvHeads: NKV, headDim: HD, rope: { cos, sin, layout: 'half' } });
  const x2 = op.add(x, lin(attn, 'wo')); // [T, H]
  const m = C.rmsNorm(x2, p('norm2'), 1e-5);
  return op.add(x2, lin(C.swiglu(lin(m, 'wg'), lin(m, 'wu')), 'wd')); // [T, H]
}

function layerGraph(dtype: DType, prefix = ''): { g: Graph; x: Tensor; y: Tensor } {
  const g = new Graph('layer');
  const x = g.input('x', dtype, ['T', H]);
  const cos = g.input('cos', dtype, ['T', HD / 2]);
  const sin = g.input('sin', dtype, ['T', HD / 2]);
  const params = new Map<string, Tensor>();
  for (const [n, s] of Object.entries({ ...FROZEN, ...LORA })) params.set(n, g.input(prefix + n, dtype, s));
  const y = layer(x, (n) => params.get(n)!, cos, sin);
  g.output('y', y);
  return { g, x, y };
}

function feedsFor(dtype: DType, T: number, seed: number, prefix = ''): Record<string, HostArray> {
  const rng = new Rng(seed);
  const mk = (n: number, scale: number): HostArray => {
    const a = Float64Array.from({ length: n }, () => (rng.uniform() * 2 - 1) * scale);
    return dtype === 'float32' ? Float32Array.from(a) : a;
  };
  const tab = C.ropeTables([...Array(T).keys()], C.ropeInvFreq(HD, 10000), dtype === 'float32' ? 'float32' : 'float64');
  const out: Record<string, HostArray> = { x: mk(T * H, 1), cos: tab.cos, sin: tab.sin, d_y: mk(T * H, 1) };
  for (const [n, s] of Object.entries({ ...FROZEN, ...LORA })) out[prefix + n] = mk(s.reduce((a, b) => a * b, 1), n.startsWith('norm') ? 1 : 0.5);
  return out;
}

const WRT = ['x', 'qa', 'qb', 'va', 'vb'];

describe('vjp split', () => {
  it.each([
    ['float64', 1e-12],
    ['float32', 1e-5],
  ] as const)('forward+backward (residuals) and recompute give the single-graph gradients (%s)', async (dtype, tol) => {
    const T = 5;
    const feeds = feedsFor(dtype, T, 42);

    // Single graph: forward and gradient together.
    const whole = layerGraph(dtype);
    const dy = whole.g.input('d_y', dtype, ['T', H]);
    const grads = grad([whole.y], WRT.map((n) => whole.g.getInput(n)), [dy]);
    WRT.forEach((n, k) => whole.g.output(`d_${n}`, grads[k]!));
    const ref = await rt.run(whole.g, { T }, feeds);

    const base = layerGraph(dtype).g;
    const split = vjpSplit(base, { outputs: ['y'], wrt: WRT });
    const fwd = await rt.run(split.forward, { T }, feeds);
    expect(maxRelErr(fwd['y']!.data, ref['y']!.data)).toBeLessThan(tol);
    const res = split.residuals.map((r) => [r, fwd[r]!.data] as const);
    const bwd = await rt.run(split.backward, { T }, { ...feeds, ...Object.fromEntries(res) });

    const rec = vjpSplit(base, { outputs: ['y'], wrt: WRT, recompute: true });
    const bwdR = await rt.run(rec.backward, { T }, feeds);
    for (const n of WRT) {
      expect(maxRelErr(bwd[split.gradients[n]!]!.data, ref[`d_${n}`]!.data), `d_${n} split`).toBeLessThan(tol);
      expect(maxRelErr(bwdR[rec.gradients[n]!]!.data, ref[`d_${n}`]!.data), `d_${n} recompute`).toBeLessThan(tol);
    }
    // The LoRA B gradients are not zero (B is random here), so the comparison is not vacuous.
    expect(maxRelErr(ref['d_qb']!.data, new Float64Array(ref['d_qb']!.data.length))).toBeGreaterThan(0);
    await rt.dispose();
  });

  it('one layer graph driven twice equals a two-layer graph (the per-layer driver)', async () => {
    const T = 4;
    const dtype = 'float64';
    const f0 = feedsFor(dtype, T, 1);
    const f1 = feedsFor(dtype, T, 2, 'l1_');

    // Reference: both layers in one graph, layer 1's parameters prefixed.
    const g = new Graph('two_layers');
    const x = g.input('x', dtype, ['T', H]);
    const cos = g.input('cos', dtype, ['T', HD / 2]);
    const sin = g.input('sin', dtype, ['T', HD / 2]);
    const P = (prefix: string) => {
      const m = new Map<string, Tensor>();
      for (const [n, s] of Object.entries({ ...FROZEN, ...LORA })) m.set(n, g.input(prefix + n, dtype, s));
      return (n: string) => m.get(n)!;
    };
    const p0 = P('');
    const p1 = P('l1_');
    const y = layer(layer(x, p0, cos, sin), p1, cos, sin);
    const dy = g.input('d_y', dtype, ['T', H]);
    const names = ['x', 'qa', 'qb', 'l1_qa', 'l1_qb'];
    const gr = grad([y], names.map((n) => g.getInput(n)), [dy]);
    g.output('y', y);
    names.forEach((n, k) => g.output(`d_${n}`, gr[k]!));
    const ref = await rt.run(g, { T }, { ...f1, ...f0 });

    // Driver: the same split graphs for both layers, feeding each layer's weights.
    const split = vjpSplit(layerGraph(dtype).g, { outputs: ['y'], wrt: WRT });
    const layerFeeds = (src: Record<string, HostArray>, prefix: string): Record<string, HostArray> =>
      Object.fromEntries(Object.keys({ ...FROZEN, ...LORA }).map((n) => [n, src[prefix + n]!]));
    const w0 = layerFeeds(f0, '');
    const w1 = layerFeeds(f1, 'l1_');
    const common = { cos: f0['cos']!, sin: f0['sin']! };
    const a0 = await rt.run(split.forward, { T }, { ...common, ...w0, x: f0['x']! });
    const a1 = await rt.run(split.forward, { T }, { ...common, ...w1, x: a0['y']!.data });
    expect(maxRelErr(a1['y']!.data, ref['y']!.data)).toBeLessThan(1e-12);
    const resOf = (a: Record<string, { data: HostArray }>) => Object.fromEntries(split.residuals.map((r) => [r, a[r]!.data]));
    const b1 = await rt.run(split.backward, { T }, { ...common, ...w1, x: a0['y']!.data, ...resOf(a1), d_y: f0['d_y']! });
    const b0 = await rt.run(split.backward, { T }, { ...common, ...w0, x: f0['x']!, ...resOf(a0), d_y: b1['d_x']!.data });
    expect(maxRelErr(b0['d_x']!.data, ref['d_x']!.data)).toBeLessThan(1e-12);
    expect(maxRelErr(b0['d_qa']!.data, ref['d_qa']!.data)).toBeLessThan(1e-12);
    expect(maxRelErr(b1['d_qb']!.data, ref['d_l1_qb']!.data)).toBeLessThan(1e-12);
    expect(maxRelErr(b1['d_qa']!.data, ref['d_l1_qa']!.data)).toBeLessThan(1e-12);
    // One compiled forward and one backward served both layers.
    await rt.dispose();
  });
});
