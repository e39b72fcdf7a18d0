// The op table: for each op, its shape rule, its ONNX emission (opset 18) and its gradient rule. One entry per op;
// the op functions below (add, gemm, reshape, ...) are how graphs are built. A gradient rule returns one cotangent per
// input, or null where none flows (indices, masks) or where `needs` says nobody asked (frozen weights get no work).
// Rules are written with the same op functions, so gradients are graphs too and can be differentiated again.
// Formulas follow the ONNX operator spec (https://onnx.ai/onnx/operators/) and tinygrad's gradient.py.

import {
  type Attrs,
  type DType,
  type Dim,
  type Graph,
  type Node,
  type OutputSpec,
  type Shape,
  type Tensor,
  GraphError,
  bindDim,
  bindShape,
  dimAdd,
  dimDiv,
  dimEq,
  dimProduct,
  dimSub,
  fmtShape,
  isFloat,
  isStaticDim,
  shapeEq,
  type Bindings,
} from './ir.ts';

export interface GradCtx {
  node: Node;
  /** One cotangent per output of the node, null where none flows back. */
  gOut: readonly (Tensor | null)[];
  /** Per input: whether a gradient is wanted. A rule may return null where false. */
  needs: readonly boolean[];
}
export type GradRule = (ctx: GradCtx) => readonly (Tensor | null)[];

/** An int64/float constant input that emission adds (ONNX opset 18 takes axes, shapes, pads as inputs). */
export interface OnnxConst {
  dtype: DType;
  dims: number[];
  values: number[];
}
export interface OnnxAttr {
  name: string;
  type: 'int' | 'float' | 'ints' | 'floats' | 'string';
  value: number | number[] | string;
}
/** What one IR node becomes: inputs are node-input indices, constants, or null (an omitted optional input). */
export interface OnnxEmit {
  opType: string;
  domain?: string;
  inputs: (number | OnnxConst | null)[];
  attrs: OnnxAttr[];
  /**
   * Run the op in this dtype: emission casts its float inputs to it and its outputs back (a missing ORT kernel; or a
   * narrow float that exists only there, RoundNarrow's round trip).
   */
  computeAs?: ComputeDType;
  /**
   * Node-input indices ORT prepacks when they are constant initializers (MatMulNBits' weights): when the run names
   * such a graph input as a constant (EmitOptions.constants), emission makes it an initializer for this node only.
   */
  prepacked?: number[];
}

export interface OpDef {
  infer(inputs: readonly Tensor[], attrs: Attrs): OutputSpec[];
  emit(node: Node, bindings: Bindings): OnnxEmit;
  /** Undefined: no rule yet; the walker throws naming the op when a gradient must pass through it. */
  grad?: GradRule;
}

export const OPS = new Map<string, OpDef>();

/** Adds an op to the table (composites never need this; new primitives and tests do). */
export function registerOp(name: string, def: OpDef): void {
  OPS.set(name, def);
}

export function opDef(name: string): OpDef {
  const d = OPS.get(name);
  if (d === undefined) throw new GraphError(name, 'unknown op: it is not in the op table');
  return d;
}

/** Builds a node through the table: checks and infers the output types, then appends it to the inputs' graph. */
export function apply(op: string, inputs: readonly Tensor[], attrs: Attrs = {}, graph?: Graph): Tensor[] {
  const g = graph ?? inputs[0]?.graph;
  if (g === undefined) throw new GraphError(op, 'an op with no inputs needs its graph');
  const outs = opDef(op).infer(inputs, attrs);
  return g.addNode(op, inputs, attrs, outs).outputs;
}

export const ONNX_DTYPE: Record<DType, number> = { float32: 1, uint8: 2, int64: 7, bool: 9, float64: 11 };
/** Floats an op may compute in without being IR dtypes: nothing in a graph holds them, emission casts around them. */
export type NarrowFloat = 'float16' | 'bfloat16';
export type ComputeDType = DType | NarrowFloat;
export const ONNX_COMPUTE_DTYPE: Record<ComputeDType, number> = { ...ONNX_DTYPE, float16: 10, bfloat16: 16 };

// --- helpers -------------------------------------------------------------------------------------------------------

export type TensorLike = Tensor | number;

function lift(x: TensorLike, like: Tensor): Tensor {
  return typeof x === 'number' ? like.graph.scalar(x, like.dtype) : x;
}

function pair(a: TensorLike, b: TensorLike, op: string): [Tensor, Tensor] {
  if (typeof a === 'number' && typeof b === 'number') throw new GraphError(op, 'needs at least one tensor operand');
  const ta = typeof a === 'number' ? lift(a, b as Tensor) : a;
  const tb = typeof b === 'number' ? lift(b, ta) : b;
  return [ta, tb];
}

function normAxis(axis: number, rank: number, op: string): number {
  const a = axis < 0 ? axis + rank : axis;
  if (!Number.isInteger(a) || a < 0 || a >= rank) throw new GraphError(op, `axis ${axis} is out of range for rank ${rank}`);
  return a;
}

/** numpy broadcasting of two shapes; two different symbols, or a symbol against a number > 1, are refused. */
export function broadcastShapes(a: Shape, b: Shape, op: string): Dim[] {
  const n = Math.max(a.length, b.length);
  const out: Dim[] = [];
  for (let i = 0; i < n; i++) {
    const x = a[a.length - n + i] ?? 1;
    const y = b[b.length - n + i] ?? 1;
    if (dimEq(x, y)) out.push(x);
    else if (dimEq(x, 1)) out.push(y);
    else if (dimEq(y, 1)) out.push(x);
    else throw new GraphError(op, `shapes ${fmtShape(a)} and ${fmtShape(b)} do not broadcast (axis ${i}: ${x} vs ${y})`);
  }
  return out;
}

function sameDType(inputs: readonly Tensor[], op: string): DType {
  const d = inputs[0]!.dtype;
  for (const t of inputs) {
    if (t.dtype !== d) throw new GraphError(op, `dtypes differ: ${inputs.map((x) => x.dtype).join(', ')}`);
  }
  return d;
}

function arity(inputs: readonly Tensor[], n: number, op: string): void {
  if (inputs.length !== n) throw new GraphError(op, `takes ${n} inputs, got ${inputs.length}`);
}

function needFloat(t: Tensor, op: string): void {
  if (!isFloat(t.dtype)) throw new GraphError(op, `needs a float tensor, got ${t.dtype}`);
}

function i64(values: readonly number[], dims: number[] = [values.length]): OnnxConst {
  return { dtype: 'int64', dims, values: [...values] };
}

function scalarConst(dtype: DType, v: number): OnnxConst {
  return { dtype, dims: [], values: [v] };
}

const plain = (opType: string) => (node: Node): OnnxEmit => ({ opType, inputs: node.inputs.map((_, i) => i), attrs: [] });

/** Sums a broadcast cotangent back to `shape` (ReduceSum over broadcast axes, then Reshape). */
export function unbroadcast(g: Tensor, shape: Shape): Tensor {
  const lead = g.rank - shape.length;
  if (lead < 0) throw new GraphError('unbroadcast', `cotangent ${fmtShape(g.shape)} has lower rank than ${fmtShape(shape)}`);
  const axes: number[] = [];
  for (let i = 0; i < g.rank; i++) {
    if (i < lead) axes.push(i);
    else if (dimEq(shape[i - lead]!, 1) && !dimEq(g.shape[i]!, 1)) axes.push(i);
  }
  let r = axes.length > 0 ? reduceSum(g, axes, true) : g;
  if (!shapeEq(r.shape, shape)) r = reshape(r, shape);
  return r;
}

export function zeros(graph: Graph, dtype: DType, shape: Shape): Tensor {
  return expand(graph.scalar(0, dtype), shape);
}

export function ones(graph: Graph, dtype: DType, shape: Shape): Tensor {
  return expand(graph.scalar(1, dtype), shape);
}

export function zerosLike(t: Tensor): Tensor {
  return zeros(t.graph, t.dtype, t.shape);
}

// --- element-wise ----------------------------------------------------------------------------------------------------

function unaryDef(opType: string, grad: ((x: Tensor, y: Tensor, g: Tensor) => Tensor) | null, onnx = opType): OpDef {
  return {
    infer(inputs) {
      arity(inputs, 1, opType);
      needFloat(inputs[0]!, opType);
      return [{ dtype: inputs[0]!.dtype, shape: inputs[0]!.shape }];
    },
    emit: plain(onnx),
    grad: ({ node, gOut }) => [grad === null ? null : grad(node.inputs[0]!, node.outputs[0]!, gOut[0]!)],
  };
}

registerOp('Neg', unaryDef('Neg', (_x, _y, g) => neg(g)));
registerOp('Sqrt', unaryDef('Sqrt', (_x, y, g) => div(g, mul(y, 2))));
registerOp('Reciprocal', unaryDef('Reciprocal', (_x, y, g) => neg(mul(g, mul(y, y)))));
registerOp('Exp', unaryDef('Exp', (_x, y, g) => mul(g, y)));
registerOp('Log', unaryDef('Log', (x, _y, g) => div(g, x)));
registerOp('Sigmoid', unaryDef('Sigmoid', (_x, y, g) => mul(g, mul(y, sub(1, y)))));
registerOp('Tanh', unaryDef('Tanh', (_x, y, g) => mul(g, sub(1, mul(y, y)))));
// d/dx erf(x) = 2/sqrt(pi) * exp(-x^2). ORT 1.30 has no float64 Erf kernel on CPU, so a float64 graph computes Erf in
// float32 (about 1e-7 relative); its gradient stays float64.
registerOp('Erf', {
  ...unaryDef('Erf', (x, _y, g) => mul(g, mul(exp(neg(mul(x, x))), 2 / Math.sqrt(Math.PI)))),
  emit: (node) => ({ opType: 'Erf', inputs: [0], attrs: [], ...(node.inputs[0]!.dtype === 'float64' ? { computeAs: 'float32' as const } : {}) }),
});
registerOp('Sin', unaryDef('Sin', (x, _y, g) => mul(g, cos(x))));
registerOp('Cos', unaryDef('Cos', (x, _y, g) => neg(mul(g, sin(x)))));
registerOp('Abs', unaryDef('Abs', (x, _y, g) => mul(g, sign(x))));
registerOp('Sign', unaryDef('Sign', null));
// Round half to even (ONNX Round; x86's _mm256_round_ps(_MM_ROUND_NEAREST) and ggml's nearest_int round the same way).
// Zero gradient almost everywhere: training passes through it with StraightThrough.
registerOp('Round', unaryDef('Round', null));
// x rounded to the nearest float16 or bfloat16 and back (ONNX Cast, round half to even both ways). Like Round, no gradient.
registerOp('RoundNarrow', {
  ...unaryDef('RoundNarrow', null),
  emit: (node) => ({ opType: 'Identity', inputs: [0], attrs: [], computeAs: node.attrs['to'] as NarrowFloat }),
});
// The value of its second input with the gradient of its first: a straight-through estimator (Bengio et al. 2013,
// arXiv:1308.3432), y = q(x) forward, dy/dx = 1 backward.
registerOp('StraightThrough', {
  infer(inputs) {
    arity(inputs, 2, 'StraightThrough');
    const [x, q] = inputs as [Tensor, Tensor];
    sameDType(inputs, 'StraightThrough');
    if (!shapeEq(x.shape, q.shape)) throw new GraphError('StraightThrough', `shapes ${fmtShape(x.shape)} and ${fmtShape(q.shape)} differ`);
    return [{ dtype: q.dtype, shape: q.shape }];
  },
  emit: () => ({ opType: 'Identity', inputs: [1], attrs: [] }),
  grad: ({ gOut }) => [gOut[0]!, null],
});
registerOp('Floor', unaryDef('Floor', null));
// Identity in the graph, a wall for gradients (the trajectory-drift scale of MIS-PO, baselines).
registerOp('StopGradient', {
  infer: (inputs) => (arity(inputs, 1, 'StopGradient'), [{ dtype: inputs[0]!.dtype, shape: inputs[0]!.shape }]),
  emit: plain('Identity'),
  grad: () => [null],
});

function binaryDef(opType: string, grad: ((a: Tensor, b: Tensor, y: Tensor, g: Tensor, needs: readonly boolean[]) => [Tensor | null, Tensor | null]) | null): OpDef {
  return {
    infer(inputs) {
      arity(inputs, 2, opType);
      const d = sameDType(inputs, opType);
      if (grad !== null) needFloat(inputs[0]!, opType);
      return [{ dtype: d, shape: broadcastShapes(inputs[0]!.shape, inputs[1]!.shape, opType) }];
    },
    emit: plain(opType),
    grad: ({ node, gOut, needs }) => {
      if (grad === null) return [null, null];
      const [a, b] = node.inputs as [Tensor, Tensor];
      const [ga, gb] = grad(a, b, node.outputs[0]!, gOut[0]!, needs);
      return [needs[0] && ga !== null ? unbroadcast(ga, a.shape) : null, needs[1] && gb !== null ? unbroadcast(gb, b.shape) : null];
    },
  };
}

registerOp('Add', binaryDef('Add', (_a, _b, _y, g) => [g, g]));
registerOp('Sub', binaryDef('Sub', (_a, _b, _y, g, n) => [g, n[1] ? neg(g) : null]));
registerOp('Mul', binaryDef('Mul', (a, b, _y, g, n) => [n[0] ? mul(g, b) : null, n[1] ? mul(g, a) : null]));
registerOp('Div', binaryDef('Div', (_a, b, y, g, n) => [n[0] ? div(g, b) : null, n[1] ? neg(div(mul(g, y), b)) : null]));
// y = a^b: dy/da = b a^(b-1), dy/db = y ln a (only asked for when the exponent is trained; NaN for a < 0, as in torch)
registerOp('Pow', binaryDef('Pow', (a, b, y, g, n) => [n[0] ? mul(g, mul(b, pow(a, sub(b, 1)))) : null, n[1] ? mul(g, mul(y, log(a))) : null]));
// Ties send the whole cotangent to the first operand (the choice of torch.maximum is to split it; ties have measure 0).
registerOp('Max', binaryDef('Max', (a, b, _y, g, n) => {
  const bWins = less(a, b);
  return [n[0] ? where(bWins, 0, g) : null, n[1] ? where(bWins, g, 0) : null];
}));
registerOp('Min', binaryDef('Min', (a, b, _y, g, n) => {
  const bWins = less(b, a);
  return [n[0] ? where(bWins, 0, g) : null, n[1] ? where(bWins, g, 0) : null];
}));

function compareDef(opType: string, bool: boolean): OpDef {
  return {
    infer(inputs) {
      arity(inputs, 2, opType);
      const d = sameDType(inputs, opType);
      if (bool && d !== 'bool') throw new GraphError(opType, `needs bool inputs, got ${d}`);
      return [{ dtype: 'bool', shape: broadcastShapes(inputs[0]!.shape, inputs[1]!.shape, opType) }];
    },
    emit: plain(opType),
    grad: () => [null, null],
  };
}
for (const c of ['Equal', 'Less', 'Greater', 'LessOrEqual', 'GreaterOrEqual']) registerOp(c, compareDef(c, false));
for (const c of ['And', 'Or']) registerOp(c, compareDef(c, true));

registerOp('Where', {
  infer(inputs) {
    arity(inputs, 3, 'Where');
    const [c, a, b] = inputs as [Tensor, Tensor, Tensor];
    if (c.dtype !== 'bool') throw new GraphError('Where', `condition must be bool, got ${c.dtype}`);
    const d = sameDType([a, b], 'Where');
    return [{ dtype: d, shape: broadcastShapes(broadcastShapes(c.shape, a.shape, 'Where'), b.shape, 'Where') }];
  },
  emit: plain('Where'),
  grad: ({ node, gOut, needs }) => {
    const [c, a, b] = node.inputs as [Tensor, Tensor, Tensor];
    const g = gOut[0]!;
    return [
      null,
      needs[1] ? unbroadcast(where(c, g, 0), a.shape) : null,
      needs[2] ? unbroadcast(where(c, 0, g), b.shape) : null,
    ];
  },
});

registerOp('Clip', {
  infer(inputs, attrs) {
    arity(inputs, 1, 'Clip');
    needFloat(inputs[0]!, 'Clip');
    const lo = attrs['min'] as number | undefined;
    const hi = attrs['max'] as number | undefined;
    if (lo !== undefined && hi !== undefined && lo > hi) throw new GraphError('Clip', `min ${lo} > max ${hi}`);
    return [{ dtype: inputs[0]!.dtype, shape: inputs[0]!.shape }];
  },
  emit(node) {
    const d = node.inputs[0]!.dtype;
    const lo = node.attrs['min'] as number | undefined;
    const hi = node.attrs['max'] as number | undefined;
    return { opType: 'Clip', inputs: [0, lo === undefined ? null : scalarConst(d, lo), hi === undefined ? null : scalarConst(d, hi)], attrs: [] };
  },
  // The cotangent passes where min <= x <= max (torch.clamp's choice at the boundary).
  grad: ({ node, gOut }) => {
    const x = node.inputs[0]!;
    const lo = node.attrs['min'] as number | undefined;
    const hi = node.attrs['max'] as number | undefined;
    let g = gOut[0]!;
    if (lo !== undefined) g = where(less(x, lo), 0, g);
    if (hi !== undefined) g = where(greater(x, hi), 0, g);
    return [g];
  },
});

registerOp('Cast', {
  infer(inputs, attrs) {
    arity(inputs, 1, 'Cast');
    const to = attrs['to'] as DType;
    if (!(to in ONNX_DTYPE)) throw new GraphError('Cast', `unknown dtype '${String(to)}'`);
    return [{ dtype: to, shape: inputs[0]!.shape }];
  },
  emit: (node) => ({ opType: 'Cast', inputs: [0], attrs: [{ name: 'to', type: 'int', value: ONNX_DTYPE[node.attrs['to'] as DType] }] }),
  grad: ({ node, gOut }) => {
    const x = node.inputs[0]!;
    return [isFloat(x.dtype) && isFloat(node.outputs[0]!.dtype) ? cast(gOut[0]!, x.dtype) : null];
  },
});

// --- linear algebra --------------------------------------------------------------------------------------------------

function swapLast(t: Tensor): Tensor {
  const perm = t.shape.map((_, i) => i);
  perm[t.rank - 1] = t.rank - 2;
  perm[t.rank - 2] = t.rank - 1;
  return transpose(t, perm);
}

registerOp('MatMul', {
  infer(inputs) {
    arity(inputs, 2, 'MatMul');
    const [a, b] = inputs as [Tensor, Tensor];
    const d = sameDType(inputs, 'MatMul');
    if (a.rank < 2 || b.rank < 2) throw new GraphError('MatMul', `needs rank >= 2, got ${fmtShape(a.shape)} and ${fmtShape(b.shape)}`);
    const k1 = a.shape[a.rank - 1]!;
    const k2 = b.shape[b.rank - 2]!;
    if (!dimEq(k1, k2)) throw new GraphError('MatMul', `inner dims differ: ${fmtShape(a.shape)} · ${fmtShape(b.shape)}`);
    const batch = broadcastShapes(a.shape.slice(0, -2), b.shape.slice(0, -2), 'MatMul');
    return [{ dtype: d, shape: [...batch, a.shape[a.rank - 2]!, b.shape[b.rank - 1]!] }];
  },
  emit: plain('MatMul'),
  grad: ({ node, gOut, needs }) => {
    const [a, b] = node.inputs as [Tensor, Tensor];
    const g = gOut[0]!;
    return [needs[0] ? unbroadcast(matmul(g, swapLast(b)), a.shape) : null, needs[1] ? unbroadcast(matmul(swapLast(a), g), b.shape) : null];
  },
});

registerOp('Gemm', {
  infer(inputs, attrs) {
    if (inputs.length !== 2 && inputs.length !== 3) throw new GraphError('Gemm', `takes 2 or 3 inputs, got ${inputs.length}`);
    const d = sameDType(inputs, 'Gemm');
    const [a, b] = inputs as [Tensor, Tensor];
    if (a.rank !== 2 || b.rank !== 2) throw new GraphError('Gemm', `needs 2-D operands, got ${fmtShape(a.shape)} and ${fmtShape(b.shape)}`);
    const [m, ka] = attrs['transA'] ? [a.shape[1]!, a.shape[0]!] : [a.shape[0]!, a.shape[1]!];
    const [kb, n] = attrs['transB'] ? [b.shape[1]!, b.shape[0]!] : [b.shape[0]!, b.shape[1]!];
    if (!dimEq(ka, kb)) {
      throw new GraphError('Gemm', `inner dims differ: A ${fmtShape(a.shape)}${attrs['transA'] ? 'ᵀ' : ''} · B ${fmtShape(b.shape)}${attrs['transB'] ? 'ᵀ' : ''}`);
    }
    const c = inputs[2];
    if (c !== undefined) {
      const out = broadcastShapes([m, n], c.shape, 'Gemm');
      if (!shapeEq(out, [m, n])) throw new GraphError('Gemm', `C ${fmtShape(c.shape)} does not broadcast to ${fmtShape([m, n])}`);
    }
    return [{ dtype: d, shape: [m, n] }];
  },
  emit: (node) => ({
    opType: 'Gemm',
    inputs: node.inputs.map((_, i) => i),
    attrs: [
      { name: 'alpha', type: 'float', value: (node.attrs['alpha'] as number | undefined) ?? 1 },
      { name: 'beta', type: 'float', value: (node.attrs['beta'] as number | undefined) ?? 1 },
      { name: 'transA', type: 'int', value: node.attrs['transA'] ? 1 : 0 },
      { name: 'transB', type: 'int', value: node.attrs['transB'] ? 1 : 0 },
    ],
  }),
  // Y = alpha·op(A)·op(B) + beta·C. With op(X) = X or Xᵀ, every case is one Gemm with flipped flags, so no weight is
  // ever transposed or copied: d op(A) = alpha·G·op(B)ᵀ, d op(B) = alpha·op(A)ᵀ·G.
  grad: ({ node, gOut, needs }) => {
    const [a, b, c] = node.inputs as [Tensor, Tensor, Tensor | undefined];
    const g = gOut[0]!;
    const tA = Boolean(node.attrs['transA']);
    const tB = Boolean(node.attrs['transB']);
    const alpha = (node.attrs['alpha'] as number | undefined) ?? 1;
    const beta = (node.attrs['beta'] as number | undefined) ?? 1;
    const da = !needs[0] ? null : tA ? gemm(b, g, { transA: tB, transB: true, alpha }) : gemm(g, b, { transB: !tB, alpha });
    const db = !needs[1] ? null : tB ? gemm(g, a, { transA: true, transB: tA, alpha }) : gemm(a, g, { transA: !tA, alpha });
    const out: (Tensor | null)[] = [da, db];
    if (c !== undefined) out.push(needs[2] ? unbroadcast(beta === 1 ? g : mul(g, beta), c.shape) : null);
    return out;
  },
});

// --- softmax family --------------------------------------------------------------------------------------------------

function softmaxDef(opType: 'Softmax' | 'LogSoftmax'): OpDef {
  return {
    infer(inputs, attrs) {
      arity(inputs, 1, opType);
      needFloat(inputs[0]!, opType);
      normAxis((attrs['axis'] as number | undefined) ?? -1, inputs[0]!.rank, opType);
      return [{ dtype: inputs[0]!.dtype, shape: inputs[0]!.shape }];
    },
    emit: (node) => ({
      opType,
      inputs: [0],
      attrs: [{ name: 'axis', type: 'int', value: normAxis((node.attrs['axis'] as number | undefined) ?? -1, node.inputs[0]!.rank, opType) }],
    }),
    grad: ({ node, gOut }) => {
      const axis = normAxis((node.attrs['axis'] as number | undefined) ?? -1, node.inputs[0]!.rank, opType);
      const y = node.outputs[0]!;
      const g = gOut[0]!;
      // softmax: dx = y ⊙ (g − Σ g⊙y);  log-softmax: dx = g − softmax(x) ⊙ Σ g
      if (opType === 'Softmax') return [mul(y, sub(g, reduceSum(mul(g, y), [axis], true)))];
      return [sub(g, mul(exp(y), reduceSum(g, [axis], true)))];
    },
  };
}
registerOp('Softmax', softmaxDef('Softmax'));
registerOp('LogSoftmax', softmaxDef('LogSoftmax'));

// --- reductions ------------------------------------------------------------------------------------------------------

function reduceAxes(x: Tensor, attrs: Attrs, op: string): number[] {
  const raw = (attrs['axes'] as readonly number[] | undefined) ?? [];
  const axes = raw.length === 0 ? x.shape.map((_, i) => i) : raw.map((a) => normAxis(a, x.rank, op));
  if (new Set(axes).size !== axes.length) throw new GraphError(op, `repeated axes ${JSON.stringify(raw)}`);
  return [...axes].sort((p, q) => p - q);
}

function reducedShape(x: Tensor, axes: readonly number[], keep: boolean): Dim[] {
  const out: Dim[] = [];
  x.shape.forEach((d, i) => {
    if (!axes.includes(i)) out.push(d);
    else if (keep) out.push(1);
  });
  return out;
}

function reduceDef(opType: 'ReduceSum' | 'ReduceMean' | 'ReduceMax'): OpDef {
  return {
    infer(inputs, attrs) {
      arity(inputs, 1, opType);
      needFloat(inputs[0]!, opType);
      const axes = reduceAxes(inputs[0]!, attrs, opType);
      return [{ dtype: inputs[0]!.dtype, shape: reducedShape(inputs[0]!, axes, attrs['keepdims'] !== false) }];
    },
    emit: (node) => ({
      opType,
      inputs: [0, i64(reduceAxes(node.inputs[0]!, node.attrs, opType))],
      attrs: [{ name: 'keepdims', type: 'int', value: node.attrs['keepdims'] === false ? 0 : 1 }],
    }),
    grad: ({ node, gOut }) => {
      const x = node.inputs[0]!;
      const axes = reduceAxes(x, node.attrs, opType);
      const kept = reducedShape(x, axes, true);
      const g = gOut[0]!;
      const gk = shapeEq(g.shape, kept) ? g : reshape(g, kept);
      if (opType === 'ReduceSum') return [expand(gk, x.shape)];
      if (opType === 'ReduceMean') {
        const count = dimProduct(axes.map((a) => x.shape[a]!));
        return [div(expand(gk, x.shape), x.graph.scalar(count, x.dtype))];
      }
      // ReduceMax: the cotangent is shared evenly among the maxima (torch.amax's rule).
      const yk = shapeEq(node.outputs[0]!.shape, kept) ? node.outputs[0]! : reshape(node.outputs[0]!, kept);
      const mask = cast(equal(x, yk), x.dtype);
      return [div(mul(mask, gk), reduceSum(mask, axes, true))];
    },
  };
}
registerOp('ReduceSum', reduceDef('ReduceSum'));
registerOp('ReduceMean', reduceDef('ReduceMean'));
registerOp('ReduceMax', reduceDef('ReduceMax'));

// --- shape ops -------------------------------------------------------------------------------------------------------

registerOp('Reshape', {
  infer(inputs, attrs) {
    arity(inputs, 1, 'Reshape');
    const x = inputs[0]!;
    const target = [...(attrs['shape'] as readonly Dim[])];
    const holes = target.filter((d) => d === -1).length;
    if (holes > 1) throw new GraphError('Reshape', `more than one -1 in ${fmtShape(target)}`);
    const total = dimProduct(x.shape);
    if (holes === 1) {
      const rest = dimProduct(target.filter((d) => d !== -1));
      const hole = dimDiv(total, rest);
      if (hole === undefined) throw new GraphError('Reshape', `cannot infer -1: ${fmtShape(x.shape)} into ${fmtShape(target)}`);
      target[target.indexOf(-1)] = hole;
    } else if (!dimEq(total, dimProduct(target))) {
      throw new GraphError('Reshape', `${fmtShape(x.shape)} has ${total} elements, target ${fmtShape(target)} has ${dimProduct(target)}`);
    }
    return [{ dtype: x.dtype, shape: target }];
  },
  // The target is emitted fully bound, with allowzero=1 so a bucket with a 0-sized dim is not read as "copy the dim".
  emit: (node, b) => ({ opType: 'Reshape', inputs: [0, i64(bindShape(node.outputs[0]!.shape, b, 'Reshape'))], attrs: [{ name: 'allowzero', type: 'int', value: 1 }] }),
  grad: ({ node, gOut }) => [reshape(gOut[0]!, node.inputs[0]!.shape)],
});

registerOp('Transpose', {
  infer(inputs, attrs) {
    arity(inputs, 1, 'Transpose');
    const x = inputs[0]!;
    const perm = attrs['perm'] as readonly number[];
    const sorted = [...perm].sort((p, q) => p - q);
    if (perm.length !== x.rank || sorted.some((p, i) => p !== i)) {
      throw new GraphError('Transpose', `perm ${JSON.stringify(perm)} is not a permutation of rank ${x.rank} (${fmtShape(x.shape)})`);
    }
    return [{ dtype: x.dtype, shape: perm.map((p) => x.shape[p]!) }];
  },
  emit: (node) => ({ opType: 'Transpose', inputs: [0], attrs: [{ name: 'perm', type: 'ints', value: [...(node.attrs['perm'] as number[])] }] }),
  grad: ({ node, gOut }) => {
    const perm = node.attrs['perm'] as readonly number[];
    const inv = new Array<number>(perm.length);
    perm.forEach((p, i) => (inv[p] = i));
    return [transpose(gOut[0]!, inv)];
  },
});

registerOp('Expand', {
  infer(inputs, attrs) {
    arity(inputs, 1, 'Expand');
    const x = inputs[0]!;
    const shape = attrs['shape'] as readonly Dim[];
    return [{ dtype: x.dtype, shape: broadcastShapes(x.shape, shape, 'Expand') }];
  },
  emit: (node, b) => ({ opType: 'Expand', inputs: [0, i64(bindShape(node.attrs['shape'] as readonly Dim[], b, 'Expand'))], attrs: [] }),
  grad: ({ node, gOut }) => [unbroadcast(gOut[0]!, node.inputs[0]!.shape)],
});

interface SliceSpec {
  axes: number[];
  starts: Dim[];
  ends: Dim[];
}

// Slices are step 1 with non-negative bounds after normalisation: on a symbolic axis, only the full range or a
// symbolic bound like ('T' to '2*T') on a '3*T' axis. This keeps every output dim exact without symbolic min/max.
function sliceSpec(x: Tensor, attrs: Attrs): SliceSpec {
  const rawAxes = (attrs['axes'] as readonly number[] | undefined) ?? (attrs['starts'] as readonly Dim[]).map((_, i) => i);
  const rawStarts = attrs['starts'] as readonly Dim[];
  const rawEnds = attrs['ends'] as readonly Dim[];
  if (rawStarts.length !== rawAxes.length || rawEnds.length !== rawAxes.length) {
    throw new GraphError('Slice', `starts, ends and axes differ in length (${rawStarts.length}, ${rawEnds.length}, ${rawAxes.length})`);
  }
  const spec: SliceSpec = { axes: [], starts: [], ends: [] };
  rawAxes.forEach((a, i) => {
    const axis = normAxis(a, x.rank, 'Slice');
    const d = x.shape[axis]!;
    let s = rawStarts[i]!;
    let e = rawEnds[i]!;
    if (isStaticDim(d)) {
      const n = d as number;
      const norm = (v: Dim, what: string): number => {
        if (typeof v !== 'number') throw new GraphError('Slice', `${what} ${v} is symbolic on static axis ${axis} (${n})`);
        return Math.min(Math.max(v < 0 ? v + n : v, 0), n);
      };
      s = norm(s, 'start');
      e = Math.max(norm(e, 'end'), s);
    } else {
      if (typeof e === 'number' && e >= Number.MAX_SAFE_INTEGER) e = d;
      if ((typeof s === 'number' && s < 0) || (typeof e === 'number' && e < 0)) {
        throw new GraphError('Slice', `negative bounds on symbolic axis ${axis} (${d}) are not supported`);
      }
    }
    const len = dimSub(e, s);
    const rest = len === undefined ? undefined : dimSub(d, e);
    if (len === undefined || rest === undefined) {
      throw new GraphError('Slice', `bounds ${s}..${e} on axis ${axis} of ${fmtShape(x.shape)} are not exact`);
    }
    spec.axes.push(axis);
    spec.starts.push(s);
    spec.ends.push(e);
  });
  return spec;
}

registerOp('Slice', {
  infer(inputs, attrs) {
    arity(inputs, 1, 'Slice');
    const x = inputs[0]!;
    const spec = sliceSpec(x, attrs);
    const shape = [...x.shape];
    spec.axes.forEach((a, i) => (shape[a] = dimSub(spec.ends[i]!, spec.starts[i]!)!));
    return [{ dtype: x.dtype, shape }];
  },
  emit: (node, b) => {
    const spec = sliceSpec(node.inputs[0]!, node.attrs);
    return {
      opType: 'Slice',
      inputs: [0, i64(spec.starts.map((d) => bindDim(d, b, 'Slice'))), i64(spec.ends.map((d) => bindDim(d, b, 'Slice'))), i64(spec.axes)],
      attrs: [],
    };
  },
  grad: ({ node, gOut }) => {
    const x = node.inputs[0]!;
    const spec = sliceSpec(x, node.attrs);
    const before: Dim[] = x.shape.map(() => 0);
    const after: Dim[] = x.shape.map(() => 0);
    spec.axes.forEach((a, i) => {
      before[a] = spec.starts[i]!;
      after[a] = dimSub(x.shape[a]!, spec.ends[i]!)!;
    });
    return [pad(gOut[0]!, [...before, ...after])];
  },
});

registerOp('Pad', {
  infer(inputs, attrs) {
    arity(inputs, 1, 'Pad');
    const x = inputs[0]!;
    const pads = attrs['pads'] as readonly Dim[];
    if (pads.length !== 2 * x.rank) throw new GraphError('Pad', `needs ${2 * x.rank} pads for ${fmtShape(x.shape)}, got ${pads.length}`);
    const shape = x.shape.map((d, i) => {
      const begin = dimAdd(d, pads[i]!);
      const s = begin === undefined ? undefined : dimAdd(begin, pads[i + x.rank]!);
      if (s === undefined) throw new GraphError('Pad', `pads ${fmtShape(pads)} on axis ${i} of ${fmtShape(x.shape)} are not exact`);
      return s;
    });
    return [{ dtype: x.dtype, shape }];
  },
  emit: (node, b) => ({
    opType: 'Pad',
    inputs: [0, i64((node.attrs['pads'] as readonly Dim[]).map((d) => bindDim(d, b, 'Pad'))), scalarConst(node.inputs[0]!.dtype, (node.attrs['value'] as number | undefined) ?? 0)],
    attrs: [{ name: 'mode', type: 'string', value: 'constant' }],
  }),
  grad: ({ node, gOut }) => {
    const x = node.inputs[0]!;
    const pads = node.attrs['pads'] as readonly Dim[];
    const axes = x.shape.map((_, i) => i);
    return [slice(gOut[0]!, pads.slice(0, x.rank), x.shape.map((d, i) => dimAdd(d, pads[i]!)!), axes)];
  },
});

registerOp('Concat', {
  infer(inputs, attrs) {
    if (inputs.length < 1) throw new GraphError('Concat', 'needs at least one input');
    const d = sameDType(inputs, 'Concat');
    const first = inputs[0]!;
    const axis = normAxis(attrs['axis'] as number, first.rank, 'Concat');
    let total: Dim = 0;
    for (const t of inputs) {
      if (t.rank !== first.rank || t.shape.some((s, i) => i !== axis && !dimEq(s, first.shape[i]!))) {
        throw new GraphError('Concat', `shapes ${inputs.map((x) => fmtShape(x.shape)).join(', ')} differ off axis ${axis}`);
      }
      const next = dimAdd(total, t.shape[axis]!);
      if (next === undefined) throw new GraphError('Concat', `cannot add ${total} and ${t.shape[axis]} on axis ${axis}`);
      total = next;
    }
    const shape = [...first.shape];
    shape[axis] = total;
    return [{ dtype: d, shape }];
  },
  emit: (node) => ({
    opType: 'Concat',
    inputs: node.inputs.map((_, i) => i),
    attrs: [{ name: 'axis', type: 'int', value: normAxis(node.attrs['axis'] as number, node.inputs[0]!.rank, 'Concat') }],
  }),
  grad: ({ node, gOut }) => {
    const axis = normAxis(node.attrs['axis'] as number, node.inputs[0]!.rank, 'Concat');
    if (node.inputs.length === 1) return [gOut[0]!];
    return split(gOut[0]!, axis, node.inputs.map((t) => t.shape[axis]!));
  },
});

registerOp('Split', {
  infer(inputs, attrs) {
    arity(inputs, 1, 'Split');
    const x = inputs[0]!;
    const axis = normAxis(attrs['axis'] as number, x.rank, 'Split');
    const sizes = attrs['sizes'] as readonly Dim[];
    let total: Dim | undefined = 0;
    for (const s of sizes) total = total === undefined ? undefined : dimAdd(total, s);
    if (total === undefined || !dimEq(total, x.shape[axis]!)) throw new GraphError('Split', `sizes ${fmtShape(sizes)} do not add up to axis ${axis} of ${fmtShape(x.shape)}`);
    return sizes.map((s) => {
      const shape = [...x.shape];
      shape[axis] = s;
      return { dtype: x.dtype, shape };
    });
  },
  emit: (node, b) => ({
    opType: 'Split',
    inputs: [0, i64((node.attrs['sizes'] as readonly Dim[]).map((d) => bindDim(d, b, 'Split')))],
    attrs: [{ name: 'axis', type: 'int', value: normAxis(node.attrs['axis'] as number, node.inputs[0]!.rank, 'Split') }],
  }),
  grad: ({ node, gOut }) => {
    const axis = normAxis(node.attrs['axis'] as number, node.inputs[0]!.rank, 'Split');
    return [concat(gOut.map((g, i) => g ?? zerosLike(node.outputs[i]!)), axis)];
  },
});

registerOp('Trilu', {
  infer(inputs) {
    arity(inputs, 1, 'Trilu');
    if (inputs[0]!.rank < 2) throw new GraphError('Trilu', `needs rank >= 2, got ${fmtShape(inputs[0]!.shape)}`);
    return [{ dtype: inputs[0]!.dtype, shape: inputs[0]!.shape }];
  },
  emit: (node) => ({
    opType: 'Trilu',
    inputs: [0, i64([(node.attrs['k'] as number | undefined) ?? 0], [])],
    attrs: [{ name: 'upper', type: 'int', value: node.attrs['upper'] ? 1 : 0 }],
  }),
  grad: ({ node, gOut }) => [trilu(gOut[0]!, Boolean(node.attrs['upper']), (node.attrs['k'] as number | undefined) ?? 0)],
});

// --- indexing --------------------------------------------------------------------------------------------------------

function needIndices(t: Tensor, op: string): void {
  if (t.dtype !== 'int64') throw new GraphError(op, `indices must be int64, got ${t.dtype}`);
}

registerOp('Gather', {
  infer(inputs, attrs) {
    arity(inputs, 2, 'Gather');
    const [x, idx] = inputs as [Tensor, Tensor];
    needIndices(idx, 'Gather');
    const axis = normAxis((attrs['axis'] as number | undefined) ?? 0, x.rank, 'Gather');
    return [{ dtype: x.dtype, shape: [...x.shape.slice(0, axis), ...idx.shape, ...x.shape.slice(axis + 1)] }];
  },
  emit: (node) => ({
    opType: 'Gather',
    inputs: [0, 1],
    attrs: [{ name: 'axis', type: 'int', value: normAxis((node.attrs['axis'] as number | undefined) ?? 0, node.inputs[0]!.rank, 'Gather') }],
  }),
  // Scatter-add the cotangent rows back: move the indexed axis to the front, ScatterND(add) into zeros, move it back.
  grad: ({ node, gOut, needs }) => {
    if (!needs[0]) return [null, null];
    const [x, idx] = node.inputs as [Tensor, Tensor];
    const axis = normAxis((node.attrs['axis'] as number | undefined) ?? 0, x.rank, 'Gather');
    const r = idx.rank;
    const g = gOut[0]!;
    const perm = [...Array.from({ length: r }, (_, i) => axis + i), ...Array.from({ length: axis }, (_, i) => i), ...Array.from({ length: g.rank - axis - r }, (_, i) => axis + r + i)];
    const gt = perm.every((p, i) => p === i) ? g : transpose(g, perm);
    const rest = [...x.shape.slice(0, axis), ...x.shape.slice(axis + 1)];
    const upd = reshape(gt, [-1, ...rest]);
    const ind = reshape(idx, [-1, 1]);
    const acc = scatterND(zeros(x.graph, x.dtype, [x.shape[axis]!, ...rest]), ind, upd, 'add');
    if (axis === 0) return [acc, null];
    const back = [...Array.from({ length: axis }, (_, i) => i + 1), 0, ...Array.from({ length: x.rank - axis - 1 }, (_, i) => axis + 1 + i)];
    return [transpose(acc, back), null];
  },
});

registerOp('GatherElements', {
  infer(inputs, attrs) {
    arity(inputs, 2, 'GatherElements');
    const [x, idx] = inputs as [Tensor, Tensor];
    needIndices(idx, 'GatherElements');
    normAxis((attrs['axis'] as number | undefined) ?? 0, x.rank, 'GatherElements');
    if (idx.rank !== x.rank) throw new GraphError('GatherElements', `indices ${fmtShape(idx.shape)} and data ${fmtShape(x.shape)} differ in rank`);
    return [{ dtype: x.dtype, shape: idx.shape }];
  },
  emit: (node) => ({ opType: 'GatherElements', inputs: [0, 1], attrs: [{ name: 'axis', type: 'int', value: normAxis((node.attrs['axis'] as number | undefined) ?? 0, node.inputs[0]!.rank, 'GatherElements') }] }),
  grad: ({ node, gOut, needs }) => {
    const [x, idx] = node.inputs as [Tensor, Tensor];
    return [needs[0] ? scatterElements(zerosLike(x), idx, gOut[0]!, (node.attrs['axis'] as number | undefined) ?? 0, 'add') : null, null];
  },
});

registerOp('GatherND', {
  infer(inputs) {
    arity(inputs, 2, 'GatherND');
    const [x, idx] = inputs as [Tensor, Tensor];
    needIndices(idx, 'GatherND');
    const k = idx.shape[idx.rank - 1];
    if (k === undefined || typeof k !== 'number' || k > x.rank) throw new GraphError('GatherND', `last indices dim must be static and <= rank ${x.rank}, got ${fmtShape(idx.shape)}`);
    return [{ dtype: x.dtype, shape: [...idx.shape.slice(0, -1), ...x.shape.slice(k)] }];
  },
  emit: plain('GatherND'),
  grad: ({ node, gOut, needs }) => {
    const [x, idx] = node.inputs as [Tensor, Tensor];
    return [needs[0] ? scatterND(zerosLike(x), idx, gOut[0]!, 'add') : null, null];
  },
});

registerOp('ScatterElements', {
  infer(inputs, attrs) {
    arity(inputs, 3, 'ScatterElements');
    const [x, idx, upd] = inputs as [Tensor, Tensor, Tensor];
    needIndices(idx, 'ScatterElements');
    sameDType([x, upd], 'ScatterElements');
    normAxis((attrs['axis'] as number | undefined) ?? 0, x.rank, 'ScatterElements');
    if (!shapeEq(idx.shape, upd.shape) || idx.rank !== x.rank) {
      throw new GraphError('ScatterElements', `data ${fmtShape(x.shape)}, indices ${fmtShape(idx.shape)}, updates ${fmtShape(upd.shape)} do not fit`);
    }
    return [{ dtype: x.dtype, shape: x.shape }];
  },
  emit: (node) => ({
    opType: 'ScatterElements',
    inputs: [0, 1, 2],
    attrs: [
      { name: 'axis', type: 'int', value: normAxis((node.attrs['axis'] as number | undefined) ?? 0, node.inputs[0]!.rank, 'ScatterElements') },
      { name: 'reduction', type: 'string', value: (node.attrs['reduction'] as string | undefined) ?? 'none' },
    ],
  }),
  grad: ({ node, gOut, needs }) => {
    const [, idx, upd] = node.inputs as [Tensor, Tensor, Tensor];
    const axis = (node.attrs['axis'] as number | undefined) ?? 0;
    const add = node.attrs['reduction'] === 'add';
    const g = gOut[0]!;
    // With reduction 'none' the overwritten positions of data get no cotangent (unique indices assumed, as in ONNX).
    const gData = !needs[0] ? null : add ? g : scatterElements(g, idx, zerosLike(upd), axis, 'none');
    return [gData, null, needs[2] ? gatherElements(g, idx, axis) : null];
  },
});

registerOp('ScatterND', {
  infer(inputs) {
    arity(inputs, 3, 'ScatterND');
    const [x, idx, upd] = inputs as [Tensor, Tensor, Tensor];
    needIndices(idx, 'ScatterND');
    sameDType([x, upd], 'ScatterND');
    const k = idx.shape[idx.rank - 1];
    if (k === undefined || typeof k !== 'number' || k > x.rank) throw new GraphError('ScatterND', `last indices dim must be static and <= rank ${x.rank}, got ${fmtShape(idx.shape)}`);
    const want = [...idx.shape.slice(0, -1), ...x.shape.slice(k)];
    if (!shapeEq(want, upd.shape)) throw new GraphError('ScatterND', `updates ${fmtShape(upd.shape)} should be ${fmtShape(want)} (data ${fmtShape(x.shape)}, indices ${fmtShape(idx.shape)})`);
    return [{ dtype: x.dtype, shape: x.shape }];
  },
  emit: (node) => ({ opType: 'ScatterND', inputs: [0, 1, 2], attrs: [{ name: 'reduction', type: 'string', value: (node.attrs['reduction'] as string | undefined) ?? 'none' }] }),
  grad: ({ node, gOut, needs }) => {
    const [, idx, upd] = node.inputs as [Tensor, Tensor, Tensor];
    const add = node.attrs['reduction'] === 'add';
    const g = gOut[0]!;
    const gData = !needs[0] ? null : add ? g : scatterND(g, idx, zerosLike(upd), 'none');
    return [gData, null, needs[2] ? gatherND(g, idx) : null];
  },
});

// --- op functions (what graph builders call) -------------------------------------------------------------------------

const one = (op: string, inputs: readonly Tensor[], attrs: Attrs = {}): Tensor => apply(op, inputs, attrs)[0]!;

export const add = (a: TensorLike, b: TensorLike): Tensor => one('Add', pair(a, b, 'Add'));
export const sub = (a: TensorLike, b: TensorLike): Tensor => one('Sub', pair(a, b, 'Sub'));
export const mul = (a: TensorLike, b: TensorLike): Tensor => one('Mul', pair(a, b, 'Mul'));
export const div = (a: TensorLike, b: TensorLike): Tensor => one('Div', pair(a, b, 'Div'));
export const pow = (a: TensorLike, b: TensorLike): Tensor => one('Pow', pair(a, b, 'Pow'));
export const min = (a: TensorLike, b: TensorLike): Tensor => one('Min', pair(a, b, 'Min'));
export const max = (a: TensorLike, b: TensorLike): Tensor => one('Max', pair(a, b, 'Max'));
export const equal = (a: TensorLike, b: TensorLike): Tensor => one('Equal', pair(a, b, 'Equal'));
export const less = (a: TensorLike, b: TensorLike): Tensor => one('Less', pair(a, b, 'Less'));
export const greater = (a: TensorLike, b: TensorLike): Tensor => one('Greater', pair(a, b, 'Greater'));
export const lessOrEqual = (a: TensorLike, b: TensorLike): Tensor => one('LessOrEqual', pair(a, b, 'LessOrEqual'));
export const greaterOrEqual = (a: TensorLike, b: TensorLike): Tensor => one('GreaterOrEqual', pair(a, b, 'GreaterOrEqual'));
export const logicalAnd = (a: Tensor, b: Tensor): Tensor => one('And', [a, b]);
export const logicalOr = (a: Tensor, b: Tensor): Tensor => one('Or', [a, b]);

export const neg = (x: Tensor): Tensor => one('Neg', [x]);
export const sqrt = (x: Tensor): Tensor => one('Sqrt', [x]);
export const reciprocal = (x: Tensor): Tensor => one('Reciprocal', [x]);
export const exp = (x: Tensor): Tensor => one('Exp', [x]);
export const log = (x: Tensor): Tensor => one('Log', [x]);
export const sigmoid = (x: Tensor): Tensor => one('Sigmoid', [x]);
export const tanh = (x: Tensor): Tensor => one('Tanh', [x]);
export const erf = (x: Tensor): Tensor => one('Erf', [x]);
export const sin = (x: Tensor): Tensor => one('Sin', [x]);
export const cos = (x: Tensor): Tensor => one('Cos', [x]);
export const abs = (x: Tensor): Tensor => one('Abs', [x]);
export const sign = (x: Tensor): Tensor => one('Sign', [x]);
export const floor = (x: Tensor): Tensor => one('Floor', [x]);
export const stopGradient = (x: Tensor): Tensor => one('StopGradient', [x]);
export const round = (x: Tensor): Tensor => one('Round', [x]);
export const roundNarrow = (x: Tensor, to: NarrowFloat): Tensor => one('RoundNarrow', [x], { to });
/** q's value, x's gradient (q is usually a rounding of x). */
export const straightThrough = (x: Tensor, q: Tensor): Tensor => one('StraightThrough', [x, q]);

export const where = (cond: Tensor, a: TensorLike, b: TensorLike): Tensor => {
  return one('Where', [cond, ...pair(a, b, 'Where')]);
};
export const clip = (x: Tensor, lo?: number, hi?: number): Tensor => one('Clip', [x], { min: lo, max: hi });
export const cast = (x: Tensor, to: DType): Tensor => (x.dtype === to ? x : one('Cast', [x], { to }));

export const matmul = (a: Tensor, b: Tensor): Tensor => one('MatMul', [a, b]);
export interface GemmOpts {
  transA?: boolean;
  transB?: boolean;
  alpha?: number;
  beta?: number;
}
/** Y = alpha·op(A)·op(B) + beta·C on 2-D operands. For HF [out, in] weights: gemm(x, W, { transB: true }). */
export const gemm = (a: Tensor, b: Tensor, opts: GemmOpts = {}, c?: Tensor): Tensor =>
  one('Gemm', c === undefined ? [a, b] : [a, b, c], { transA: opts.transA ?? false, transB: opts.transB ?? false, alpha: opts.alpha ?? 1, beta: opts.beta ?? 1 });

export const softmax = (x: Tensor, axis = -1): Tensor => one('Softmax', [x], { axis });
export const logSoftmax = (x: Tensor, axis = -1): Tensor => one('LogSoftmax', [x], { axis });

/** Axes are reduced (all when empty); keepdims defaults to true as in ONNX. */
export const reduceSum = (x: Tensor, axes: readonly number[] = [], keepdims = true): Tensor => one('ReduceSum', [x], { axes: [...axes], keepdims });
export const reduceMean = (x: Tensor, axes: readonly number[] = [], keepdims = true): Tensor => one('ReduceMean', [x], { axes: [...axes], keepdims });
export const reduceMax = (x: Tensor, axes: readonly number[] = [], keepdims = true): Tensor => one('ReduceMax', [x], { axes: [...axes], keepdims });

/** Dims may be symbols; one -1 is inferred. */
export const reshape = (x: Tensor, shape: Shape): Tensor => one('Reshape', [x], { shape: [...shape] });
export const transpose = (x: Tensor, perm: readonly number[]): Tensor => one('Transpose', [x], { perm: [...perm] });
export const expand = (x: Tensor, shape: Shape): Tensor => one('Expand', [x], { shape: [...shape] });
/** Step-1 slice; `axes` defaults to 0..n-1; Number.MAX_SAFE_INTEGER as an end means "to the end". */
export const slice = (x: Tensor, starts: readonly Dim[], ends: readonly Dim[], axes?: readonly number[]): Tensor =>
  one('Slice', [x], { starts: [...starts], ends: [...ends], axes: axes === undefined ? undefined : [...axes] });
/** ONNX pads layout: [begin_0, ..., begin_n, end_0, ..., end_n]; constant fill. */
export const pad = (x: Tensor, pads: readonly Dim[], value = 0): Tensor => one('Pad', [x], { pads: [...pads], value });
export const concat = (xs: readonly Tensor[], axis: number): Tensor => one('Concat', xs, { axis });
export const split = (x: Tensor, axis: number, sizes: readonly Dim[]): Tensor[] => apply('Split', [x], { axis, sizes: [...sizes] });
export const trilu = (x: Tensor, upper: boolean, k = 0): Tensor => one('Trilu', [x], { upper, k });

export const gather = (x: Tensor, indices: Tensor, axis = 0): Tensor => one('Gather', [x, indices], { axis });
export const gatherElements = (x: Tensor, indices: Tensor, axis = 0): Tensor => one('GatherElements', [x, indices], { axis });
export const gatherND = (x: Tensor, indices: Tensor): Tensor => one('GatherND', [x, indices]);
export const scatterElements = (x: Tensor, indices: Tensor, updates: Tensor, axis = 0, reduction: 'none' | 'add' = 'none'): Tensor =>
  one('ScatterElements', [x, indices, updates], { axis, reduction });
export const scatterND = (x: Tensor, indices: Tensor, updates: Tensor, reduction: 'none' | 'add' = 'none'): Tensor =>
  one('ScatterND', [x, indices, updates], { reduction });
