// Which ONNX op types an execution provider lacks, among those the training graphs lower to. One graph per op type,
// holding one node taken from a real lowered graph (a one-layer Qwen2's LoRA layer, its vjp splits with and without
// recompute, the quantized layer, the tiled head with and without the fused backward, the quantized head, the
// logits), is run on the provider; sessions on a GPU provider refuse CPU fallback (runtime.ts), so an op the provider
// has no kernel for fails here instead of running on the CPU. The objective graphs are not listed: they run on the
// CPU (node/training/objective-runner.ts). The op types that fail go to Runtime's missingOps, and the graphs are
// lowered with compositions in their place (common/engine/substitutes.ts).
import { vjpSplit } from '../../common/engine/autodiff.ts';
import { modelGraphs, parseModelConfig } from '../../common/engine/families/registry.ts';
import { type Bindings, type Node, type Tensor, Graph, bindShape } from '../../common/engine/ir.ts';
import { DEFAULT_LORA_TARGETS, loraInputNames } from '../../common/engine/lora.ts';
import { Rng } from '../../common/engine/rng.ts';
import { SUBSTITUTABLE, emittedOpType, opVariant } from '../../common/engine/substitutes.ts';
import { toModelProto } from './onnx.ts';
import { type ExecutionProvider, type Feed, Runtime } from './runtime.ts';

/** A one-layer Qwen2 (GQA, q/k/v biases, tied embeddings): the ops every family's layer and head graphs use. */
export const PROBE_CONFIG = {
  architectures: ['Qwen2ForCausalLM'],
  vocab_size: 96,
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 1,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-6,
  rope_theta: 10000,
  tie_word_embeddings: true,
};

const BINDINGS: Bindings = { T: 16 };

export interface OpCheck {
  /** ONNX op type with its domain when not the default, and its input types: 'com.microsoft.MatMulNBits(f32,u8,f32)'. */
  opType: string;
  ok: boolean;
  /** Why the provider could not run it (null when ok). */
  error: string | null;
  /** Whether common/engine/substitutes.ts has a composition for it. */
  substitutable: boolean;
}

export interface OpProbe {
  provider: ExecutionProvider;
  checked: OpCheck[];
  /** The variants that failed: what Runtime's missingOps gets. */
  missing: string[];
  seconds: number;
}

/** The graphs one training step runs on the provider, lowered for a one-layer Qwen2 (f32, and block-quantized). */
export function trainingGraphs(): Graph[] {
  const fam = modelGraphs(parseModelConfig(PROBE_CONFIG));
  const lora = { targets: DEFAULT_LORA_TARGETS, r: 4, scale: 2 };
  const layer = fam.layer('float32', lora);
  const wrt = ['x', ...DEFAULT_LORA_TARGETS.flatMap((m) => [loraInputNames(m).a, loraInputNames(m).b])];
  const split = vjpSplit(layer, { outputs: ['y'], wrt });
  const recompute = vjpSplit(layer, { outputs: ['y'], wrt, recompute: true });
  const tiles = { tileValues: 1024 }; // three tiles of the 96 × 32 lm_head
  const q4 = { bits: 4, zeroPoints: false } as const;
  const q8 = { bits: 8, zeroPoints: false } as const; // ORT 1.30 has no zero points for 8 bits (quant.ts)
  const q4zp = { bits: 4, zeroPoints: true } as const; // Q4_1, Q4_K
  return [
    layer,
    fam.layer('float32', null),
    split.forward,
    split.backward,
    recompute.forward,
    recompute.backward,
    fam.layer('float32', null, { q_proj: q4, o_proj: q8, k_proj: q4zp }),
    fam.head('float32', 'none', null, tiles),
    fam.head('float32', 'fused', null, tiles),
    fam.head('float32', 'none', q4, tiles),
    fam.logits('float32', null),
  ];
}

/**
 * One IR node per variant (op type and input types, substitutes.ts opVariant) of the ONNX ops the graphs emit, the
 * first met, in order of first appearance. The Identity emission adds (an output that is an input) maps to null.
 */
export function opTypeNodes(graphs: readonly Graph[]): Map<string, Node | null> {
  const found = new Map<string, Node | null>();
  for (const g of graphs) {
    const proto = toModelProto(g, { bindings: BINDINGS });
    const byName = new Map<string, Node>();
    for (const n of g.nodes) if (n.op !== 'Input' && n.op !== 'Constant') byName.set(`n${n.id}_${n.op}`, n);
    for (const p of proto.graph?.node ?? []) {
      const type = p.domain === undefined || p.domain === null || p.domain === '' ? p.opType! : `${p.domain}.${p.opType!}`;
      const n = byName.get(p.name ?? '');
      if (n !== undefined && emittedOpType(n, BINDINGS) === type) {
        const v = opVariant(n, BINDINGS);
        if (!found.has(v)) found.set(v, n);
      } else if (![...found.keys()].some((k) => k.startsWith(`${type}(`))) found.set(`${type}(f32)`, null);
    }
  }
  return found;
}

/** A graph of one node: `n` on fresh inputs of its input types (its constant inputs copied), every output an output. */
function nodeGraph(opType: string, n: Node | null): Graph {
  const g = new Graph(`probe_${opType}`);
  if (n === null) {
    // An Identity from emission: an output that is an input.
    g.output('y', g.input('x', 'float32', [4, 8]));
    return g;
  }
  const mapped = new Map<Tensor, Tensor>();
  const args = n.inputs.map((t) => {
    let m = mapped.get(t);
    if (m === undefined) {
      m = t.node.op === 'Constant' ? g.constant(t.dtype, t.shape as number[], t.node.attrs['values'] as number[]) : g.input(`in${mapped.size}`, t.dtype, t.shape);
      mapped.set(t, m);
    }
    return m;
  });
  const node = g.addNode(n.op, args, n.attrs, n.outputs.map((o) => ({ dtype: o.dtype, shape: o.shape })));
  node.outputs.forEach((o, k) => g.output(`out${k}`, o));
  return g;
}

/** Inputs in the middle of every op's domain: floats in [0.5, 1.5] (log, sqrt, division), indices 0. */
function probeFeeds(g: Graph): Record<string, Feed> {
  const rng = new Rng(5);
  const feeds: Record<string, Feed> = {};
  for (const t of g.inputs) {
    const n = bindShape(t.shape, BINDINGS).reduce((p, d) => p * d, 1);
    const name = t.node.attrs['name'] as string;
    if (t.dtype === 'float32' || t.dtype === 'float64') feeds[name] = Array.from({ length: n }, () => 0.5 + rng.uniform());
    else if (t.dtype === 'int64') feeds[name] = new BigInt64Array(n);
    else feeds[name] = Uint8Array.from({ length: n }, (_, i) => (t.dtype === 'bool' ? i % 2 : (i * 37) % 256));
  }
  return feeds;
}

/**
 * Runs each op type of the training graphs alone on `provider` and lists those that fail (on a GPU provider, a node
 * ORT would place on the CPU fails too). `missingOps` are lowered with their compositions, as Runtime would.
 */
export async function probeOps(provider: ExecutionProvider, graphs: readonly Graph[] = trainingGraphs()): Promise<OpProbe> {
  const t0 = performance.now();
  const rt = new Runtime({ provider, intraOpThreads: 1 });
  const checked: OpCheck[] = [];
  try {
    for (const [opType, n] of opTypeNodes(graphs)) {
      const g = nodeGraph(opType, n);
      let error: string | null = null;
      try {
        await rt.run(g, BINDINGS, probeFeeds(g));
      } catch (e) {
        error = e instanceof Error ? e.message : String(e);
      }
      await rt.dispose(g);
      checked.push({ opType, ok: error === null, error, substitutable: SUBSTITUTABLE.includes(n?.op ?? opType) });
    }
  } finally {
    await rt.dispose();
  }
  return { provider, checked, missing: checked.filter((c) => !c.ok).map((c) => c.opType), seconds: (performance.now() - t0) / 1000 };
}

/** One line per op type: 'ok', or what failed and whether a composition replaces it. */
export function formatOpProbe(p: OpProbe): string {
  const bad = p.checked.filter((c) => !c.ok);
  const head = `${p.provider}: ${p.checked.length} ONNX op variants (type and input types) checked in ${p.seconds.toFixed(1)} s, ${bad.length} missing${bad.length === 0 ? '' : ` (${bad.map((c) => c.opType).join(', ')})`}`;
  const lines = p.checked.map((c) => `  ${c.opType.padEnd(48)} ${c.ok ? 'ok' : `MISSING${c.substitutable ? ' (replaced by a composition)' : ' (no composition)'}: ${c.error!.slice(0, 200)}`}`);
  return [head, ...lines].join('\n');
}
