import { afterEach, describe, expect, it } from 'vitest';
import { Graph, GraphError, dimDiv, dimEq, dimMul } from './ir.ts';
import * as op from './ops.ts';
import { grad, vjpSplit } from './autodiff.ts';

afterEach(() => {
  op.OPS.delete('NoRule');
  op.OPS.delete('TwoGrads');
  op.OPS.delete('BadShape');
});

const sameAsInput = (rule?: op.GradRule): op.OpDef => ({
  infer: (inputs) => [{ dtype: inputs[0]!.dtype, shape: inputs[0]!.shape }],
  emit: () => ({ opType: 'Identity', inputs: [0], attrs: [] }),
  ...(rule === undefined ? {} : { grad: rule }),
});

describe('the reverse-mode walker', () => {
  it('throws naming the op when a rule is missing', () => {
    op.registerOp('NoRule', sameAsInput());
    const g = new Graph();
    const x = g.input('x', 'float64', [3]);
    const y = op.apply('NoRule', [op.exp(x)])[0]!;
    expect(() => grad([op.reduceSum(y)], [x])).toThrow(/NoRule: no gradient rule/);
  });

  it('throws naming the op when a rule returns the wrong number of gradients', () => {
    op.registerOp('TwoGrads', sameAsInput(({ gOut }) => [gOut[0]!, gOut[0]!]));
    const g = new Graph();
    const x = g.input('x', 'float64', [3]);
    const y = op.apply('TwoGrads', [x])[0]!;
    expect(() => grad([op.reduceSum(y)], [x])).toThrow(GraphError);
    expect(() => grad([op.reduceSum(y)], [x])).toThrow(/TwoGrads: gradient rule returned 2 gradients for 1 inputs/);
  });

  it('throws naming the op when a rule returns a gradient of the wrong shape', () => {
    op.registerOp('BadShape', sameAsInput(({ gOut }) => [op.reduceSum(gOut[0]!, [0], true)]));
    const g = new Graph();
    const x = g.input('x', 'float64', [3]);
    expect(() => grad([op.reduceSum(op.apply('BadShape', [x])[0]!)], [x])).toThrow(/BadShape: gradient rule gave float64\[1\] for input float64\[3\]/);
  });

  it('does no gradient work for frozen weights or branches that do not reach the chosen tensors', () => {
    const g = new Graph();
    const x = g.input('x', 'float32', ['T', 8]);
    const w = g.input('w', 'float32', [4, 8]); // frozen
    const a = g.input('a', 'float32', [2, 8]); // LoRA A
    const b = g.input('b', 'float32', [4, 2]); // LoRA B
    const side = op.exp(op.reduceSum(w, [0, 1], false)); // depends only on frozen w
    const y = op.add(op.gemm(x, w, { transB: true }), op.gemm(op.gemm(x, a, { transB: true }), b, { transB: true }));
    const loss = op.add(op.reduceSum(op.mul(y, y), [], false), side);
    const before = g.nodes.length;
    const [da, db] = grad([loss], [a, b]);
    expect(da!.shape).toEqual([2, 8]);
    expect(db!.shape).toEqual([4, 2]);
    const added = g.nodes.slice(before);
    // No gradient node reads the frozen-only branch.
    expect(added.some((n) => n.inputs.includes(side))).toBe(false);
    const gemmsReadingW = added.filter((n) => n.op === 'Gemm' && n.inputs.includes(w));
    expect(gemmsReadingW).toEqual([]); // dx is not asked for, so nothing multiplies by W
  });

  it('stops gradients at StopGradient', () => {
    const g = new Graph();
    const x = g.input('x', 'float64', [2]);
    const y = op.mul(x, op.stopGradient(x));
    const [dx] = grad([op.reduceSum(y, [], false)], [x]);
    // d/dx (x · sg(x)) = sg(x): the cotangent is the seed times the stopped value, with no second term.
    expect(dx!.node.op).not.toBe('Add');
  });

  it('gives zeros for a tensor the output does not depend on, and refuses int tensors', () => {
    const g = new Graph();
    const x = g.input('x', 'float64', [2]);
    const z = g.input('z', 'float64', [3]);
    const i = g.input('i', 'int64', [2]);
    const [dz] = grad([op.reduceSum(op.exp(x), [], false)], [z]);
    expect(dz!.node.op).toBe('Expand');
    expect(dz!.shape).toEqual([3]);
    expect(() => grad([op.reduceSum(x)], [i])).toThrow(/cannot differentiate toward int64/);
  });

  it('vjpSplit names cotangents, gradients and residuals, and keeps frozen inputs as backward inputs', () => {
    const g = new Graph('layer');
    const x = g.input('x', 'float32', ['T', 8]);
    const w = g.input('w', 'float32', [8, 8]);
    const a = g.input('a', 'float32', [2, 8]);
    g.output('y', op.sigmoid(op.add(op.gemm(x, w, { transB: true }), op.gemm(op.gemm(x, a, { transB: true }), g.input('b', 'float32', [8, 2]), { transB: true }))));
    const s = vjpSplit(g, { outputs: ['y'], wrt: ['x', 'a'] });
    expect(s.cotangents).toEqual({ y: 'd_y' });
    expect(s.gradients).toEqual({ x: 'd_x', a: 'd_a' });
    expect(s.residuals.length).toBeGreaterThan(0);
    expect(s.forward.outputs.map((o) => o.name)).toEqual(['y', ...s.residuals.filter((r) => r !== 'y')]);
    expect(s.residuals).toContain('y'); // sigmoid's rule reads its output: stored once, under its own name
    const bwdInputs = s.backward.inputs.map((t) => t.node.attrs['name']);
    expect(bwdInputs).toContain('d_y');
    expect(bwdInputs).toContain('w'); // read directly, never routed through the forward as a residual
    expect(s.backward.outputs.map((o) => o.name)).toEqual(['d_x', 'd_a']);
    const r = vjpSplit(g, { outputs: ['y'], wrt: ['x', 'a'], recompute: true });
    expect(r.residuals).toEqual([]);
    expect(r.backward.inputs.map((t) => t.node.attrs['name']).sort()).toEqual(['a', 'b', 'd_y', 'w', 'x']);
  });
});

describe('symbolic dims and shape errors', () => {
  it('keeps products canonical and divides exactly', () => {
    expect(dimMul('T', 2)).toBe('2*T');
    expect(dimEq('H*T', 'T*H')).toBe(true);
    expect(dimDiv('4*T', 'T')).toBe(4);
    expect(dimDiv('T', 2)).toBeUndefined();
    const g = new Graph();
    const x = g.input('x', 'float32', ['T', 4, 8]);
    expect(op.reshape(x, [-1, 8]).shape).toEqual(['4*T', 8]);
    expect(op.reshape(op.reshape(x, [-1, 8]), ['T', 32]).shape).toEqual(['T', 32]);
  });

  it('names the op and the shapes on a mismatch', () => {
    const g = new Graph();
    const x = g.input('x', 'float32', ['T', 4]);
    const y = g.input('y', 'float32', ['S', 4]);
    expect(() => op.add(x, y)).toThrow(/Add: shapes \[T, 4\] and \[S, 4\] do not broadcast/);
    expect(() => op.gemm(x, g.input('w', 'float32', [3, 5]), { transB: true })).toThrow(/Gemm: inner dims differ/);
    expect(() => op.reshape(x, [3, 5])).toThrow(/Reshape: \[T, 4\] has 4\*T elements/);
    expect(() => op.matmul(x, g.input('d', 'float64', [4, 2]))).toThrow(/MatMul: dtypes differ/);
    expect(() => op.apply('Nope', [x])).toThrow(/Nope: unknown op/);
    expect(() => g.input('bad', 'float32', [2.5])).toThrow(/input 'bad' has a bad dim 2.5/);
    expect(() => g.input('bad2', 'float32', ['T+1'])).toThrow(/bad symbolic dim 'T\+1'/);
    expect(() => g.input('x', 'float32', [1])).toThrow(/already has an input 'x'/);
  });
});
