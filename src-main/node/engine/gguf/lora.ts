// A LoRA adapter as a GGUF LoRA for llama.cpp and Ollama, as llama.cpp's convert_lora_to_gguf.py writes it:
// general.type "adapter", adapter.type "lora", adapter.lora.alpha, and per target weight two tensors named after
// the base tensor: "<base gguf name>.lora_a" holding A [r, in] and "<…>.lora_b" holding B [out, r] (numpy order;
// the file stores dims fastest-first). llama.cpp (llama-graph.cpp build_lora_mm) adds
// scale · mul_mat(b, mul_mat(a, x)) with scale = adapter_scale · alpha / r, r = b.ne[0]; that is PEFT's
// (alpha/r)·B·A·x, so the tensors go in unchanged. rsLoRA's alpha/√r is expressed as alpha' = alpha·√r.
// Where the base model's q/k rows are permuted for llama.cpp (arch.ts), ΔW = B·A must be permuted the same way,
// which permutes the rows of B and leaves A alone.
import { modelLinearParams } from '../../../common/engine/families/registry.ts';
import type { ModelConfig } from '../../../common/engine/families/registry.ts';
import type { LoraAdapter } from '../../../common/engine/lora.ts';
import { loadPeftAdapter } from '../peft.ts';
import { GgufError, f32, str, writeGguf } from './format.ts';
import type { GgufTensor, GgufValue } from './format.ts';
import { ggufArch, ggufTensorName, permuteHeads, permuteRows } from './arch.ts';

export interface LoraToGgufOptions {
  name?: string;
  /** F16 tensors (default F32). */
  f16?: boolean;
}

export function loraToGguf(adapter: LoraAdapter, config: ModelConfig, out: string, opts: LoraToGgufOptions = {}): { path: string; bytes: number; tensors: number } {
  const arch = ggufArch(config.architecture);
  const { r, alpha, rslora } = adapter.spec;
  const md = new Map<string, GgufValue>();
  md.set('general.architecture', str(arch));
  md.set('general.type', str('adapter'));
  md.set('general.name', str(opts.name ?? 'rein-lora'));
  md.set('adapter.type', str('lora'));
  md.set('adapter.lora.alpha', f32(rslora ? alpha * Math.sqrt(r) : alpha));

  const tensors: GgufTensor[] = [];
  const type = opts.f16 === true ? 'F16' : 'F32';
  for (const p of adapter.pairs) {
    if (p.a.length !== r * p.inFeatures || p.b.length !== p.outFeatures * r) {
      throw new GgufError(`LoRA pair ${p.baseKey} has A of ${p.a.length} and B of ${p.b.length} values, not [${r}, ${p.inFeatures}] and [${p.outFeatures}, ${r}]`);
    }
    if (p.layer < 0 || p.layer >= config.numLayers) throw new GgufError(`LoRA pair ${p.baseKey} names layer ${p.layer} of a ${config.numLayers}-layer model`);
    const base = ggufTensorName({ name: p.module, layer: p.layer });
    const heads = permuteHeads(config, p.module);
    tensors.push({ name: `${base}.lora_a`, shape: [r, p.inFeatures], type, data: () => p.a });
    tensors.push({
      name: `${base}.lora_b`,
      shape: [p.outFeatures, r],
      type,
      data: () => (heads === null ? p.b : permuteRows(p.b, p.outFeatures, r, heads)),
    });
  }
  const { bytes } = writeGguf(out, md, tensors);
  return { path: out, bytes, tensors: tensors.length };
}

/** A PEFT adapter directory (adapter_config.json + adapter_model.safetensors) → GGUF LoRA, checked against the base. */
export function peftToGguf(peftDir: string, config: ModelConfig, out: string, opts: LoraToGgufOptions = {}): { path: string; bytes: number; tensors: number } {
  const { adapter } = loadPeftAdapter(peftDir, modelLinearParams(config));
  return loraToGguf(adapter, config, out, opts);
}
