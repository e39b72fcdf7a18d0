// The vocabulary-tiled head (common/engine/head.ts, llamaHeadGraph with tiles): its log p and ∂log p/∂h equal the
// untiled head's, in float64 against the autodiff's symbolic head over an f32 lm_head cut into uneven tiles, and in
// float32 over a block-quantized lm_head of two MatMulNBits parts against the untiled quantized head.
import { afterAll, expect, it } from 'vitest';
import { Rng } from '../../common/engine/rng.ts';
import { llamaHeadGraph, parseLlamaConfig } from '../../common/engine/families/llama.ts';
import { headTileName, headTileRanges } from '../../common/engine/head.ts';
import { QUANT_CHUNK_VALUES, dequantizeRows, quantFeeds, quantParts, quantize } from '../../common/engine/quant.ts';
import { type Feed, Runtime } from './runtime.ts';

const rt = new Runtime({ intraOpThreads: 1, optimization: 'basic' });
afterAll(() => rt.dispose());

const maxAbs = (a: ArrayLike<number>): number => Array.from(a, Math.abs).reduce((m, v) => Math.max(m, v), 0);
const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
};

it('an f32 lm_head in uneven tiles gives the untiled log p and the symbolic ∂log p/∂h (float64)', async () => {
  const H = 24;
  const V = 300;
  const c = parseLlamaConfig({ architectures: ['Qwen2ForCausalLM'], vocab_size: V, hidden_size: H, intermediate_size: 32, num_hidden_layers: 1, num_attention_heads: 2, rms_norm_eps: 1e-6 });
  const rng = new Rng(21);
  const T = 6;
  const W = rng.fillNormal(new Float64Array(V * H), 2); // large logits: the running max moves from tile to tile
  const targets = [0, 299, 17, 17, 150, 3];
  const tileValues = 70 * H; // tiles of 70, 70, 70, 70 and 20 rows
  const ranges = headTileRanges(V, H, tileValues);
  expect(ranges.map(([a, b]) => b - a)).toEqual([70, 70, 70, 70, 20]);
  const rows = new Float64Array(T * H);
  targets.forEach((t, i) => rows.set(W.subarray(t * H, (t + 1) * H), i * H));
  const feeds: Record<string, Feed> = { h: rng.fillNormal(new Float64Array(T * H), 1), norm: rng.fillNormal(new Float64Array(H), 0.1, 1), lm_head: W, targets, 'lm_head.rows': rows };
  ranges.forEach(([r0, r1], k) => (feeds[headTileName(k)] = W.subarray(r0 * H, r1 * H)));

  const sym = await rt.run(llamaHeadGraph(c, 'float64', 'symbolic'), { T }, feeds);
  const tiled = await rt.run(llamaHeadGraph(c, 'float64', 'fused', null, { tileValues }), { T }, feeds);
  const plain = await rt.run(llamaHeadGraph(c, 'float64', 'none'), { T }, feeds);
  const tiledPlain = await rt.run(llamaHeadGraph(c, 'float64', 'none', null, { tileValues }), { T }, feeds);
  const lp = sym['logp']!.data as Float64Array;
  expect(Math.min(...lp)).toBeLessThan(-10); // the logits span tens of nats
  expect(maxAbsDiff(tiled['logp']!.data as Float64Array, lp)).toBeLessThan(1e-12);
  expect(maxAbsDiff(tiledPlain['logp']!.data as Float64Array, plain['logp']!.data as Float64Array)).toBeLessThan(1e-12);
  const d = sym['dlogp_dh']!.data as Float64Array;
  expect(maxAbs(d)).toBeGreaterThan(1e-2);
  expect(maxAbsDiff(tiled['dlogp_dh']!.data as Float64Array, d)).toBeLessThan(1e-12 * maxAbs(d));
});

it('a block-quantized lm_head of two MatMulNBits parts, tiled, gives the untiled quantized head (float32)', async () => {
  const H = 64;
  const V = 140_000; // 8.96M values: two parts
  expect(quantParts(V, H)).toHaveLength(2);
  expect(V * H).toBeGreaterThan(QUANT_CHUNK_VALUES);
  const c = parseLlamaConfig({ architectures: ['LlamaForCausalLM'], vocab_size: V, hidden_size: H, intermediate_size: 32, num_hidden_layers: 1, num_attention_heads: 2, rms_norm_eps: 1e-5 });
  const rng = new Rng(5);
  const T = 4;
  const spec = { bits: 4, zeroPoints: true } as const;
  const q = quantize(rng.fillNormal(new Float32Array(V * H), 0.3), V, H, spec);
  const targets = [1, 139_999, 131_073, 70_000]; // both parts
  const rows = new Float32Array(T * H);
  targets.forEach((t, i) => dequantizeRows(q, t, t + 1, rows.subarray(i * H, (i + 1) * H)));
  const feeds: Record<string, Feed> = { h: rng.fillNormal(new Float32Array(T * H), 1), norm: rng.fillNormal(new Float32Array(H), 0.1, 1), targets, 'lm_head.rows': rows, ...quantFeeds('lm_head', q) };
  const rt32 = new Runtime({ intraOpThreads: 1 });
  try {
    const ref = await rt32.run(llamaHeadGraph(c, 'float32', 'fused', spec), { T }, feeds);
    const tiled = await rt32.run(llamaHeadGraph(c, 'float32', 'fused', spec, {}), { T }, feeds);
    const lp = ref['logp']!.data as Float32Array;
    expect(maxAbsDiff(tiled['logp']!.data as Float32Array, lp)).toBeLessThan(1e-5 * maxAbs(lp));
    const d = ref['dlogp_dh']!.data as Float32Array;
    expect(maxAbs(d)).toBeGreaterThan(1e-3);
    expect(maxAbsDiff(tiled['dlogp_dh']!.data as Float32Array, d)).toBeLessThan(1e-4 * maxAbs(d));
  } finally {
    await rt32.dispose();
  }
});
