import { afterAll, describe, expect, it } from 'vitest';
import { Graph } from '../../common/engine/ir.ts';
import * as op from '../../common/engine/ops.ts';
import { grad } from '../../common/engine/autodiff.ts';
import { ProviderUnavailableError, Runtime } from './runtime.ts';
import { BadInputError } from '../../common/errors.ts';

const rt = new Runtime();
afterAll(() => rt.dispose());

function lossGraph(): Graph {
  const g = new Graph('gemm_loss');
  const x = g.input('x', 'float64', ['T', 3]);
  const w = g.input('w', 'float64', [2, 3]);
  const y = op.gemm(x, w, { transB: true });
  g.output('y', y);
  const loss = op.reduceSum(op.mul(y, y), [0, 1], false);
  g.output('loss', loss);
  const [dx, dw] = grad([loss], [x, w]);
  g.output('dx', dx!);
  g.output('dw', dw!);
  return g;
}

describe('Runtime', () => {
  it('runs a graph and its gradient, matching a hand computation', async () => {
    const g = lossGraph();
    const x = new Float64Array([1, 2, 3, 4, 5, 6]);
    const w = new Float64Array([1, 0, 0, 0, 1, 0]);
    const out = await rt.run(g, { T: 2 }, { x, w });
    // y = x·wᵀ picks columns 0 and 1: [[1,2],[4,5]]; loss = Σy²; dx = 2y·w; dw = 2yᵀ·x
    const arr = (name: string): number[] => Array.from(out[name]!.data as Float64Array);
    expect(arr('y')).toEqual([1, 2, 4, 5]);
    expect(out['loss']!.data[0]).toBe(46);
    expect(arr('dx')).toEqual([2, 4, 0, 8, 10, 0]);
    expect(arr('dw')).toEqual([34, 44, 54, 44, 58, 72]);
    expect(out['dx']!.dims).toEqual([2, 3]);
  });

  it('caches one session per graph and bucket, and binds each bucket', async () => {
    const local = new Runtime({ intraOpThreads: 1 });
    const g = lossGraph();
    const a = await local.compile(g, { T: 2 });
    expect(await local.compile(g, { T: 2 })).toBe(a);
    const b = await local.compile(g, { T: 1 });
    expect(b).not.toBe(a);
    const out = await b.run({ x: [1, 1, 1], w: new Float64Array(6).fill(1) });
    expect(out['loss']!.data[0]).toBe(18);
    expect(local.size).toBe(2);
    await local.dispose(g);
    expect(local.size).toBe(0);
    await expect(a.run({ x: new Float64Array(6), w: new Float64Array(6) })).rejects.toThrow(/disposed/);
  });

  it('refuses missing, mis-sized and mis-typed feeds with a named error', async () => {
    const g = lossGraph();
    await expect(rt.run(g, { T: 2 }, { x: new Float64Array(6) })).rejects.toThrow(BadInputError);
    await expect(rt.run(g, { T: 2 }, { x: new Float64Array(5), w: new Float64Array(6) })).rejects.toThrow(/needs 6 float64 values/);
    await expect(rt.run(g, { T: 2 }, { x: new Float32Array(6), w: new Float64Array(6) })).rejects.toThrow(/is float64, got a Float32Array/);
  });

  it('refuses an unbound symbol naming it', async () => {
    await expect(rt.run(lossGraph(), {}, {})).rejects.toThrow(/symbol 'T' is not bound/);
  });

  // This machine has no GPU: each non-CPU provider must fail with a clear, named error, not fall back silently.
  it.each(['cuda', 'dml', 'webgpu'] as const)('provider %s fails with ProviderUnavailableError here', async (p) => {
    const r = new Runtime({ provider: p });
    const err = await r.compile(lossGraph(), { T: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderUnavailableError);
    expect((err as ProviderUnavailableError).provider).toBe(p);
    expect((err as Error).message).toMatch(p === 'cuda' ? /ONNXRUNTIME_NODE_INSTALL=cuda12/ : p === 'dml' ? /Windows/ : /WebGPU adapter/);
    await r.dispose();
  });
});
