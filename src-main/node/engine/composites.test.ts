// Composites: forward values against direct TS references, and tier-1 gradient checks through ORT in float64.
import { afterAll, describe, expect, it } from 'vitest';
import { Graph, type Tensor } from '../../common/engine/ir.ts';
import * as op from '../../common/engine/ops.ts';
import * as C from '../../common/engine/composites.ts';
import { Rng } from '../../common/engine/rng.ts';
import { Runtime } from './runtime.ts';
import { type CheckCase, gradcheck, ids } from './test-utils/gradcheck.ts';

const rt = new Runtime({ intraOpThreads: 1 });
afterAll(() => rt.dispose());
const F = 'float64';

function rand(n: number, seed: number, scale = 1): Float64Array {
  const r = new Rng(seed);
  return Float64Array.from({ length: n }, () => (r.uniform() * 2 - 1) * scale);
}
function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}
async function run1(g: Graph, bindings: Record<string, number>, feeds: Record<string, Float64Array | BigInt64Array>): Promise<Float64Array> {
  const out = await rt.run(g, bindings, feeds);
  await rt.dispose(g);
  return out[g.outputs[0]!.name]!.data as Float64Array;
}

// Reference attention written directly from the definitions (softmax(q·kᵀ/√d + causal) · v per head, GQA by h / rep).
function refAttention(q: Float64Array, k: Float64Array, v: Float64Array, T: number, nh: number, nkv: number, hd: number, valid?: number[]): Float64Array {
  const out = new Float64Array(T * nh * hd);
  const rep = nh / nkv;
  for (let h = 0; h < nh; h++) {
    const kvh = Math.floor(h / rep);
    for (let i = 0; i < T; i++) {
      const s: number[] = [];
      for (let j = 0; j <= i; j++) {
        if (valid !== undefined && valid[j] === 0) continue;
        let d = 0;
        for (let e = 0; e < hd; e++) d += q[i * nh * hd + h * hd + e]! * k[j * nkv * hd + kvh * hd + e]!;
        s.push(d / Math.sqrt(hd));
      }
      const js = [...Array(i + 1).keys()].filter((j) => valid === undefined || valid[j] !== 0);
      const m = Math.max(...s);
      const p = s.map((x) => Math.exp(x - m));
      const z = p.reduce((a, b) => a + b, 0);
      for (let e = 0; e < hd; e++) {
        let acc = 0;
        js.forEach((j, n) => (acc += (p[n]! / z) * v[j * nkv * hd + kvh * hd + e]!));
        out[i * nh * hd + h * hd + e] = acc;
      }
    }
  }
  return out;
}

function refRope(x: Float64Array, T: number, n: number, hd: number, cos: ArrayLike<number>, sin: ArrayLike<number>, layout: 'half' | 'interleaved'): Float64Array {
  const out = new Float64Array(x.length);
  const half = hd / 2;
  for (let t = 0; t < T; t++)
    for (let h = 0; h < n; h++)
      for (let i = 0; i < half; i++) {
        const [ia, ib] = layout === 'half' ? [i, i + half] : [2 * i, 2 * i + 1];
        const base = t * n * hd + h * hd;
        const a = x[base + ia]!;
        const b = x[base + ib]!;
        const c = cos[t * half + i]!;
        const s = sin[t * half + i]!;
        out[base + ia] = a * c - b * s;
        out[base + ib] = b * c + a * s;
      }
  return out;
}

describe('composites: forward values', () => {
  it('RMSNorm (and the 1+w variant) matches the definition', async () => {
    const T = 3;
    const H = 4;
    for (const onePlus of [false, true]) {
      const g = new Graph('rms');
      const x = g.input('x', F, ['T', H]);
      const w = g.input('w', F, [H]);
      g.output('y', C.rmsNorm(x, w, 1e-5, { onePlus }));
      const xd = rand(T * H, 1);
      const wd = rand(H, 2);
      const y = await run1(g, { T }, { x: xd, w: wd });
      const ref = new Float64Array(T * H);
      for (let t = 0; t < T; t++) {
        let ms = 0;
        for (let h = 0; h < H; h++) ms += xd[t * H + h]! ** 2 / H;
        for (let h = 0; h < H; h++) ref[t * H + h] = (xd[t * H + h]! / Math.sqrt(ms + 1e-5)) * (onePlus ? 1 + wd[h]! : wd[h]!);
      }
      expect(maxDiff(y, ref)).toBeLessThan(1e-12);
    }
  });

  it('SiLU, SwiGLU and GELU-tanh match their formulas', async () => {
    const g = new Graph('act');
    const a = g.input('a', F, [6]);
    const b = g.input('b', F, [6]);
    g.output('silu', C.silu(a));
    g.output('swiglu', C.swiglu(a, b));
    g.output('gelu', C.geluTanh(a));
    const ad = rand(6, 3, 3);
    const bd = rand(6, 4);
    const out = await rt.run(g, {}, { a: ad, b: bd });
    await rt.dispose(g);
    const silu = Array.from(ad, (x) => x / (1 + Math.exp(-x)));
    expect(maxDiff(out['silu']!.data as Float64Array, silu)).toBeLessThan(1e-14);
    expect(maxDiff(out['swiglu']!.data as Float64Array, silu.map((s, i) => s * bd[i]!))).toBeLessThan(1e-14);
    const gelu = Array.from(ad, (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3))));
    expect(maxDiff(out['gelu']!.data as Float64Array, gelu)).toBeLessThan(1e-14);
  });

  it('logSigmoid and softplus are exact and finite far out', async () => {
    const g = new Graph('ls');
    const x = g.input('x', F, [5]);
    g.output('ls', C.logSigmoid(x));
    g.output('sp', C.softplus(x));
    const xs = Float64Array.from([-800, -3, 0, 2.5, 800]);
    const out = await rt.run(g, {}, { x: xs });
    await rt.dispose(g);
    const ls = Array.from(xs, (v) => (v < 0 ? v - Math.log1p(Math.exp(v)) : -Math.log1p(Math.exp(-v))));
    expect(maxDiff(out['ls']!.data as Float64Array, ls)).toBeLessThan(1e-13);
    expect(maxDiff(out['sp']!.data as Float64Array, Array.from(xs, (v, i) => v - ls[i]!))).toBeLessThan(1e-13);
  });

  it.each(['half', 'interleaved'] as const)('RoPE %s layout rotates each pair by position · inv_freq', async (layout) => {
    const T = 5;
    const n = 2;
    const hd = 8;
    const inv = C.ropeInvFreq(hd, 10000);
    const tab = C.ropeTables([0, 1, 2, 3, 4], inv, 'float64');
    const g = new Graph('rope');
    const x = g.input('x', F, ['T', n, hd]);
    const cos = g.input('cos', F, ['T', hd / 2]);
    const sin = g.input('sin', F, ['T', hd / 2]);
    g.output('y', C.rope(x, cos, sin, layout));
    const xd = rand(T * n * hd, 5);
    const y = await run1(g, { T }, { x: xd, cos: tab.cos as Float64Array, sin: tab.sin as Float64Array });
    expect(maxDiff(y, refRope(xd, T, n, hd, tab.cos, tab.sin, layout))).toBeLessThan(1e-14);
    // Position 0 is the identity; rotations keep each pair's norm.
    expect(maxDiff(y.subarray(0, n * hd), xd.subarray(0, n * hd))).toBeLessThan(1e-15);
  });

  it('RoPE inverse frequencies follow HF, including Llama-3 scaling', () => {
    const plain = C.ropeInvFreq(64, 500000);
    expect(plain[0]).toBe(1);
    expect(plain[1]).toBeCloseTo(500000 ** (-2 / 64), 15);
    const scaled = C.ropeInvFreq(64, 500000, { type: 'llama3', factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 });
    // Values printed by torch 1.13 running HF's _compute_llama3_parameters written out (float32, Llama 3.2 1B config).
    const ref: [number, number][] = [[0, 1.0], [5, 0.1286874], [10, 0.01656044], [12, 0.007292665], [14, 0.003211446], [16, 0.0004295567], [20, 8.570256e-6], [31, 9.418306e-8]];
    for (const [i, v] of ref) expect(Math.abs(scaled[i]! - v) / v, `inv_freq[${i}]`).toBeLessThan(2e-6);
    expect(() => C.ropeInvFreq(63, 10000)).toThrow(/even/);
  });

  it.each([
    [4, 4, false],
    [4, 2, false],
    [4, 1, true],
  ] as const)('causal attention nh=%i nkv=%i (padding mask: %s) matches a direct computation', async (nh, nkv, padded) => {
    const T = 5;
    const hd = 4;
    const g = new Graph('attn');
    const q = g.input('q', F, ['T', nh * hd]);
    const k = g.input('k', F, ['T', nkv * hd]);
    const v = g.input('v', F, ['T', nkv * hd]);
    const valid = g.input('valid', F, ['T']);
    g.output('o', C.causalAttention(q, k, v, { nHeads: nh, nKvHeads: nkv, headDim: hd, ...(padded ? { keyValid: valid } : {}) }));
    const qd = rand(T * nh * hd, 6, 2);
    const kd = rand(T * nkv * hd, 7, 2);
    const vd = rand(T * nkv * hd, 8);
    const validArr = padded ? [1, 0, 1, 1, 0] : [1, 1, 1, 1, 1];
    const o = await run1(g, { T }, { q: qd, k: kd, v: vd, valid: Float64Array.from(validArr) });
    expect(maxDiff(o, refAttention(qd, kd, vd, T, nh, nkv, hd, padded ? validArr : undefined))).toBeLessThan(1e-12);
  });

  it('chunked token logprobs equal log_softmax(h·Wᵀ)[target], chunk by chunk', async () => {
    const T = 7;
    const H = 3;
    const V = 11;
    const g = C.logprobGraph(F, H, V);
    const hd = rand(T * H, 9, 2);
    const wd = rand(V * H, 10, 2);
    const tg = [3, 0, 10, 10, 5, 1, 7];
    const got: number[] = [];
    for (const [s, e] of C.chunkRanges(T, 3)) {
      const out = await rt.run(g, { C: e - s }, { hidden: hd.slice(s * H, e * H), lm_head: wd, targets: ids(tg.slice(s, e)) });
      got.push(...(out['logprobs']!.data as Float64Array));
    }
    await rt.dispose(g);
    expect(C.chunkRanges(T, 3)).toEqual([[0, 3], [3, 6], [6, 7]]);
    const ref = tg.map((target, t) => {
      const logits = Array.from({ length: V }, (_, v) => [0, 1, 2].reduce((a, h) => a + hd[t * H + h]! * wd[v * H + h]!, 0));
      const m = Math.max(...logits);
      const lse = m + Math.log(logits.reduce((a, l) => a + Math.exp(l - m), 0));
      return logits[target]! - lse;
    });
    expect(maxDiff(got, ref)).toBeLessThan(1e-12);
  });
});

const composite = (name: string, shape: (number | string)[], f: (x: Tensor, g: Graph) => Tensor, bindings?: Record<string, number>, lo = -1, hi = 1): CheckCase => ({
  name,
  ...(bindings === undefined ? {} : { bindings }),
  build: (g) => {
    const x = g.input('x', F, shape);
    return { inputs: [{ tensor: x, lo, hi }], outputs: [f(x, g)] };
  },
});

const gradCases: CheckCase[] = [
  {
    name: 'RMSNorm (x and w)',
    bindings: { T: 3 },
    build: (g) => {
      const x = g.input('x', F, ['T', 4]);
      const w = g.input('w', F, [4]);
      return { inputs: [{ tensor: x }, { tensor: w }], outputs: [C.rmsNorm(x, w, 1e-6)] };
    },
  },
  {
    name: 'RMSNorm 1+w',
    build: (g) => {
      const x = g.input('x', F, [2, 4]);
      const w = g.input('w', F, [4]);
      return { inputs: [{ tensor: x }, { tensor: w }], outputs: [C.rmsNorm(x, w, 1e-6, { onePlus: true })] };
    },
  },
  composite('SiLU', [2, 3], (x) => C.silu(x), undefined, -3, 3),
  {
    name: 'SwiGLU',
    build: (g) => {
      const a = g.input('a', F, [2, 3]);
      const b = g.input('b', F, [2, 3]);
      return { inputs: [{ tensor: a, lo: -3, hi: 3 }, { tensor: b }], outputs: [C.swiglu(a, b)] };
    },
  },
  composite('GELU-tanh', [2, 3], (x) => C.geluTanh(x), undefined, -3, 3),
  composite('softcap', [2, 3], (x) => C.softcap(op.mul(x, 10), 5)),
  composite('logSigmoid', [2, 3], (x) => C.logSigmoid(x), undefined, -30, 30),
  composite('softplus', [2, 3], (x) => C.softplus(x), undefined, -4, 4),
  ...(['half', 'interleaved'] as const).map((layout): CheckCase => ({
    name: `RoPE ${layout}`,
    bindings: { T: 3 },
    build: (g) => {
      const tab = C.ropeTables([0, 1, 2], C.ropeInvFreq(4, 100), 'float64');
      const x = g.input('x', F, ['T', 2, 4]);
      const cos = g.input('cos', F, ['T', 2]);
      const sin = g.input('sin', F, ['T', 2]);
      return {
        inputs: [{ tensor: x }, { tensor: cos, data: tab.cos as Float64Array, diff: false }, { tensor: sin, data: tab.sin as Float64Array, diff: false }],
        outputs: [C.rope(x, cos, sin, layout)],
      };
    },
  })),
  {
    name: 'causal GQA attention with RoPE and padding (q, k, v)',
    bindings: { T: 4 },
    build: (g) => {
      const tab = C.ropeTables([0, 1, 2, 3], C.ropeInvFreq(4, 100), 'float64');
      const q = g.input('q', F, ['T', 16]);
      const k = g.input('k', F, ['T', 8]);
      const v = g.input('v', F, ['T', 8]);
      const cos = g.input('cos', F, ['T', 2]);
      const sin = g.input('sin', F, ['T', 2]);
      const valid = g.input('valid', F, ['T']);
      const out = C.causalAttention(q, k, v, { nHeads: 4, nKvHeads: 2, headDim: 4, rope: { cos, sin, layout: 'half' }, keyValid: valid });
      return {
        inputs: [
          { tensor: q },
          { tensor: k },
          { tensor: v },
          { tensor: cos, data: tab.cos as Float64Array, diff: false },
          { tensor: sin, data: tab.sin as Float64Array, diff: false },
          { tensor: valid, data: Float64Array.from([1, 1, 0, 1]), diff: false },
        ],
        outputs: [out],
      };
    },
  },
  {
    name: 'embedding (table)',
    build: (g) => {
      const table = g.input('table', F, [5, 3]);
      const i = g.input('ids', 'int64', [4]);
      return { inputs: [{ tensor: table }, { tensor: i, data: ids([1, 4, 1, 0]) }], outputs: [C.embedding(table, i)] };
    },
  },
  {
    name: 'token logprobs (hidden and lm_head), soft-capped',
    bindings: { C: 3 },
    build: (g) => {
      const h = g.input('hidden', F, ['C', 3]);
      const w = g.input('lm_head', F, [6, 3]);
      const t = g.input('targets', 'int64', ['C']);
      return { inputs: [{ tensor: h }, { tensor: w }, { tensor: t, data: ids([5, 0, 5]) }], outputs: [C.tokenLogprobs(h, w, t, { softcap: 3 })] };
    },
  },
];

describe('tier 1: composites vs central differences (float64, ORT)', () => {
  it.each(gradCases.map((c) => [c.name, c] as const))('%s', async (_n, c) => {
    const r = await gradcheck(rt, c);
    expect(r.entries).toBeGreaterThan(0);
    expect(r.worst, r.worstAt).toBeLessThanOrEqual(1);
  });
});
