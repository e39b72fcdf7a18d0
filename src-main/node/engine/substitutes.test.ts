// Ops a provider lacks (common/engine/substitutes.ts, node/engine/op-probe.ts), on the CPU: the op listing covers
// every op type of the training graphs, and an engine told that ops are missing lowers its graphs without them and
// computes the same log-probs and LoRA gradients as one that is not.
import { describe, expect, it } from 'vitest';
import { Rng } from '../../common/engine/rng.ts';
import { SUBSTITUTABLE, substituteOps } from '../../common/engine/substitutes.ts';
import { GraphError } from '../../common/engine/ir.ts';
import { maxAbsDiff, maxRelDiff, probeEngine } from './device.ts';
import type { Engine } from './engine.ts';
import { opTypeNodes, probeOps, trainingGraphs } from './op-probe.ts';

const BIND = { T: 16 };
/** 'Gemm(f32,f32)' → 'Gemm': the op type of an op-probe variant. */
const typeOf = (variant: string): string => variant.replace(/\(.*$/, '');
/** Every op type substitutes.ts can replace that the training graphs use. */
const DECLARED = ['LogSoftmax', 'Softmax', 'Sigmoid', 'Neg', 'Reciprocal', 'Gemm'];

const engine = (missingOps: readonly string[]): Engine => probeEngine('cpu', missingOps);

async function step(e: Engine): Promise<{ logp: Float64Array; next: Float32Array; grads: Float32Array[] }> {
  const adapter = e.newAdapter({ r: 4, alpha: 8 }, 3);
  const rng = new Rng(11);
  for (const p of adapter.pairs) rng.fork(p.baseKey).fillNormal(p.b, 0.05);
  const tokens = Array.from({ length: 13 }, (_, i) => (i * 37 + 5) % e.config.vocabSize);
  const logp = await e.logprobs(tokens, { adapter, start: 1 });
  const g = await e.driver.grad(tokens, 1, adapter, (lp) => lp.map((_, i) => (i % 3) - 1));
  // The logits graph (sampling) is the one that reads LogSoftmax.
  const next = (await e.driver.nextLogprobs(tokens, adapter)) as Float32Array;
  return { logp, next, grads: g.grads.flatMap((p) => [p.a as Float32Array, p.b as Float32Array]) };
}

describe('ops a provider lacks', () => {
  it('the op probe lists every ONNX op type of the training graphs, and the CPU runs them all', async () => {
    const p = await probeOps('cpu');
    const types = p.checked.map((c) => typeOf(c.opType));
    for (const t of ['Gemm', 'MatMul', 'LogSoftmax', 'Softmax', 'ReduceSum', 'com.microsoft.MatMulNBits']) expect(types).toContain(t);
    expect(p.missing).toEqual([]);
    expect(p.checked.every((c) => c.ok && c.error === null)).toBe(true);
  }, 60_000);

  it('graphs lowered with ops declared missing contain none of them', () => {
    const missing = new Set(DECLARED);
    const before = new Set([...opTypeNodes(trainingGraphs()).keys()].map(typeOf));
    for (const d of DECLARED) expect(before).toContain(d);
    const after = new Set([...opTypeNodes(trainingGraphs().map((g) => substituteOps(g, missing, BIND))).keys()].map(typeOf));
    for (const d of DECLARED) expect(after).not.toContain(d);
    expect(after).toContain('MatMul');
  });

  it('an engine told those ops are missing computes the same log-probs (scored and next-token) and LoRA gradients', async () => {
    const plain = engine([]);
    const subst = engine(DECLARED);
    try {
      const want = await step(plain);
      const got = await step(subst);
      const lp = Math.max(maxAbsDiff(got.logp, want.logp), maxAbsDiff(got.next, want.next));
      const gr = maxRelDiff(got.grads, want.grads);
      console.log(`with ${DECLARED.join(', ')} replaced: max |Δlogp| ${lp.toExponential(2)}, max rel Δgrad ${gr.toExponential(2)}`);
      expect(lp).toBeLessThan(1e-5);
      expect(gr).toBeLessThan(1e-4);
      expect(want.grads.some((t) => t.some((x) => x !== 0))).toBe(true);
    } finally {
      await plain.close();
      await subst.close();
    }
  }, 60_000);

  it('a missing op with no composition, or whose composition needs a missing op, is an error naming it', () => {
    const [layer] = trainingGraphs();
    expect(SUBSTITUTABLE).not.toContain('Sqrt');
    expect(() => substituteOps(layer!, new Set(['Sqrt']), BIND)).toThrow(GraphError);
    expect(() => substituteOps(layer!, new Set(['Sqrt']), BIND)).toThrow(/lacks ONNX op Sqrt and there is no composition/);
    expect(() => substituteOps(layer!, new Set(['Softmax', 'Exp']), BIND)).toThrow(/lacks ONNX op Softmax, and its composition needs Exp/);
    // One variant: the layer's MatMul on two f32 inputs, named as the probe names it.
    expect(() => substituteOps(layer!, new Set(['MatMul(f32,f32)']), BIND)).toThrow(/lacks ONNX op MatMul\(f32,f32\) and there is no composition/);
  });
});
