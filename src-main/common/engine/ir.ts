// The engine's graph IR: tensors with dtypes and (symbolic) shapes, nodes, and a Graph builder. Pure TS.
//
// How to use it (op functions: ops.ts; composites: composites.ts; autodiff: autodiff.ts; emission and sessions:
// node/engine/onnx.ts and runtime.ts):
//
//   import { Graph } from './ir.ts';
//   import * as op from './ops.ts';
//   import { grad, vjpSplit } from './autodiff.ts';
//
//   // 1. Build: inputs have a dtype and a shape whose dims are numbers or symbols ('T' is bound per bucket).
//   const g = new Graph('lora_linear');
//   const x = g.input('x', 'float32', ['T', 64]);            // activations [T, in]
//   const w = g.input('w', 'float32', [32, 64]);             // frozen weight, HF [out, in]: a graph input
//   const a = g.input('a', 'float32', [8, 64]);              // LoRA A [r, in]
//   const b = g.input('b', 'float32', [32, 8]);              // LoRA B [out, r]
//   const y = op.add(op.gemm(x, w, { transB: true }),        // [T, out] = x·wᵀ + 2·(x·aᵀ)·bᵀ
//                    op.mul(op.gemm(op.gemm(x, a, { transB: true }), b, { transB: true }), 2));
//   g.output('y', y);
//
//   // 2a. Gradients in the same graph (w gets no gradient work: it is not asked for):
//   const loss = op.reduceSum(op.mul(y, y), [], false);     // [] scalar
//   const [da, db] = grad([loss], [a, b]);                   // seeds default to ones; pass cotangents otherwise
//   g.output('loss', loss); g.output('da', da!); g.output('db', db!);
//
//   // 2b. Or the per-layer vjp split of a forward-only graph `f` (outputs 'y'; inputs x, w, a, b):
//   const s = vjpSplit(f, { outputs: ['y'], wrt: ['x', 'a', 'b'] });  // { recompute: true } for activation recompute
//   //   s.forward:  f's inputs -> 'y' and s.residuals ('res_0', ...)
//   //   s.backward: s.residuals + the inputs it reads (w, ...) + 'd_y' (s.cotangents) -> 'd_x', 'd_a', 'd_b' (s.gradients)
//
//   // 3. Emit and run (node side): sessions are cached per (graph, bindings, provider).
//   //   const rt = new Runtime();                             // { provider: 'cpu' | 'cuda' | 'dml' | 'webgpu' }
//   //   const out = await rt.run(g, { T: 16 }, { x: Float32Array, w, a, b });   // -> { y: { data, dims }, ... }
//   //   const bytes = toOnnx(g, { bindings: { T: 16 } });     // the ModelProto, if you want the file
//
// Build float64 graphs (same code, dtype 'float64') for gradient checks.
// Dims are numbers or symbols. A symbol string may be a product such as '2*T' or 'H*T' (kept canonical, sorted), so
// Reshape can fold and split symbolic axes; symbols are bound to numbers when a graph is emitted for a shape bucket.

import { ReinError } from '../errors.ts';

export type DType = 'float32' | 'float64' | 'int64' | 'bool' | 'uint8';
export type Dim = number | string;
export type Shape = readonly Dim[];
export type Bindings = Readonly<Record<string, number>>;

export type AttrValue = number | string | boolean | readonly Dim[] | readonly number[];
export type Attrs = Readonly<Record<string, AttrValue | undefined>>;

/** A malformed graph: an op given inputs of the wrong shape or dtype, an unbound symbol, a bad attribute. */
export class GraphError extends ReinError {
  readonly op: string;
  constructor(op: string, message: string, detail?: unknown) {
    super('bad_input', `${op}: ${message}`, { detail: { op, ...(detail === undefined ? {} : { detail }) } });
    this.name = 'GraphError';
    this.op = op;
  }
}

export const isFloat = (d: DType): boolean => d === 'float32' || d === 'float64';

// --- symbolic dims: a dim is coef * sym1 * sym2 ... (a monomial) --------------------------------------------------

interface Mono {
  coef: number;
  syms: string[]; // sorted, with repeats
}

function parseDim(d: Dim): Mono {
  if (typeof d === 'number') return { coef: d, syms: [] };
  let coef = 1;
  const syms: string[] = [];
  for (const part of d.split('*')) {
    const p = part.trim();
    if (p === '') throw new GraphError('Dim', `bad symbolic dim '${d}'`);
    if (/^\d+$/.test(p)) coef *= Number(p);
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(p)) syms.push(p);
    else throw new GraphError('Dim', `bad symbolic dim '${d}': '${p}' is neither a symbol nor an integer`);
  }
  syms.sort();
  return { coef, syms };
}

function formatMono(m: Mono): Dim {
  if (m.syms.length === 0) return m.coef;
  return m.coef === 1 ? m.syms.join('*') : `${m.coef}*${m.syms.join('*')}`;
}

/** Canonical form, so that equal dims compare equal as strings ('T*2' -> '2*T'). */
export function dim(d: Dim): Dim {
  return formatMono(parseDim(d));
}

export function dimEq(a: Dim, b: Dim): boolean {
  return dim(a) === dim(b);
}

export function dimMul(a: Dim, b: Dim): Dim {
  const x = parseDim(a);
  const y = parseDim(b);
  return formatMono({ coef: x.coef * y.coef, syms: [...x.syms, ...y.syms].sort() });
}

/** Exact division of monomials, or undefined when it does not divide (a symbol missing, a coefficient not a factor). */
export function dimDiv(a: Dim, b: Dim): Dim | undefined {
  const x = parseDim(a);
  const y = parseDim(b);
  if (y.coef === 0 || x.coef % y.coef !== 0) return undefined;
  const rest = [...x.syms];
  for (const s of y.syms) {
    const i = rest.indexOf(s);
    if (i < 0) return undefined;
    rest.splice(i, 1);
  }
  return formatMono({ coef: x.coef / y.coef, syms: rest });
}

/** Sum of like monomials ('T' + 'T' = '2*T'; 3 + 4 = 7), or undefined when they are unlike ('T' + 1). */
export function dimAdd(a: Dim, b: Dim): Dim | undefined {
  const x = parseDim(a);
  const y = parseDim(b);
  if (x.coef === 0) return formatMono(y);
  if (y.coef === 0) return formatMono(x);
  if (x.syms.join('*') !== y.syms.join('*')) return undefined;
  return formatMono({ coef: x.coef + y.coef, syms: x.syms });
}

/** Difference of like monomials, or undefined. */
export function dimSub(a: Dim, b: Dim): Dim | undefined {
  const x = parseDim(a);
  const y = parseDim(b);
  if (y.coef === 0) return formatMono(x);
  if (x.syms.join('*') !== y.syms.join('*') || x.coef < y.coef) return undefined;
  return formatMono({ coef: x.coef - y.coef, syms: x.coef === y.coef ? [] : x.syms });
}

export function dimProduct(dims: Shape): Dim {
  let p: Dim = 1;
  for (const d of dims) p = dimMul(p, d);
  return p;
}

export function isStaticDim(d: Dim): d is number {
  return typeof d === 'number' || parseDim(d).syms.length === 0;
}

export function bindDim(d: Dim, bindings: Bindings, where = 'bind'): number {
  const m = parseDim(d);
  let v = m.coef;
  for (const s of m.syms) {
    const b = bindings[s];
    if (b === undefined || !Number.isInteger(b) || b < 0) {
      throw new GraphError(where, `symbol '${s}' is not bound to a non-negative integer`, { bindings });
    }
    v *= b;
  }
  return v;
}

export function bindShape(s: Shape, bindings: Bindings, where = 'bind'): number[] {
  return s.map((d) => bindDim(d, bindings, where));
}

export function shapeEq(a: Shape, b: Shape): boolean {
  return a.length === b.length && a.every((d, i) => dimEq(d, b[i]!));
}

export function fmtShape(s: Shape): string {
  return `[${s.join(', ')}]`;
}

/** The symbols a shape mentions. */
export function shapeSymbols(s: Shape): string[] {
  const out = new Set<string>();
  for (const d of s) for (const sym of parseDim(d).syms) out.add(sym);
  return [...out];
}

// --- tensors, nodes, graphs ------------------------------------------------------------------------------------------

export class Tensor {
  readonly graph: Graph;
  readonly id: number;
  readonly dtype: DType;
  readonly shape: Shape;
  /** The node that produces it ('Input' and 'Constant' are nodes too). */
  readonly node: Node;
  /** Which output of its node it is. */
  readonly index: number;
  constructor(graph: Graph, id: number, dtype: DType, shape: Shape, node: Node, index: number) {
    this.graph = graph;
    this.id = id;
    this.dtype = dtype;
    this.shape = shape.map(dim);
    this.node = node;
    this.index = index;
  }
  get rank(): number {
    return this.shape.length;
  }
  toString(): string {
    return `${this.node.op}#${this.id}:${this.dtype}${fmtShape(this.shape)}`;
  }
}

export interface Node {
  readonly id: number;
  readonly op: string;
  readonly inputs: readonly Tensor[];
  readonly outputs: Tensor[];
  readonly attrs: Attrs;
}

export interface OutputSpec {
  dtype: DType;
  shape: Shape;
}

let graphSerial = 0;

export class Graph {
  readonly name: string;
  /** Unique per Graph object; the runtime caches sessions per (key, bindings, provider). */
  readonly key: string;
  readonly nodes: Node[] = [];
  readonly inputs: Tensor[] = [];
  readonly outputs: { name: string; tensor: Tensor }[] = [];
  private nextId = 0;
  private inputByName = new Map<string, Tensor>();

  constructor(name = 'graph') {
    this.name = name;
    this.key = `${name}#${++graphSerial}`;
  }

  /** Low level: appends a node whose output types the caller computed. Ops use `apply` in ops.ts instead. */
  addNode(op: string, inputs: readonly Tensor[], attrs: Attrs, outs: readonly OutputSpec[]): Node {
    for (const t of inputs) {
      if (t.graph !== this) throw new GraphError(op, `input ${t.toString()} belongs to graph '${t.graph.name}', not '${this.name}'`);
    }
    const node: Node = { id: this.nextId++, op, inputs: [...inputs], outputs: [], attrs };
    for (let i = 0; i < outs.length; i++) {
      node.outputs.push(new Tensor(this, this.nextId++, outs[i]!.dtype, outs[i]!.shape, node, i));
    }
    this.nodes.push(node);
    return node;
  }

  input(name: string, dtype: DType, shape: Shape): Tensor {
    if (this.inputByName.has(name)) throw new GraphError('Input', `graph '${this.name}' already has an input '${name}'`);
    if (name === '') throw new GraphError('Input', 'an input needs a name');
    for (const d of shape) {
      if (typeof d === 'number' && !(Number.isInteger(d) && d >= 0)) throw new GraphError('Input', `input '${name}' has a bad dim ${d} in ${fmtShape(shape)}`);
      if (typeof d === 'string') dim(d); // throws on a malformed symbol
    }
    const t = this.addNode('Input', [], { name }, [{ dtype, shape }]).outputs[0]!;
    this.inputByName.set(name, t);
    this.inputs.push(t);
    return t;
  }

  /** Looks up a graph input by name. */
  getInput(name: string): Tensor {
    const t = this.inputByName.get(name);
    if (t === undefined) throw new GraphError('Input', `graph '${this.name}' has no input '${name}'`);
    return t;
  }

  /** Input names, in declaration order. */
  get inputNames(): string[] {
    return this.inputs.map((t) => t.node.attrs['name'] as string);
  }

  get outputNames(): string[] {
    return this.outputs.map((o) => o.name);
  }

  hasInput(name: string): boolean {
    return this.inputByName.has(name);
  }

  /**
   * A constant, emitted as an initializer. `values` is row-major; entries may be dims ('T', '2*H'), bound to numbers
   * when the graph is emitted (how Reshape targets and 1/N scales stay concrete per bucket). The shape is static.
   */
  constant(dtype: DType, shape: readonly number[], values: readonly Dim[]): Tensor {
    const n = shape.reduce((p, d) => p * d, 1);
    if (values.length !== n) {
      throw new GraphError('Constant', `${values.length} values for shape ${fmtShape(shape)} (needs ${n})`);
    }
    return this.addNode('Constant', [], { values: [...values] }, [{ dtype, shape }]).outputs[0]!;
  }

  scalar(value: Dim, dtype: DType = 'float32'): Tensor {
    return this.constant(dtype, [], [value]);
  }

  output(name: string, t: Tensor): Tensor {
    if (t.graph !== this) throw new GraphError('Output', `tensor ${t.toString()} belongs to graph '${t.graph.name}'`);
    if (this.outputs.some((o) => o.name === name)) throw new GraphError('Output', `graph '${this.name}' already has an output '${name}'`);
    this.outputs.push({ name, tensor: t });
    return t;
  }

  getOutput(name: string): Tensor {
    const o = this.outputs.find((x) => x.name === name);
    if (o === undefined) throw new GraphError('Output', `graph '${this.name}' has no output '${name}'`);
    return o.tensor;
  }

  /** The symbols used by inputs, outputs and node shapes: what must be bound to emit. */
  symbols(): string[] {
    const out = new Set<string>();
    for (const n of this.nodes) for (const t of n.outputs) for (const s of shapeSymbols(t.shape)) out.add(s);
    return [...out].sort();
  }

  /**
   * A new graph holding only what `outputs` need. Tensors in `cuts` become inputs of the new graph under the given
   * names (their producers are not copied); inputs of this graph that are reached keep their names; constants are
   * copied. This is how the vjp split carves the forward and backward graphs.
   */
  extract(name: string, outputs: readonly { name: string; tensor: Tensor }[], cuts: ReadonlyMap<Tensor, string> = new Map()): Graph {
    const g = new Graph(name);
    const needed = new Set<Node>();
    const cutSet = new Set(cuts.keys());
    const stack = outputs.map((o) => o.tensor);
    const seen = new Set<Tensor>();
    while (stack.length > 0) {
      const t = stack.pop()!;
      if (seen.has(t)) continue;
      seen.add(t);
      if (t.graph !== this) throw new GraphError('extract', `tensor ${t.toString()} is not in graph '${this.name}'`);
      if (cutSet.has(t)) continue;
      needed.add(t.node);
      for (const i of t.node.inputs) stack.push(i);
    }
    const map = new Map<Tensor, Tensor>();
    // Cut inputs first, in the order given, then original inputs in their order: a stable input list.
    for (const [t, n] of cuts) if (seen.has(t)) map.set(t, g.input(n, t.dtype, t.shape));
    for (const t of this.inputs) {
      if (needed.has(t.node) && !map.has(t)) map.set(t, g.input(t.node.attrs['name'] as string, t.dtype, t.shape));
    }
    for (const n of this.nodes) {
      if (!needed.has(n) || n.op === 'Input') continue;
      if (n.outputs.every((o) => map.has(o))) continue;
      const ins = n.inputs.map((i) => {
        const m = map.get(i);
        if (m === undefined) throw new GraphError(n.op, `extract: input ${i.toString()} was not mapped`);
        return m;
      });
      const copy = g.addNode(n.op, ins, n.attrs, n.outputs.map((o) => ({ dtype: o.dtype, shape: o.shape })));
      n.outputs.forEach((o, k) => map.set(o, copy.outputs[k]!));
    }
    for (const o of outputs) g.output(o.name, map.get(o.tensor)!);
    return g;
  }

  /** A full copy, and the map from this graph's tensors to the copy's. */
  clone(name = this.name): { graph: Graph; map: Map<Tensor, Tensor> } {
    const g = new Graph(name);
    const map = new Map<Tensor, Tensor>();
    for (const n of this.nodes) {
      if (n.op === 'Input') {
        const t = n.outputs[0]!;
        map.set(t, g.input(n.attrs['name'] as string, t.dtype, t.shape));
        continue;
      }
      const copy = g.addNode(n.op, n.inputs.map((i) => map.get(i)!), n.attrs, n.outputs.map((o) => ({ dtype: o.dtype, shape: o.shape })));
      n.outputs.forEach((o, k) => map.set(o, copy.outputs[k]!));
    }
    for (const o of this.outputs) g.output(o.name, map.get(o.tensor)!);
    return { graph: g, map };
  }
}
