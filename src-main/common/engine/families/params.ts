// The shape of a model's declarative parameter table (house style rule 7): each row names one weight once,
// and its per-layer names, numeric shapes, HF file keys, LoRA eligibility and random init are all derived
// from that row. Model files (llama.ts, …) hold the rows; everything else reads them through `resolveParams`.
import { ReinError } from '../../errors.ts';

/**
 * How a tiny random model initialises the weight (see node/engine/tiny.ts). 'offsets' is a norm weight stored as an
 * offset from 1 (Gemma's (1 + w) RMSNorm): jitter around 0.
 */
export type ParamInit = 'normal' | 'ones' | 'zeros' | 'offsets';

export type ParamKind = 'embedding' | 'norm' | 'linear' | 'bias';

export interface ParamRow<C, D extends string> {
  /** Our name, unique within its scope: 'q_proj', 'q_proj.bias', 'input_layernorm', … */
  name: string;
  /**
   * 'model' weights appear once; 'layer' weights once per decoder layer; 'expert' weights once per expert of each
   * layer (MoE), with `{e}` in both the name and the key standing for the expert index.
   */
  scope: 'model' | 'layer' | 'expert';
  /** The HF safetensors key; `{i}` stands for the layer index (and `{e}` for the expert). */
  hfKey: string;
  /** Symbolic dims from the model's legend. Linear weights are [out, in], as HF stores them. */
  shape: readonly D[];
  kind: ParamKind;
  init: ParamInit;
  /** Present only when this returns true for the config (biases, untied lm_head, …). */
  when?: (config: C) => boolean;
}

export interface ResolvedParam {
  name: string;
  /** The layer index, or null for model-scope weights. */
  layer: number | null;
  /** The expert index of an 'expert'-scope weight (MoE); absent otherwise. */
  expert?: number;
  hfKey: string;
  shape: number[];
  kind: ParamKind;
  init: ParamInit;
  /** For linear weights: the module name PEFT's target_modules matches ('q_proj'), from the HF key. */
  module: string | null;
}

export function numel(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** The HF module path of a weight key: 'model.layers.0.self_attn.q_proj.weight' → 'model.layers.0.self_attn.q_proj'. */
export function modulePath(hfKey: string): string {
  return hfKey.replace(/\.(weight|bias)$/, '');
}

/** Bounds on the counts a config.json sets and resolveParams enumerates, far above any released model (Llama 3.1
 *  405B has 126 layers, Qwen3 MoE 128 experts). Unbounded, `num_hidden_layers: 2000000000` built a 3 GB table while
 *  the server stalled (issue #21 item 7). */
export const MAX_LAYERS = 1024;
export const MAX_EXPERTS = 1024;

export function resolveParams<C, D extends string>(
  rows: readonly ParamRow<C, D>[],
  config: C,
  dims: Record<D, number>,
  layers: number,
  experts = 0,
): ResolvedParam[] {
  const out: ResolvedParam[] = [];
  const emit = (row: ParamRow<C, D>, layer: number | null, expert?: number): void => {
    let hfKey = layer === null ? row.hfKey : row.hfKey.replace('{i}', String(layer));
    if (expert !== undefined) hfKey = hfKey.replace('{e}', String(expert));
    const path = modulePath(hfKey);
    out.push({
      name: expert === undefined ? row.name : row.name.replace('{e}', String(expert)),
      layer,
      ...(expert === undefined ? {} : { expert }),
      hfKey,
      shape: row.shape.map((d) => dims[d]),
      kind: row.kind,
      init: row.init,
      module: row.kind === 'linear' ? path.slice(path.lastIndexOf('.') + 1) : null,
    });
  };
  const present = rows.filter((r) => r.when === undefined || r.when(config));
  // File order: model-scope weights that come before the layers, the layers, then the rest (as HF writes them).
  const firstLayer = present.findIndex((r) => r.scope !== 'model');
  const before = firstLayer < 0 ? present : present.slice(0, firstLayer);
  const after = firstLayer < 0 ? [] : present.slice(firstLayer).filter((r) => r.scope === 'model');
  const layerRows = present.filter((r) => r.scope !== 'model');
  for (const r of before) emit(r, null);
  for (let i = 0; i < layers; i++) {
    for (const r of layerRows) {
      if (r.scope === 'layer') emit(r, i);
      else for (let e = 0; e < experts; e++) emit(r, i, e);
    }
  }
  for (const r of after) emit(r, null);
  return out;
}


/** A model config.json that is missing a field, has a wrong value, or describes an unsupported model. */
export class ModelConfigError extends ReinError {
  constructor(message: string, field?: string, detail?: unknown) {
    super('bad_input', message, { field, detail });
    this.name = 'ModelConfigError';
  }
}
