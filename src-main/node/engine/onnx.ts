// ONNX emission: an IR Graph, with its symbols bound for one shape bucket, becomes a serialized ModelProto
// (onnx-proto's protobufjs static classes; IR version 8, opset 18 per https://onnx.ai/onnx/operators/, plus the
// com.microsoft domain for contrib ops such as MatMulNBits). Frozen weights stay graph inputs; only constants the
// graph itself holds (axes, shapes, scalars) become initializers.

import onnxProto from 'onnx-proto';
import { type Bindings, type DType, type Graph, type Node, type Tensor, GraphError, bindDim, bindShape, isFloat } from '../../common/engine/ir.ts';
import { type ComputeDType, type OnnxConst, ONNX_COMPUTE_DTYPE, ONNX_DTYPE, opDef } from '../../common/engine/ops.ts';

const { onnx } = onnxProto;

export const IR_VERSION = 8;
export const OPSET = 18;
export const MS_DOMAIN = 'com.microsoft';

export interface EmitOptions {
  /** Values for the graph's symbols ('T' -> 512). Every symbol the emitted part uses must be bound. */
  bindings?: Bindings;
  /**
   * Graph inputs to emit as constant initializers, by name, where an op prepacks them (OnnxEmit.prepacked: ORT then
   * packs MatMulNBits' weights once, at session creation). Every other consumer of the same input still reads the fed
   * input, so nothing else is constant-folded (a dequantization of a constant weight would be folded into f32).
   */
  constants?: Readonly<Record<string, Float32Array | Uint8Array>>;
}

/** The graph inputs that `constants` would make initializers (those an op that prepacks reads), in graph order. */
export function prepackedInputs(graph: Graph, constants: Readonly<Record<string, unknown>>): string[] {
  const found = new Set<string>();
  for (const n of graph.nodes) {
    if (n.op === 'Input' || n.op === 'Constant' || !n.inputs.some((t) => t.node.op === 'Input' && (t.node.attrs['name'] as string) in constants)) continue;
    const e = opDef(n.op).emit(n, {});
    for (const i of e.prepacked ?? []) {
      const t = n.inputs[i];
      const name = t?.node.op === 'Input' ? (t.node.attrs['name'] as string) : undefined;
      if (name !== undefined && name in constants) found.add(name);
    }
  }
  return graph.inputs.map((t) => t.node.attrs['name'] as string).filter((n) => found.has(n));
}

function typedBytes(dtype: DType, values: readonly number[]): Uint8Array {
  let arr: Float32Array | Float64Array | BigInt64Array | Uint8Array;
  if (dtype === 'float32') arr = Float32Array.from(values);
  else if (dtype === 'float64') arr = Float64Array.from(values);
  else if (dtype === 'int64') arr = BigInt64Array.from(values.map((v) => BigInt(v)));
  else if (dtype === 'uint8') arr = Uint8Array.from(values);
  else arr = Uint8Array.from(values.map((v) => (v ? 1 : 0)));
  // TensorProto.raw_data is little-endian (onnx.proto); every platform ORT ships for is little-endian.
  return new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
}

function tensorProto(name: string, c: OnnxConst): onnxProto.onnx.ITensorProto {
  return { name, dataType: ONNX_DTYPE[c.dtype], dims: c.dims, rawData: typedBytes(c.dtype, c.values) };
}

function valueInfo(name: string, t: Tensor, b: Bindings): onnxProto.onnx.IValueInfoProto {
  return {
    name,
    type: { tensorType: { elemType: ONNX_DTYPE[t.dtype], shape: { dim: bindShape(t.shape, b, `value '${name}'`).map((d) => ({ dimValue: d })) } } },
  };
}

/** The ModelProto of `graph` with its symbols bound. Nodes that no output needs are left out. */
export function toModelProto(graph: Graph, opts: EmitOptions = {}): onnxProto.onnx.IModelProto {
  const b = opts.bindings ?? {};
  if (graph.outputs.length === 0) throw new GraphError('emit', `graph '${graph.name}' has no outputs`);

  const needed = new Set<Node>();
  const stack = graph.outputs.map((o) => o.tensor);
  while (stack.length > 0) {
    const t = stack.pop()!;
    if (needed.has(t.node)) continue;
    needed.add(t.node);
    for (const i of t.node.inputs) stack.push(i);
  }

  const names = new Map<Tensor, string>();
  const inputNames = new Set<string>();
  for (const t of graph.inputs) {
    const n = t.node.attrs['name'] as string;
    names.set(t, n);
    inputNames.add(n);
  }
  // Every value name is unique in an ONNX graph; generated names step around the user's input and output names.
  const taken = new Set<string>([...inputNames, ...graph.outputs.map((o) => o.name)]);
  const fresh = (base: string): string => {
    let n = base;
    for (let i = 1; taken.has(n); i++) n = `${base}_${i}`;
    taken.add(n);
    return n;
  };
  // An output takes over its producer's value name, unless that value is an input, a constant, or already named by
  // another output: then an Identity carries it (ONNX names each value once).
  const aliases: { from: Tensor; to: string }[] = [];
  for (const o of graph.outputs) {
    if (inputNames.has(o.name)) throw new GraphError('emit', `output '${o.name}' has the name of an input of '${graph.name}'`);
    if (o.tensor.node.op === 'Input' || o.tensor.node.op === 'Constant' || names.has(o.tensor)) aliases.push({ from: o.tensor, to: o.name });
    else names.set(o.tensor, o.name);
  }
  const nameOf = (t: Tensor): string => {
    let n = names.get(t);
    if (n === undefined) {
      n = fresh(`v${t.id}`);
      names.set(t, n);
    }
    return n;
  };

  const initializers: onnxProto.onnx.ITensorProto[] = [];
  const consts = opts.constants ?? {};
  const constNames = new Map<string, string>(); // input name → its initializer's name
  const constOf = (t: Tensor): string => {
    const input = t.node.attrs['name'] as string;
    let n = constNames.get(input);
    if (n === undefined) {
      n = fresh(`${input}_const`);
      constNames.set(input, n);
      const a = consts[input]!;
      const dims = bindShape(t.shape, b, `constant '${input}'`);
      initializers.push({ name: n, dataType: ONNX_DTYPE[t.dtype], dims, rawData: new Uint8Array(a.buffer, a.byteOffset, a.byteLength) });
    }
    return n;
  };
  const nodes: onnxProto.onnx.INodeProto[] = [];
  const domains = new Set<string>();
  let k = 0;
  for (const n of graph.nodes) {
    if (!needed.has(n) || n.op === 'Input') continue;
    if (n.op === 'Constant') {
      const t = n.outputs[0]!;
      const values = (n.attrs['values'] as readonly (number | string)[]).map((v) => bindDim(v, b, 'Constant'));
      initializers.push(tensorProto(nameOf(t), { dtype: t.dtype, dims: t.shape as number[], values }));
      continue;
    }
    const e = opDef(n.op).emit(n, b);
    const cast = (from: string, to: ComputeDType, out: string): void => {
      nodes.push({ name: `cast_${out}`, opType: 'Cast', domain: '', input: [from], output: [out], attribute: [{ name: 'to', type: onnx.AttributeProto.AttributeType.INT, i: ONNX_COMPUTE_DTYPE[to] }] });
    };
    const via = e.computeAs;
    const inputs = e.inputs.map((x) => {
      if (x === null) return '';
      if (typeof x === 'number') {
        const t = n.inputs[x]!;
        if (e.prepacked?.includes(x) === true && t.node.op === 'Input' && (t.node.attrs['name'] as string) in consts) return constOf(t);
        if (via === undefined || !isFloat(t.dtype) || t.dtype === via) return nameOf(t);
        const name = fresh(`${nameOf(t)}_as_${via}`);
        cast(nameOf(t), via, name);
        return name;
      }
      const name = fresh(`k${k++}_${n.op}`);
      initializers.push(tensorProto(name, x));
      return name;
    });
    const outputs = n.outputs.map((t) => (via === undefined || !isFloat(t.dtype) || t.dtype === via ? nameOf(t) : fresh(`${nameOf(t)}_${via}`)));
    const attribute = e.attrs.map((a): onnxProto.onnx.IAttributeProto => {
      const A = onnx.AttributeProto.AttributeType;
      switch (a.type) {
        case 'int':
          return { name: a.name, type: A.INT, i: a.value as number };
        case 'float':
          return { name: a.name, type: A.FLOAT, f: a.value as number };
        case 'ints':
          return { name: a.name, type: A.INTS, ints: a.value as number[] };
        case 'floats':
          return { name: a.name, type: A.FLOATS, floats: a.value as number[] };
        case 'string':
          return { name: a.name, type: A.STRING, s: new TextEncoder().encode(a.value as string) };
      }
    });
    if (e.domain !== undefined && e.domain !== '') domains.add(e.domain);
    nodes.push({ name: `n${n.id}_${n.op}`, opType: e.opType, domain: e.domain ?? '', input: inputs, output: outputs, attribute });
    n.outputs.forEach((t, i) => {
      if (outputs[i] !== nameOf(t)) cast(outputs[i]!, t.dtype, nameOf(t));
    });
  }
  for (const a of aliases) nodes.push({ name: `out_${a.to}`, opType: 'Identity', domain: '', input: [nameOf(a.from)], output: [a.to] });

  const read = new Set(nodes.flatMap((n) => n.input ?? []));
  const usedInputs = graph.inputs.filter((t) => needed.has(t.node) && (read.has(names.get(t)!) || graph.outputs.some((o) => o.tensor === t)));
  const opsetImport: onnxProto.onnx.IOperatorSetIdProto[] = [{ domain: '', version: OPSET }];
  for (const d of domains) opsetImport.push({ domain: d, version: 1 });
  return {
    irVersion: IR_VERSION,
    producerName: 'rein',
    opsetImport,
    graph: {
      name: graph.name,
      node: nodes,
      initializer: initializers,
      input: usedInputs.map((t) => valueInfo(names.get(t)!, t, b)),
      output: graph.outputs.map((o) => valueInfo(o.name, o.tensor, b)),
    },
  };
}

/** Serialized ModelProto bytes, ready for InferenceSession.create. */
export function toOnnx(graph: Graph, opts: EmitOptions = {}): Uint8Array {
  return onnx.ModelProto.encode(onnx.ModelProto.fromObject(toModelProto(graph, opts))).finish();
}

/** ONNX element types of the values Runtime.upload copies (int32 carries bytes as words: WebGPU has no 8-bit type). */
export type UploadType = 'float32' | 'float64' | 'int64' | 'int32';
const UPLOAD_ELEM: Record<UploadType, number> = { float32: 1, float64: 11, int64: 7, int32: 6 };

/** A model of one Identity per input ('x0' → 'y0', …), each a flat [n]: what Runtime.upload runs. */
export function identityModel(values: readonly { type: UploadType; n: number }[]): Uint8Array {
  const info = (name: string, v: { type: UploadType; n: number }): onnxProto.onnx.IValueInfoProto => ({
    name,
    type: { tensorType: { elemType: UPLOAD_ELEM[v.type], shape: { dim: [{ dimValue: v.n }] } } },
  });
  const model: onnxProto.onnx.IModelProto = {
    irVersion: IR_VERSION,
    producerName: 'rein',
    opsetImport: [{ domain: '', version: OPSET }],
    graph: {
      name: 'upload',
      node: values.map((_, k) => ({ name: `copy${k}`, opType: 'Identity', domain: '', input: [`x${k}`], output: [`y${k}`] })),
      input: values.map((v, k) => info(`x${k}`, v)),
      output: values.map((v, k) => info(`y${k}`, v)),
    },
  };
  return onnx.ModelProto.encode(onnx.ModelProto.fromObject(model)).finish();
}
