// Reverse-mode autodiff over the IR, and the vjp split that per-layer training runs on.
//
// grad() walks the graph backwards from the outputs, only through nodes that both depend on a chosen tensor and lead
// to an output, so frozen weights and everything upstream of nothing trainable get no gradient work. Each node's rule
// comes from the op table (ops.ts); the walker checks that it returns one cotangent (or null) per input, with the
// input's shape and dtype, and throws naming the op otherwise.

import { type Graph, type Tensor, GraphError, fmtShape, isFloat, shapeEq } from './ir.ts';
import { OPS, add, ones, zerosLike } from './ops.ts';

/**
 * Gradients of `outputs` toward `wrt`, as new nodes in the same graph. `seeds` are the output cotangents (one per
 * output; null or omitted means ones, which for a scalar loss is dL/dL = 1). A wrt tensor that no output depends on
 * gets zeros.
 */
export function grad(outputs: readonly Tensor[], wrt: readonly Tensor[], seeds?: readonly (Tensor | null)[]): Tensor[] {
  if (outputs.length === 0) throw new GraphError('grad', 'no outputs to differentiate');
  const g = outputs[0]!.graph;
  for (const t of [...outputs, ...wrt]) {
    if (t.graph !== g) throw new GraphError('grad', `tensor ${t.toString()} is not in graph '${g.name}'`);
  }
  for (const w of wrt) if (!isFloat(w.dtype)) throw new GraphError('grad', `cannot differentiate toward ${w.dtype} tensor ${w.toString()}`);
  if (seeds !== undefined && seeds.length !== outputs.length) {
    throw new GraphError('grad', `${seeds.length} seeds for ${outputs.length} outputs`);
  }

  const nodes = [...g.nodes]; // ids grow as nodes are added, so this order is topological
  const dep = new Set<Tensor>(wrt);
  for (const n of nodes) {
    if (n.op === 'StopGradient') continue;
    if (n.inputs.some((i) => dep.has(i))) for (const o of n.outputs) if (isFloat(o.dtype)) dep.add(o);
  }
  const live = new Set<Tensor>(outputs);
  for (let k = nodes.length - 1; k >= 0; k--) {
    const n = nodes[k]!;
    if (n.outputs.some((o) => live.has(o))) for (const i of n.inputs) live.add(i);
  }

  const cot = new Map<Tensor, Tensor>();
  const accumulate = (t: Tensor, c: Tensor, op: string): void => {
    if (!shapeEq(c.shape, t.shape) || c.dtype !== t.dtype) {
      throw new GraphError(op, `gradient rule gave ${c.dtype}${fmtShape(c.shape)} for input ${t.dtype}${fmtShape(t.shape)}`);
    }
    const prev = cot.get(t);
    cot.set(t, prev === undefined ? c : add(prev, c));
  };

  outputs.forEach((o, k) => {
    if (!dep.has(o)) return;
    const s = seeds?.[k] ?? ones(g, o.dtype, o.shape);
    accumulate(o, s, 'grad seed');
  });

  for (let k = nodes.length - 1; k >= 0; k--) {
    const n = nodes[k]!;
    if (n.op === 'Input' || n.op === 'Constant') continue;
    const gOut = n.outputs.map((o) => cot.get(o) ?? null);
    if (gOut.every((x) => x === null)) continue;
    const needs = n.inputs.map((i) => dep.has(i) && live.has(i) && isFloat(i.dtype));
    if (!needs.some(Boolean)) continue;
    const rule = OPS.get(n.op)?.grad;
    if (rule === undefined) throw new GraphError(n.op, `no gradient rule: cannot differentiate through ${n.op} (node ${n.id})`);
    const res = rule({ node: n, gOut, needs });
    if (res.length !== n.inputs.length) {
      throw new GraphError(n.op, `gradient rule returned ${res.length} gradients for ${n.inputs.length} inputs`);
    }
    res.forEach((c, i) => {
      if (needs[i] && c !== null) accumulate(n.inputs[i]!, c, n.op);
    });
  }
  return wrt.map((w) => cot.get(w) ?? zerosLike(w));
}

export interface VjpOptions {
  /** Graph outputs to differentiate (their cotangents become backward inputs). Default: every output. */
  outputs?: readonly string[];
  /** Graph inputs to differentiate toward: the layer input and the trainable parameters (never frozen weights). */
  wrt: readonly string[];
  /** Backward takes the forward inputs and recomputes the forward instead of taking stored residuals. */
  recompute?: boolean;
}

export interface VjpSplit {
  /** The forward graph: every original output, then the residuals (none with recompute). */
  forward: Graph;
  /** The backward graph: inputs are residuals, the frozen inputs it reads, and cotangents; outputs the gradients. */
  backward: Graph;
  /** Names of the forward outputs that the backward takes as inputs under the same names ('res_k', or an output). */
  residuals: string[];
  /** Output name -> name of its cotangent input in the backward graph ('y' -> 'd_y'). */
  cotangents: Record<string, string>;
  /** wrt input name -> name of its gradient output in the backward graph ('x' -> 'd_x'). */
  gradients: Record<string, string>;
}

/**
 * Splits a forward graph into forward-with-residuals and backward graphs (a vjp). Residuals are the forward values
 * the backward nodes read; forward inputs the backward reads (frozen weights, the layer input) are inputs of the
 * backward graph under their own names, never copied through the forward; constants are duplicated.
 */
export function vjpSplit(graph: Graph, opts: VjpOptions): VjpSplit {
  const { graph: c } = graph.clone(graph.name);
  const outNames = opts.outputs ?? c.outputs.map((o) => o.name);
  const outs = outNames.map((n) => c.getOutput(n));
  const wrt = opts.wrt.map((n) => c.getInput(n));
  const forwardNodes = new Set(c.nodes);

  const cotangents: Record<string, string> = {};
  const seeds = outs.map((t, k) => {
    const name = `d_${outNames[k]!}`;
    cotangents[outNames[k]!] = name;
    return c.input(name, t.dtype, t.shape);
  });
  const grads = grad(outs, wrt, seeds);
  const gradients: Record<string, string> = {};
  const gradOutputs = opts.wrt.map((n, k) => {
    gradients[n] = `d_${n}`;
    return { name: `d_${n}`, tensor: grads[k]! };
  });
  for (const o of gradOutputs) {
    if (c.hasInput(o.name)) throw new GraphError('vjpSplit', `gradient name '${o.name}' clashes with an input of '${graph.name}'`);
  }

  if (opts.recompute === true) {
    return {
      forward: c.extract(`${graph.name}_fwd`, c.outputs),
      backward: c.extract(`${graph.name}_bwd_recompute`, gradOutputs),
      residuals: [],
      cotangents,
      gradients,
    };
  }

  // Residuals: forward values (not inputs, not constants) that a backward node reads. One that is already a forward
  // output keeps that output's name, so it is neither emitted nor stored twice.
  const outputName = new Map<Tensor, string>();
  for (const o of c.outputs) if (!outputName.has(o.tensor)) outputName.set(o.tensor, o.name);
  const residuals = new Map<Tensor, string>();
  const seen = new Set<Tensor>();
  const stack = gradOutputs.map((o) => o.tensor);
  while (stack.length > 0) {
    const t = stack.pop()!;
    if (seen.has(t)) continue;
    seen.add(t);
    if (forwardNodes.has(t.node)) {
      if (t.node.op !== 'Input' && t.node.op !== 'Constant') residuals.set(t, outputName.get(t) ?? `res_${residuals.size}`);
      continue;
    }
    for (const i of t.node.inputs) stack.push(i);
  }
  const residualOutputs = [...residuals].map(([tensor, name]) => ({ name, tensor }));
  const extra = residualOutputs.filter((r) => !c.outputs.some((o) => o.name === r.name));
  return {
    forward: c.extract(`${graph.name}_fwd`, [...c.outputs, ...extra]),
    backward: c.extract(`${graph.name}_bwd`, gradOutputs, residuals),
    residuals: residualOutputs.map((r) => r.name),
    cotangents,
    gradients,
  };
}
