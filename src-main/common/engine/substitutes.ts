// Compositions for ONNX op types an execution provider lacks. The provider's op probe (node/engine/device.ts
// probeOps) lists the op types the training graphs lower to that fail on it or would run on the CPU; the runtime then
// lowers each graph through substituteOps, which rebuilds every node that would emit a missing op type from supported
// primitives. The result is the same function, so the gradient rules of the primitives still hold. A missing op with
// no composition here (or one whose composition needs another missing op) is an error naming it.
import { type Bindings, type Graph, type Node, type Tensor, GraphError } from './ir.ts';
import * as op from './ops.ts';

interface Substitute {
  /** The ONNX op types the composition emits (it is used only when none of them is missing). */
  uses: readonly string[];
  build(node: Node, inputs: readonly Tensor[]): Tensor[];
}

function axisOf(node: Node): number {
  const a = (node.attrs['axis'] as number | undefined) ?? -1;
  return a < 0 ? a + node.inputs[0]!.rank : a;
}

/** By IR op (whose emission names the ONNX op type); one line of math each. */
const SUBSTITUTES: Readonly<Record<string, Substitute>> = {
  // log softmax(x) = (x − max x) − log Σ exp(x − max x)
  LogSoftmax: {
    uses: ['ReduceMax', 'Sub', 'Exp', 'ReduceSum', 'Log'],
    build: (n, [x]) => {
      const s = op.sub(x!, op.reduceMax(x!, [axisOf(n)], true));
      return [op.sub(s, op.log(op.reduceSum(op.exp(s), [axisOf(n)], true)))];
    },
  },
  // softmax(x) = exp(x − max x) / Σ exp(x − max x)
  Softmax: {
    uses: ['ReduceMax', 'Sub', 'Exp', 'ReduceSum', 'Div'],
    build: (n, [x]) => {
      const e = op.exp(op.sub(x!, op.reduceMax(x!, [axisOf(n)], true)));
      return [op.div(e, op.reduceSum(e, [axisOf(n)], true))];
    },
  },
  // σ(x) = 1 / (1 + exp(−x))
  Sigmoid: { uses: ['Mul', 'Exp', 'Add', 'Div'], build: (_, [x]) => [op.div(1, op.add(op.exp(op.mul(x!, -1)), 1))] },
  Neg: { uses: ['Mul'], build: (_, [x]) => [op.mul(x!, -1)] },
  Reciprocal: { uses: ['Div'], build: (_, [x]) => [op.div(1, x!)] },
  // tanh(x) = 2σ(2x) − 1
  Tanh: { uses: ['Mul', 'Exp', 'Add', 'Div', 'Sub'], build: (_, [x]) => [op.sub(op.div(2, op.add(op.exp(op.mul(x!, -2)), 1)), 1)] },
  // Gemm: alpha·op(A)·op(B) + beta·C as MatMul, Transpose, Mul and Add
  Gemm: {
    uses: ['Transpose', 'MatMul', 'Mul', 'Add'],
    build: (n, [a, b, c]) => {
      const alpha = (n.attrs['alpha'] as number | undefined) ?? 1;
      const beta = (n.attrs['beta'] as number | undefined) ?? 1;
      const A = n.attrs['transA'] ? op.transpose(a!, [1, 0]) : a!;
      const B = n.attrs['transB'] ? op.transpose(b!, [1, 0]) : b!;
      let y = op.matmul(A, B);
      if (alpha !== 1) y = op.mul(y, alpha);
      if (c !== undefined) y = op.add(y, beta === 1 ? c : op.mul(c, beta));
      return [y];
    },
  },
};

/** The ONNX op type a node emits (with the bindings of the shape bucket it is lowered for). */
export function emittedOpType(node: Node, bindings: Bindings): string {
  const e = op.opDef(node.op).emit(node, bindings);
  return e.domain === undefined || e.domain === '' ? e.opType : `${e.domain}.${e.opType}`;
}

const SHORT: Readonly<Record<string, string>> = { float32: 'f32', float64: 'f64', int64: 'i64', bool: 'bool', uint8: 'u8' };

/**
 * The op type with its input types, 'com.microsoft.MatMulNBits(f32,u8,f32,f32)': ORT registers kernels per type
 * constraint, and an optional input may have none (WebGPU's MatMulNBits has no kernel with float zero points).
 */
export function opVariant(node: Node, bindings: Bindings): string {
  return `${emittedOpType(node, bindings)}(${node.inputs.map((t) => SHORT[t.dtype]).join(',')})`;
}

/** The ONNX op types that have a composition here. */
export const SUBSTITUTABLE: readonly string[] = Object.keys(SUBSTITUTES);

/**
 * `graph` with every node that would emit a `missing` op type rebuilt from other ops (the same graph when none does).
 * Throws naming the op when it has no usable composition.
 */
export function substituteOps(graph: Graph, missing: ReadonlySet<string>, bindings: Bindings): Graph {
  // An entry names an op type (every variant) or one variant of it (opVariant).
  const hit = (n: Node): boolean => n.op !== 'Input' && n.op !== 'Constant' && (missing.has(emittedOpType(n, bindings)) || missing.has(opVariant(n, bindings)));
  if (missing.size === 0 || !graph.nodes.some(hit)) return graph;
  const { graph: g, map } = graph.clone(graph.name);
  const out = new Map<Tensor, Tensor>(); // clone's tensor → its replacement
  const resolve = (t: Tensor): Tensor => out.get(t) ?? t;
  for (const n of graph.nodes) {
    const copy = map.get(n.outputs[0]!)!.node;
    if (!hit(n)) {
      // A kept node reads replaced values: rebuild it on them (nodes come in topological order).
      if (copy.inputs.some((t) => out.has(t))) {
        const ys = op.apply(copy.op, copy.inputs.map(resolve), copy.attrs, g);
        copy.outputs.forEach((t, k) => out.set(t, ys[k]!));
      }
      continue;
    }
    const opType = missing.has(emittedOpType(n, bindings)) ? emittedOpType(n, bindings) : opVariant(n, bindings);
    const s = SUBSTITUTES[n.op];
    if (s === undefined) throw new GraphError(n.op, `the execution provider lacks ONNX op ${opType} and there is no composition for it (common/engine/substitutes.ts)`);
    const blocked = s.uses.filter((u) => missing.has(u));
    if (blocked.length > 0) throw new GraphError(n.op, `the execution provider lacks ONNX op ${opType}, and its composition needs ${blocked.join(', ')}, which it lacks too`);
    const ys = s.build(n, copy.inputs.map(resolve));
    copy.outputs.forEach((t, k) => out.set(t, ys[k]!));
  }
  // The clone's dead nodes (the replaced ones and their old consumers) are not emitted: outputs name the new values.
  const result = g.extract(graph.name, g.outputs.map((o) => ({ name: o.name, tensor: resolve(o.tensor) })));
  return result;
}
