// What a loaded model offers the engine, whether it came from an HF directory (hf.ts) or a GGUF file (gguf/load.ts).
import type { ModelConfig } from '../../common/engine/families/registry.ts';
import type { ResolvedParam } from '../../common/engine/families/params.ts';
import type { QuantWeight } from '../../common/engine/quant.ts';
import type { ReinTokenizer } from './tokenizer.ts';

export interface GenerationConfig {
  bosTokenId: number | null;
  eosTokenIds: number[];
  raw: Record<string, unknown>;
}

export interface HfModel {
  dir: string;
  config: ModelConfig;
  /** config.json as written, for fields the engine does not model. */
  rawConfig: Record<string, unknown>;
  /** Every weight in file order (from the parameter table). */
  params: ResolvedParam[];
  tokenizer: ReinTokenizer | null;
  generation: GenerationConfig | null;
  /** Read one weight by HF key, checked finite. */
  read(hfKey: string, opts?: { as?: 'f32' | 'f64' }): Float32Array | Float64Array;
  /**
   * A weight kept block-quantized (common/engine/quant.ts), or null where the file stores it another way (f32, f16,
   * Q6_K…): then `read` it. Only GGUF files have it (gguf/load.ts: Q4_0, Q4_1, Q4_K, Q8_0).
   */
  readQuant?(hfKey: string): QuantWeight | null;
  /** The dtype stored in the files for a key (e.g. 'BF16'). */
  storedDtype(hfKey: string): string;
  close(): void;
}
