// Tier-1 gradient check (tinygrad's gradcheck, torch.autograd.gradcheck): both the function and its symbolic
// gradient are emitted and run in ONNX Runtime in float64, and every analytic gradient entry is compared with a
// central difference (f(x+ε) − f(x−ε)) / 2ε of the scalar L = Σ out ⊙ R, R a fixed random cotangent.

import { Graph, type Shape, type Tensor, bindShape, isFloat, type Bindings } from '../../../common/engine/ir.ts';
import * as op from '../../../common/engine/ops.ts';
import { grad } from '../../../common/engine/autodiff.ts';
import { Rng } from '../../../common/engine/rng.ts';
import type { HostArray, Runtime } from '../runtime.ts';

export interface CheckInput {
  tensor: Tensor;
  /** Fixed data (indices, masks, inputs kept inside a domain); random uniform in [lo, hi) otherwise. */
  data?: HostArray;
  lo?: number;
  hi?: number;
  /** Differentiate toward it (default: every float input). */
  diff?: boolean;
}

export interface CheckCase {
  name: string;
  bindings?: Bindings;
  eps?: number;
  rtol?: number;
  atol?: number;
  /** Build the function in `g`: declare inputs, return them and the output(s) to check. */
  build(g: Graph): { inputs: CheckInput[]; outputs: Tensor[] };
}

export interface CheckResult {
  name: string;
  /** Max over entries of |analytic − numeric| / (atol + rtol·|numeric|); ≤ 1 passes. */
  worst: number;
  worstAt: string;
  maxAbsErr: number;
  entries: number;
}

export async function gradcheck(rt: Runtime, c: CheckCase, seed = 1): Promise<CheckResult> {
  const eps = c.eps ?? 1e-6;
  const rtol = c.rtol ?? 1e-6;
  const atol = c.atol ?? 1e-8;
  const b = c.bindings ?? {};
  const rng = new Rng(seed);
  const g = new Graph(`check_${c.name}`);
  const { inputs, outputs } = c.build(g);
  let loss: Tensor | null = null;
  const cotangents: { name: string; shape: Shape }[] = [];
  outputs.forEach((o, k) => {
    const name = `__r${k}`;
    const r = g.input(name, o.dtype, o.shape);
    cotangents.push({ name, shape: o.shape });
    const term = op.reduceSum(op.mul(o, r), [], false);
    loss = loss === null ? term : op.add(loss, term);
  });
  const L = loss as unknown as Tensor;
  const diff = inputs.filter((i) => (i.diff ?? isFloat(i.tensor.dtype)) && isFloat(i.tensor.dtype));
  const grads = grad([L], diff.map((i) => i.tensor));
  const fGraph = g.extract(`f_${c.name}`, [{ name: 'loss', tensor: L }]);
  g.output('loss', L);
  grads.forEach((t, k) => g.output(`d_${k}`, t));

  const feeds: Record<string, HostArray> = {};
  for (const i of inputs) {
    const name = i.tensor.node.attrs['name'] as string;
    if (i.data !== undefined) {
      feeds[name] = i.data;
      continue;
    }
    const n = bindShape(i.tensor.shape, b).reduce((p, d) => p * d, 1);
    const lo = i.lo ?? -1;
    const hi = i.hi ?? 1;
    const arr = new Float64Array(n);
    for (let j = 0; j < n; j++) arr[j] = lo + (hi - lo) * rng.uniform();
    feeds[name] = i.tensor.dtype === 'float32' ? Float32Array.from(arr) : arr;
  }
  for (const r of cotangents) {
    const n = bindShape(r.shape, b).reduce((p, d) => p * d, 1);
    feeds[r.name] = Float64Array.from({ length: n }, () => rng.uniform() * 2 - 1);
  }

  const full = await rt.compile(g, b);
  const res = await full.run(feeds);
  const f = await rt.compile(fGraph, b);
  const lossAt = async (): Promise<number> => Number((await f.run(feeds))['loss']!.data[0]);

  let worst = 0;
  let worstAt = '';
  let maxAbsErr = 0;
  let entries = 0;
  for (let k = 0; k < diff.length; k++) {
    const name = diff[k]!.tensor.node.attrs['name'] as string;
    const x = feeds[name] as Float64Array;
    const analytic = res[`d_${k}`]!.data as Float64Array;
    if (analytic.length !== x.length) throw new Error(`${c.name}: gradient of '${name}' has ${analytic.length} entries, input ${x.length}`);
    for (let j = 0; j < x.length; j++) {
      const x0 = x[j]!;
      x[j] = x0 + eps;
      const up = await lossAt();
      x[j] = x0 - eps;
      const down = await lossAt();
      x[j] = x0;
      const numeric = (up - down) / (2 * eps);
      const err = Math.abs(analytic[j]! - numeric);
      const score = err / (atol + rtol * Math.abs(numeric));
      entries++;
      maxAbsErr = Math.max(maxAbsErr, err);
      if (!(score <= worst)) {
        worst = Number.isNaN(score) ? Infinity : score;
        worstAt = `${name}[${j}]: analytic ${analytic[j]} numeric ${numeric}`;
      }
    }
  }
  await rt.dispose(g);
  await rt.dispose(fGraph);
  return { name: c.name, worst, worstAt, maxAbsErr, entries };
}

/** int64 indices as a BigInt64Array. */
export function ids(values: readonly number[]): BigInt64Array {
  return BigInt64Array.from(values.map((v) => BigInt(v)));
}
