import { afterAll, describe, expect, it } from 'vitest';
import onnxProto from 'onnx-proto';
import { Graph, GraphError } from '../../common/engine/ir.ts';
import * as op from '../../common/engine/ops.ts';
import { IR_VERSION, OPSET, toOnnx } from './onnx.ts';
import { Runtime } from './runtime.ts';

const { onnx } = onnxProto;
const rt = new Runtime({ intraOpThreads: 1 });
afterAll(() => rt.dispose());

// A plain view of the decoded proto (protobufjs types every field as optional).
function decode(bytes: Uint8Array) {
  const m = onnx.ModelProto.decode(bytes);
  const g = m.graph!;
  return {
    irVersion: Number(m.irVersion),
    opsets: m.opsetImport.map((o) => [o.domain ?? '', Number(o.version)]),
    inputs: (g.input ?? []).map((i) => ({ name: i.name ?? '', dims: (i.type?.tensorType?.shape?.dim ?? []).map((d) => Number(d.dimValue)) })),
    initializers: (g.initializer ?? []).map((i) => ({ name: i.name ?? '', raw: Uint8Array.from(i.rawData ?? []) })),
    nodes: (g.node ?? []).map((n) => ({ opType: n.opType ?? '', input: n.input ?? [] })),
  };
}

describe('ONNX emission', () => {
  it('writes IR 8 / opset 18, keeps weights as inputs and binds Reshape targets per bucket', () => {
    const g = new Graph('heads');
    const x = g.input('x', 'float32', ['T', 8]);
    const w = g.input('w', 'float32', [8, 8]);
    g.output('y', op.reshape(op.gemm(x, w, { transB: true }), ['T', 2, 4]));
    for (const T of [3, 16]) {
      const m = decode(toOnnx(g, { bindings: { T } }));
      expect(m.irVersion).toBe(IR_VERSION);
      expect(m.opsets).toEqual([['', OPSET]]);
      expect(m.inputs.map((i) => i.name)).toEqual(['x', 'w']);
      expect(m.initializers.map((i) => i.name)).not.toContain('w');
      const reshape = m.nodes.find((n) => n.opType === 'Reshape')!;
      const shapeInit = m.initializers.find((i) => i.name === reshape.input[1])!;
      expect(Array.from(new BigInt64Array(shapeInit.raw.buffer), Number)).toEqual([T, 2, 4]);
      expect(m.inputs[0]!.dims).toEqual([T, 8]);
    }
  });

  it('refuses an unbound symbol, naming it', () => {
    const g = new Graph();
    g.output('y', op.exp(g.input('x', 'float32', ['T'])));
    expect(() => toOnnx(g, {})).toThrow(GraphError);
    expect(() => toOnnx(g, { bindings: { S: 1 } })).toThrow(/symbol 'T' is not bound/);
  });

  it('emits an input passed straight through, a constant output and one value under two output names', async () => {
    const g = new Graph('aliases');
    const x = g.input('x', 'float64', [2]);
    const y = op.mul(x, 3);
    g.output('same_as_x', x);
    g.output('y', y);
    g.output('y_again', y);
    g.output('c', g.constant('float64', [2], [5, 6]));
    const out = await rt.run(g, {}, { x: new Float64Array([1, 2]) });
    expect(Array.from(out['same_as_x']!.data as Float64Array)).toEqual([1, 2]);
    expect(Array.from(out['y']!.data as Float64Array)).toEqual([3, 6]);
    expect(Array.from(out['y_again']!.data as Float64Array)).toEqual([3, 6]);
    expect(Array.from(out['c']!.data as Float64Array)).toEqual([5, 6]);
  });

  it('keeps generated value names apart from user names that look like them', async () => {
    const g = new Graph('names');
    const x = g.input('v1', 'float64', [2]); // the name a generated value could take
    const a = op.exp(x);
    const y = op.mul(a, 2); // the scalar 2 is value #5, whose generated name would be 'v5'
    g.output('v5', y);
    g.output('k0_Mul', a);
    const out = await rt.run(g, {}, { v1: new Float64Array([0, 1]) });
    const v5 = out['v5']!.data as Float64Array;
    expect(v5[0]).toBe(2);
    expect(v5[1]).toBeCloseTo(2 * Math.E, 14);
    expect((out['k0_Mul']!.data as Float64Array)[1]).toBeCloseTo(Math.E, 14);
  });

  it('drops nodes no output needs, and inputs only they read', () => {
    const g = new Graph();
    const x = g.input('x', 'float32', [2]);
    const unused = g.input('unused', 'float32', [2]);
    op.exp(unused);
    g.output('y', op.neg(x));
    const m = decode(toOnnx(g));
    expect(m.nodes.map((n) => n.opType)).toEqual(['Neg']);
    expect(m.inputs.map((i) => i.name)).toEqual(['x']);
  });

  it('computes Erf in float32 inside a float64 graph (ORT has no float64 Erf) and casts back', async () => {
    const g = new Graph('erf64');
    g.output('y', op.erf(g.input('x', 'float64', [3])));
    const m = decode(toOnnx(g));
    expect(m.nodes.map((n) => n.opType)).toEqual(['Cast', 'Erf', 'Cast']);
    const out = await rt.run(g, {}, { x: new Float64Array([-1, 0, 0.5]) });
    expect(out['y']!.data).toBeInstanceOf(Float64Array);
    // erf(0.5) = 0.5204998778130465 (Abramowitz & Stegun table 7.1); float32 precision here.
    expect(Math.abs((out['y']!.data as Float64Array)[2]! - 0.5204998778130465)).toBeLessThan(1e-7);
  });
});
