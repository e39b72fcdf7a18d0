// The compatibility lint run before publishing: what each target accepts, from SPECS.md (PEFT, GGUF and llama.cpp,
// Ollama, vLLM sections). An error stops that target's publish with a message that names the fix; a warning is
// recorded beside a successful publish.
import { VLLM_MAX_LORA_RANKS } from '../../common/config.ts';
import { GGUF_ARCH } from '../engine/gguf/arch.ts';

export type PublishTarget = 'ollama' | 'vllm' | 'llamaServer' | 'lmStudio';
export const PUBLISH_TARGETS: readonly PublishTarget[] = ['ollama', 'vllm', 'llamaServer', 'lmStudio'];

/** What the lint needs to know about an adapter version and its base. */
export interface AdapterFacts {
  /** The base's HF architecture (config.json architectures[0]), e.g. Qwen2ForCausalLM. */
  architecture: string;
  r: number;
  useDora: boolean;
  modulesToSave: string[];
  targetModules: string[];
}

export interface LintResult {
  errors: string[];
  warnings: string[];
}

const EMBEDDING_MODULES = ['embed_tokens', 'lm_head', 'wte', 'word_embeddings'];

/** Reads the facts from a PEFT adapter_config.json and the base's config.json (both already parsed). */
export function adapterFacts(peftConfig: Record<string, unknown>, baseConfig: Record<string, unknown>): AdapterFacts {
  const archs = baseConfig.architectures;
  const tm = peftConfig.target_modules;
  return {
    architecture: Array.isArray(archs) && typeof archs[0] === 'string' ? archs[0] : String(baseConfig.model_type ?? 'unknown'),
    r: Number(peftConfig.r),
    useDora: peftConfig.use_dora === true,
    modulesToSave: Array.isArray(peftConfig.modules_to_save) ? peftConfig.modules_to_save.map(String) : [],
    // PEFT also accepts a regex string for target_modules; it is kept whole, so the embedding check still sees it.
    targetModules: Array.isArray(tm) ? tm.map(String) : typeof tm === 'string' ? [tm] : [],
  };
}

/** The smallest --max-lora-rank vLLM accepts that holds rank r, or null when none does. */
export function vllmRankFor(r: number): number | null {
  return VLLM_MAX_LORA_RANKS.find((m) => m >= r) ?? null;
}

export interface LintLimits {
  /** vLLM's --max-lora-rank. */
  vllmMaxLoraRank?: number;
}

export function lintAdapter(target: PublishTarget, f: AdapterFacts, limits: LintLimits = {}): LintResult {
  const errors: string[] = [];
  const warnings: string[] = [];
  if (!Number.isInteger(f.r) || f.r < 1) errors.push(`adapter_config.json has no valid rank r (${f.r})`);
  const embedding = f.targetModules.filter((m) => EMBEDDING_MODULES.some((e) => m.includes(e)));
  if (target === 'vllm') {
    // SPECS (PEFT): vLLM rejects DoRA and modules_to_save.
    if (f.useDora) errors.push('vLLM does not load DoRA adapters (use_dora is true); train without DoRA');
    if (f.modulesToSave.length > 0) errors.push(`vLLM does not load adapters with modules_to_save (${f.modulesToSave.join(', ')})`);
    const max = limits.vllmMaxLoraRank ?? 16;
    if (f.r > max) {
      const fit = vllmRankFor(f.r);
      errors.push(fit === null
        ? `the adapter's rank ${f.r} is above the largest --max-lora-rank vLLM allows (${VLLM_MAX_LORA_RANKS.at(-1)}): train with a smaller rank`
        : `the adapter's rank ${f.r} is above vLLM's --max-lora-rank ${max}: start vLLM with --max-lora-rank ${fit} and run rein settings set publish.vllm.maxLoraRank ${fit}`);
    }
  } else {
    // Ollama, llama-server and LM Studio all take llama.cpp's GGUF: the LoRA converter accepts only lora_A/lora_B
    // pairs, so full weights (modules_to_save) and DoRA magnitudes are errors, and Rein's GGUF writer knows only
    // the architectures in its table.
    if (GGUF_ARCH[f.architecture] === undefined) {
      errors.push(`${f.architecture} has no GGUF mapping in Rein's writer (supported: ${Object.keys(GGUF_ARCH).join(', ')}), so no GGUF adapter can be made for it`);
    }
    if (f.useDora) errors.push('llama.cpp GGUF LoRA has no DoRA magnitudes (use_dora is true)');
    if (f.modulesToSave.length > 0) errors.push(`llama.cpp GGUF LoRA takes only lora_A/lora_B pairs, not full weights (modules_to_save: ${f.modulesToSave.join(', ')})`);
    if (embedding.length > 0) errors.push(`Rein's GGUF LoRA export covers the linear layers only, not ${embedding.join(', ')}`);
  }
  if (target === 'ollama') {
    warnings.push('Ollama applies one adapter per model: the base named in publish.ollama.base must be a plain model, not one already built with an ADAPTER');
    if (!['LlamaForCausalLM', 'Gemma2ForCausalLM'].includes(f.architecture)) {
      warnings.push(`Ollama imports safetensors adapters only for llama and gemma2, so ${f.architecture} is published as a GGUF adapter`);
    }
  }
  return { errors, warnings };
}
