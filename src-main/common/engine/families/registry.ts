// The model families behind one interface: parse a config.json into the family's config, list its weights, and give
// the driver the family's graphs and per-layer tables. Each family's story stays in its own file (llama.ts,
// gemma.ts, moe.ts); this file only dispatches on the architecture.
import { ModelConfigError } from './params.ts';
import type { ResolvedParam } from './params.ts';
import {
  LLAMA_ARCHITECTURES,
  llamaHeadGraph,
  llamaLayerGraph,
  llamaLinearParams,
  llamaLogitsGraph,
  llamaParams,
  parseLlamaConfig,
  ropeTablesAt,
  ropeTablesFor,
} from './llama.ts';
import { causalMaskTable, packedMaskTable, type FloatDType, type HeadGrad, type PackedRows } from '../composites.ts';
import type { LayerLora } from '../lora.ts';
import type { LlamaArchitecture, LlamaConfig, QuantLayout } from './llama.ts';
import type { QuantSpec } from '../quant.ts';
import type { HeadTiling } from '../head.ts';
import { GEMMA_ARCHITECTURES, gemmaEmbedScale, gemmaHeadGraph, gemmaLayerGraph, gemmaLayerTables, gemmaPackedTables, gemmaLinearParams, gemmaLogitsGraph, gemmaParams, parseGemmaConfig } from './gemma.ts';
import type { GemmaArchitecture, GemmaConfig } from './gemma.ts';
import { MOE_ARCHITECTURES, moeLayerGraph, moeLinearParams, moeParams, parseMoeConfig } from './moe.ts';
import type { MoeArchitecture, MoeConfig } from './moe.ts';
import type { Graph } from '../ir.ts';

export type ModelConfig = LlamaConfig | GemmaConfig | MoeConfig;
export type ModelArchitecture = ModelConfig['architecture'];

export const MODEL_ARCHITECTURES: readonly ModelArchitecture[] = [...LLAMA_ARCHITECTURES, ...GEMMA_ARCHITECTURES, ...MOE_ARCHITECTURES];

export function isGemma(c: ModelConfig): c is GemmaConfig {
  return (GEMMA_ARCHITECTURES as readonly string[]).includes(c.architecture);
}

export function isMoe(c: ModelConfig): c is MoeConfig {
  return (MOE_ARCHITECTURES as readonly string[]).includes(c.architecture);
}

function isLlama(c: ModelConfig): c is LlamaConfig {
  return (LLAMA_ARCHITECTURES as readonly string[]).includes(c.architecture);
}

/** Parse an HF config.json of any supported architecture. Throws ModelConfigError naming the field. */
export function parseModelConfig(json: unknown): ModelConfig {
  const arch = (json as { architectures?: unknown } | null)?.architectures;
  const name = Array.isArray(arch) && typeof arch[0] === 'string' ? arch[0] : undefined;
  if (name === undefined) throw new ModelConfigError('config.json has no "architectures" list', 'architectures');
  if ((GEMMA_ARCHITECTURES as readonly string[]).includes(name)) return parseGemmaConfig(json, name as GemmaArchitecture);
  if ((MOE_ARCHITECTURES as readonly string[]).includes(name)) {
    // The attention block is Qwen3's or Mistral's: validate those fields through the Llama parser.
    const base: LlamaArchitecture = name === 'Qwen3MoeForCausalLM' ? 'Qwen3ForCausalLM' : 'MistralForCausalLM';
    const j = json as Record<string, unknown>;
    const asBase = { ...j, architectures: [base], intermediate_size: j['intermediate_size'] ?? j['moe_intermediate_size'] };
    return parseMoeConfig(json, name as MoeArchitecture, parseLlamaConfig(asBase));
  }
  if ((LLAMA_ARCHITECTURES as readonly string[]).includes(name)) return parseLlamaConfig(json);
  throw new ModelConfigError(`unsupported architecture ${name}; supported: ${MODEL_ARCHITECTURES.join(', ')}`, 'architectures', { architecture: name });
}

/** Every weight of the model, in file order. */
export function modelParams(c: ModelConfig): ResolvedParam[] {
  if (isGemma(c)) return gemmaParams(c);
  if (isMoe(c)) return moeParams(c);
  return llamaParams(c as LlamaConfig);
}

/** The weights LoRA may target (PEFT target_modules match their `module`). */
export function modelLinearParams(c: ModelConfig): ResolvedParam[] {
  if (isGemma(c)) return gemmaLinearParams(c);
  if (isMoe(c)) return moeLinearParams(c);
  return llamaLinearParams(c as LlamaConfig);
}

/** What the per-layer driver needs from a family. */
export interface ModelGraphs {
  /** `quant`: the layer's block-quantized weights (Llama family only; quant.ts). */
  layer(dtype: FloatDType, lora: LayerLora | null, quant?: QuantLayout): Graph;
  /**
   * `quant`: the lm_head's quantization, or null for f32 (Llama family only). `tiles`: the vocabulary in tiles with a
   * running log-sum-exp (head.ts; Llama family, 'none' and 'fused'), or one [T, V] product when null or absent.
   */
  head(dtype: FloatDType, withGrad: HeadGrad, quant?: QuantSpec | null, tiles?: HeadTiling | null): Graph;
  logits(dtype: FloatDType, quant?: QuantSpec | null): Graph;
  /** Factor on the embedding rows (Gemma: √H). */
  embedScale(dtype: FloatDType): number;
  /** A key naming layer i's RoPE tables and mask; layers with equal keys share them. */
  layerKind(i: number): string;
  /** RoPE tables [T, D/2] and additive mask [T, T] for a layer kind, in float64. */
  tables(kind: string, T: number): { cos: Float64Array; sin: Float64Array; mask: Float64Array };
  /**
   * The same for a packed sequence's rows (composites.ts PackedRows), the mask in `dtype`. Every family's layer
   * reads positions only through these tables and mixes tokens only in the masked attention, so the rows of a
   * sequence packed after a shared prefix compute what they compute in the sequence alone (driver.ts packedGrad).
   */
  packedTables(kind: string, rows: PackedRows, dtype: FloatDType): { cos: Float64Array; sin: Float64Array; mask: Float32Array | Float64Array };
}

/** Quantized weights are wired into the Llama family's graphs only; the others refuse them by name. */
function noQuant(c: ModelConfig, quant: QuantLayout | QuantSpec | null | undefined): void {
  if (quant !== undefined && quant !== null && Object.keys(quant).length > 0) {
    throw new ModelConfigError(`quantized base weights are not supported for ${c.architecture} yet (Llama, Qwen2, Qwen3, Mistral only)`, 'architectures');
  }
}

export function modelGraphs(c: ModelConfig): ModelGraphs {
  if (isGemma(c)) {
    return {
      layer: (dtype, lora, quant) => (noQuant(c, quant), gemmaLayerGraph(c, dtype, lora)),
      head: (dtype, withGrad, quant) => (noQuant(c, quant), gemmaHeadGraph(c, dtype, withGrad)),
      logits: (dtype, quant) => (noQuant(c, quant), gemmaLogitsGraph(c, dtype)),
      embedScale: (dtype) => gemmaEmbedScale(c, dtype),
      layerKind: (i) => c.layerTypes[i]!,
      tables: (kind, T) => gemmaLayerTables(c, kind as GemmaConfig['layerTypes'][number], T),
      packedTables: (kind, rows, dtype) => gemmaPackedTables(c, kind as GemmaConfig['layerTypes'][number], rows, dtype),
    };
  }
  const llamaTables = (_kind: string, T: number): { cos: Float64Array; sin: Float64Array; mask: Float64Array } => ({
    ...ropeTablesFor(c, T),
    mask: causalMaskTable(T, c.slidingWindow),
  });
  const llamaPacked = (_kind: string, rows: PackedRows, dtype: FloatDType): { cos: Float64Array; sin: Float64Array; mask: Float32Array | Float64Array } => ({
    ...ropeTablesAt(c, rows.positions),
    mask: packedMaskTable(rows, c.slidingWindow, dtype),
  });
  if (isMoe(c)) {
    return {
      layer: (dtype, lora, quant) => (noQuant(c, quant), moeLayerGraph(c, dtype, lora)),
      head: (dtype, withGrad, quant, tiles) => llamaHeadGraph(c, dtype, withGrad, quant ?? null, tiles ?? null),
      logits: (dtype, quant) => llamaLogitsGraph(c, dtype, quant ?? null),
      embedScale: () => 1,
      layerKind: () => 'all',
      tables: llamaTables,
      packedTables: llamaPacked,
    };
  }
  if (!isLlama(c)) throw new ModelConfigError(`no graphs for architecture ${(c as ModelConfig).architecture}`, 'architectures');
  return {
    layer: (dtype, lora, quant) => llamaLayerGraph(c, dtype, lora, undefined, quant),
    head: (dtype, withGrad, quant, tiles) => llamaHeadGraph(c, dtype, withGrad, quant ?? null, tiles ?? null),
    logits: (dtype, quant) => llamaLogitsGraph(c, dtype, quant ?? null),
    embedScale: () => 1,
    layerKind: () => 'all',
    tables: llamaTables,
    packedTables: llamaPacked,
  };
}
