// LoRA (Hu et al. 2021, arXiv:2106.09685) on a model's linear weights, in PEFT's layout and conventions
// (huggingface/peft src/peft/tuners/lora/layer.py): for W [out, in], A is [r, in] and B is [out, r];
// ΔW = scale · B·A with scale = alpha / r, or alpha / √r with rsLoRA (Kalajdzievski 2023, arXiv:2312.03732).
// A starts uniform in ±1/√in (PEFT's kaiming_uniform_(a=√5) bound reduces to 1/√fan_in), B starts at zero,
// so a fresh adapter leaves the model unchanged.
import { ReinError } from '../errors.ts';
import { type ActQuantKind, type FloatDType, quantizeActivations } from './composites.ts';
import { type Graph, GraphError, type Tensor } from './ir.ts';
import { modulePath } from './families/params.ts';
import type { ResolvedParam } from './families/params.ts';
import { Rng } from './rng.ts';
import * as op from './ops.ts';
import { type QuantInputs, frozenLinear } from './quant.ts';

export const DEFAULT_LORA_TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;

export interface LoraSpec {
  r: number;
  alpha: number;
  /** Scale alpha/√r instead of alpha/r. */
  rslora: boolean;
  /** Module names, matched against the last path segment of each linear weight (PEFT target_modules). */
  targets: readonly string[];
  /** Recorded in adapter_config.json; the trainer applies it (or not). */
  dropout: number;
}

export class LoraError extends ReinError {
  constructor(message: string, detail?: unknown) {
    super('bad_input', message, { detail });
    this.name = 'LoraError';
  }
}

export function loraSpec(partial: Partial<LoraSpec> = {}): LoraSpec {
  const spec: LoraSpec = {
    r: partial.r ?? 16,
    alpha: partial.alpha ?? 32,
    rslora: partial.rslora ?? false,
    targets: partial.targets ?? DEFAULT_LORA_TARGETS,
    dropout: partial.dropout ?? 0,
  };
  if (!Number.isInteger(spec.r) || spec.r < 1) throw new LoraError(`LoRA rank r must be a positive integer, got ${spec.r}`);
  if (!Number.isFinite(spec.alpha) || spec.alpha <= 0) throw new LoraError(`LoRA alpha must be positive, got ${spec.alpha}`);
  if (!(spec.dropout >= 0 && spec.dropout < 1)) throw new LoraError(`LoRA dropout must be in [0, 1), got ${spec.dropout}`);
  if (spec.targets.length === 0) throw new LoraError('LoRA needs at least one target module');
  return spec;
}

export function loraScale(spec: Pick<LoraSpec, 'r' | 'alpha' | 'rslora'>): number {
  return spec.rslora ? spec.alpha / Math.sqrt(spec.r) : spec.alpha / spec.r;
}

export interface LoraPair {
  /** The base weight's HF key, e.g. 'model.layers.0.self_attn.q_proj.weight'. */
  baseKey: string;
  module: string;
  layer: number;
  inFeatures: number;
  outFeatures: number;
  /** [r, in], row-major. */
  a: Float32Array;
  /** [out, r], row-major. */
  b: Float32Array;
}

export interface LoraAdapter {
  spec: LoraSpec;
  pairs: LoraPair[];
}

/** PEFT's tensor keys for a pair: base_model.model.<module path>.lora_A.weight / .lora_B.weight. */
export function peftKeys(baseKey: string): { a: string; b: string } {
  const prefix = `base_model.model.${modulePath(baseKey)}`;
  return { a: `${prefix}.lora_A.weight`, b: `${prefix}.lora_B.weight` };
}

/** The linear weights a spec targets, in table order. Throws when a target matches nothing (a typo loses training). */
export function loraTargets(linears: readonly ResolvedParam[], spec: LoraSpec): ResolvedParam[] {
  const chosen = linears.filter((p) => p.module !== null && p.layer !== null && spec.targets.includes(p.module));
  for (const t of spec.targets) {
    if (!chosen.some((p) => p.module === t)) {
      const known = [...new Set(linears.map((p) => p.module))].join(', ');
      throw new LoraError(`LoRA target module "${t}" matches no linear weight of this model (it has: ${known})`, { target: t });
    }
  }
  return chosen;
}

/** A fresh adapter: A ~ U(±1/√in) from a seeded stream per tensor, B = 0. */
export function fromBase(linears: readonly ResolvedParam[], spec: LoraSpec, seed: number): LoraAdapter {
  const rng = new Rng(seed);
  const pairs = loraTargets(linears, spec).map((p): LoraPair => {
    const [outFeatures, inFeatures] = p.shape as [number, number];
    const bound = 1 / Math.sqrt(inFeatures);
    const a = rng.fork(p.hfKey).fillUniform(new Float32Array(spec.r * inFeatures), -bound, bound);
    return { baseKey: p.hfKey, module: p.module!, layer: p.layer!, inFeatures, outFeatures, a, b: new Float32Array(outFeatures * spec.r) };
  });
  return { spec, pairs };
}

/**
 * W + scale·B·A for W [out, in], as a new array of W's type. The product is accumulated in float64, so a
 * zero B returns W bit for bit.
 */
export function fuse<A extends Float32Array | Float64Array>(
  base: A,
  pair: Pick<LoraPair, 'a' | 'b' | 'inFeatures' | 'outFeatures'>,
  r: number,
  scale: number,
): A {
  const { a, b, inFeatures: nIn, outFeatures: nOut } = pair;
  if (base.length !== nOut * nIn) throw new LoraError(`fuse: base has ${base.length} values, expected [${nOut}, ${nIn}]`);
  if (a.length !== r * nIn || b.length !== nOut * r) {
    throw new LoraError(`fuse: A must be [${r}, ${nIn}] and B [${nOut}, ${r}], got ${a.length} and ${b.length} values`);
  }
  const out = base.slice() as A;
  const row = new Float64Array(nIn);
  for (let o = 0; o < nOut; o++) {
    row.fill(0);
    let any = false;
    for (let k = 0; k < r; k++) {
      const bk = b[o * r + k]!;
      if (bk === 0) continue;
      any = true;
      const off = k * nIn;
      for (let i = 0; i < nIn; i++) row[i] += bk * a[off + i]!;
    }
    if (!any) continue;
    const off = o * nIn;
    for (let i = 0; i < nIn; i++) out[off + i] = base[off + i]! + scale * row[i]!;
  }
  return out;
}

// --- LoRA inside a layer graph ----------------------------------------------------------------------------------------

/** LoRA inside the layer graph: y = x·Wᵀ + scale·(x·Aᵀ)·Bᵀ for the target modules (PEFT layer.py). */
export interface LayerLora {
  targets: readonly string[];
  r: number;
  scale: number;
}

/** Graph input names of a LoRA pair for module `m` ('q_proj' → 'q_proj.lora_A', 'q_proj.lora_B'). */
export const loraInputNames = (m: string): { a: string; b: string } => ({ a: `${m}.lora_A`, b: `${m}.lora_B` });

/**
 * A layer's linear forward, shared by every family: declares the LoRA inputs '<m>.lora_A' [r, in] and '<m>.lora_B'
 * [out, r] of each target in `w` (the layer's weight inputs, HF [out, in]), and returns
 * linear(h, m) = h·Wᵀ (+ b) (+ scale·(h·Aᵀ)·Bᵀ), with the bias '<m>.bias' when the layer has one. Gemm with transB
 * reads HF's [out, in] weights in place; a weight in `quant` (block-quantized, quant.ts) goes through MatMulNBits instead
 * (frozenLinear). With `actQuant` (a GGUF base, composites.ts ActQuantTable), the frozen product reads h rounded as
 * llama.cpp's CPU kernels round it for module m's weight type; the LoRA product reads h itself, as llama.cpp does with
 * F32 adapter tensors.
 */
export function loraLinear(
  g: Graph,
  dtype: FloatDType,
  w: Record<string, Tensor>,
  lora: LayerLora | null,
  where: string,
  quant: Readonly<Record<string, QuantInputs>> = {},
  actQuant?: Readonly<Record<string, ActQuantKind>>,
): (h: Tensor, m: string) => Tensor {
  const targets = new Set(lora?.targets ?? []);
  for (const m of targets) {
    const W = w[m];
    const Q = quant[m];
    if (Q === undefined && (W === undefined || W.rank !== 2)) throw new GraphError(where, `LoRA target ${m} is not a linear weight of the layer`);
    const [out, inF] = Q !== undefined ? [Q.rows, Q.cols] : (W!.shape as [number, number]);
    const n = loraInputNames(m);
    w[n.a] = g.input(n.a, dtype, [lora!.r, inF]);
    w[n.b] = g.input(n.b, dtype, [out, lora!.r]);
  }
  // q, k and v (gate and up) read the same h: one rounding each.
  const rounded = new Map<string, Tensor>();
  const frozenInput = (h: Tensor, m: string): Tensor => {
    const kind = actQuant?.[m];
    if (kind === undefined) return h;
    const key = `${h.id}|${kind}`;
    let hq = rounded.get(key);
    if (hq === undefined) {
      hq = quantizeActivations(h, kind);
      rounded.set(key, hq);
    }
    return hq;
  };
  return (h, m) => {
    let y = frozenLinear(frozenInput(h, m), quant[m] ?? w[m]!, w[`${m}.bias`]); // [T, out]
    if (targets.has(m)) {
      const n = loraInputNames(m);
      const xa = op.gemm(h, w[n.a]!, { transB: true }); // [T, r]
      y = op.add(y, op.gemm(xa, w[n.b]!, { transB: true, alpha: lora!.scale })); // [T, out]
    }
    return y;
  };
}
