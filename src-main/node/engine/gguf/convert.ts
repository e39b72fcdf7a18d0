// HF model directory → GGUF base model (f32 or f16), as llama.cpp's convert_hf_to_gguf.py writes it for the
// architectures we train: general.* keys, the architecture's hyperparameters, the tokenizer, then the tensors under
// llama.cpp's names in the parameter table's order. With f16, 2-D weights become F16 and 1-D ones (norms, biases,
// rope_freqs) stay F32, as convert_hf_to_gguf.py's --outtype f16 does.
import path from 'node:path';
import { isGemma } from '../../../common/engine/models/registry.ts';
import { numel } from '../../../common/engine/models/params.ts';
import type { ResolvedParam } from '../../../common/engine/models/params.ts';
import { loadHfModel } from '../hf.ts';
import { FILE_TYPE, str, u32, writeGguf } from './format.ts';
import type { GgufTensor, GgufValue, WriteProgress } from './format.ts';
import { ggufArch, ggufTensorName, hparamsMetadata, llama3RopeFreqs, permuteHeads, permuteRows } from './arch.ts';
import { vocabMetadata } from './vocab.ts';

export interface ToGgufOptions {
  /** Write 2-D weights as F16 (default F32). */
  f16?: boolean;
  /** general.name (default: the directory's name). */
  name?: string;
  onProgress?: (p: WriteProgress) => void;
}

export interface ToGgufResult {
  path: string;
  bytes: number;
  tensors: number;
  architecture: string;
}

export function hfToGguf(dir: string, out: string, opts: ToGgufOptions = {}): ToGgufResult {
  const m = loadHfModel(dir, { tokenizer: false });
  try {
    const c = m.config;
    const arch = ggufArch(c.architecture);
    const md = new Map<string, GgufValue>();
    md.set('general.architecture', str(arch));
    md.set('general.type', str('model'));
    md.set('general.name', str(opts.name ?? path.basename(path.resolve(dir))));
    md.set('general.file_type', u32(opts.f16 === true ? FILE_TYPE.MOSTLY_F16 : FILE_TYPE.ALL_F32));
    md.set('general.quantization_version', u32(2));
    for (const [k, v] of hparamsMetadata(c)) md.set(k, v);
    const vocab = vocabMetadata(dir, c.vocabSize, { bos: c.bosTokenId, eos: c.eosTokenIds[0] ?? null });
    for (const [k, v] of vocab.metadata) md.set(k, v);

    const tensors: GgufTensor[] = [];
    const freqs = llama3RopeFreqs(c);
    if (freqs !== null) tensors.push({ name: 'rope_freqs.weight', shape: [freqs.length], type: 'F32', data: () => freqs });
    // Gemma stores RMSNorm weights as offsets from 1; llama.cpp's norm multiplies by the weight, so
    // convert_hf_to_gguf.py (Gemma2Model/Gemma3Model.modify_tensors) writes w + 1.
    const onePlus = isGemma(c);
    // MoE experts: llama.cpp wants one [E, out, in] tensor per kind and layer (convert_hf_to_gguf.py stacks
    // experts.{e}.*.weight with torch.stack in expert order), written where the layer's first expert stood.
    const stacks = new Map<string, ResolvedParam[]>();
    for (const p of m.params) if (p.expert !== undefined) stacks.set(ggufTensorName(p), [...(stacks.get(ggufTensorName(p)) ?? []), p]);
    for (const p of m.params) {
      if (p.expert !== undefined) {
        const name = ggufTensorName(p);
        const group = stacks.get(name);
        if (group === undefined) continue; // already written
        stacks.delete(name);
        const per = numel(p.shape);
        tensors.push({
          name,
          shape: [group.length, ...p.shape],
          type: opts.f16 === true ? 'F16' : 'F32',
          data: () => {
            const out = new Float32Array(per * group.length);
            group.forEach((q, e) => out.set(m.read(q.hfKey) as Float32Array, e * per));
            return out;
          },
        });
        continue;
      }
      const heads = permuteHeads(c, p.name);
      const plusOne = onePlus && p.kind === 'norm';
      tensors.push({
        name: ggufTensorName(p),
        shape: p.shape,
        type: opts.f16 === true && p.shape.length >= 2 ? 'F16' : 'F32',
        data: () => {
          const d = m.read(p.hfKey) as Float32Array;
          if (plusOne) return d.map((v) => v + 1);
          return heads === null ? d : permuteRows(d, p.shape[0]!, p.shape[1] ?? 1, heads);
        },
      });
    }
    const { bytes } = writeGguf(out, md, tensors, opts.onProgress);
    return { path: out, bytes, tensors: tensors.length, architecture: arch };
  } finally {
    m.close();
  }
}
