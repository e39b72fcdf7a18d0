// HF model directory → GGUF base model (f32 or f16), as llama.cpp's convert_hf_to_gguf.py writes it for the
// architectures we train: general.* keys, the architecture's hyperparameters, the tokenizer, then the tensors under
// llama.cpp's names in the parameter table's order. With f16, q8_0, q4_0 or q4_k, 2-D (and stacked 3-D) weights take
// that type and 1-D ones (norms, biases, rope_freqs) stay F32, as convert_hf_to_gguf.py's --outtype and
// llama-quantize do. A weight whose rows are not a whole number of the type's blocks falls back as llama-quantize's
// llama_tensor_get_type does (a K-quant to a 32-block legacy quant, then to F16); the result lists each one.
import path from 'node:path';
import { isGemma } from '../../../common/engine/families/registry.ts';
import { numel } from '../../../common/engine/families/params.ts';
import type { ResolvedParam } from '../../../common/engine/families/params.ts';
import { loadHfModel } from '../hf.ts';
import { FILE_TYPE, GgufError, str, u32, writeGguf } from './format.ts';
import type { GgmlType, GgufTensor, GgufValue, WriteProgress } from './format.ts';
import { GGML_TYPES } from './quant.ts';
import { ggufArch, ggufTensorName, hparamsMetadata, llama3RopeFreqs, permuteHeads, permuteRows } from './arch.ts';
import { vocabMetadata } from './vocab.ts';

export const GGUF_OUT_TYPES = ['f32', 'f16', 'q8_0', 'q4_0', 'q4_k'] as const;
export type GgufOutType = (typeof GGUF_OUT_TYPES)[number];

const TENSOR_TYPE: Record<GgufOutType, GgmlType> = { f32: 'F32', f16: 'F16', q8_0: 'Q8_0', q4_0: 'Q4_0', q4_k: 'Q4_K' };
const FILE_TYPES: Record<GgufOutType, number> = {
  f32: FILE_TYPE.ALL_F32,
  f16: FILE_TYPE.MOSTLY_F16,
  q8_0: FILE_TYPE.MOSTLY_Q8_0,
  q4_0: FILE_TYPE.MOSTLY_Q4_0,
  q4_k: FILE_TYPE.MOSTLY_Q4_K_S,
};

/** The type a weight with rows of `row` values gets: the wanted one, or the first fallback whose blocks fit. */
function weightType(want: GgmlType, row: number): GgmlType {
  const chain: GgmlType[] = want === 'Q4_K' ? ['Q4_K', 'Q4_0', 'F16'] : want === 'F32' ? ['F32'] : [want, 'F16'];
  return chain.find((t) => row % GGML_TYPES[t].block === 0)!;
}

export interface ToGgufOptions {
  /** The type of 2-D weights (default f32). */
  type?: GgufOutType;
  /** general.name (default: the directory's name). */
  name?: string;
  onProgress?: (p: WriteProgress) => void;
}

export interface ToGgufResult {
  path: string;
  bytes: number;
  tensors: number;
  architecture: string;
  /** Weights written in another type than asked, because their rows do not fit its blocks. */
  fallbacks: { tensor: string; type: GgmlType }[];
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
    const outType = opts.type ?? 'f32';
    if (!GGUF_OUT_TYPES.includes(outType)) throw new GgufError(`--type ${String(outType)} is not one we write (${GGUF_OUT_TYPES.join(', ')})`);
    const want = TENSOR_TYPE[outType];
    const fallbacks: { tensor: string; type: GgmlType }[] = [];
    const typeOf = (name: string, shape: readonly number[]): GgmlType => {
      if (shape.length < 2) return 'F32';
      const t = weightType(want, shape.at(-1)!);
      if (t !== want) fallbacks.push({ tensor: name, type: t });
      return t;
    };
    md.set('general.file_type', u32(FILE_TYPES[outType]));
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
        const shape = [group.length, ...p.shape];
        tensors.push({
          name,
          shape,
          type: typeOf(name, shape),
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
        type: typeOf(ggufTensorName(p), p.shape),
        data: () => {
          const d = m.read(p.hfKey) as Float32Array;
          if (plusOne) return d.map((v) => v + 1);
          return heads === null ? d : permuteRows(d, p.shape[0]!, p.shape[1] ?? 1, heads);
        },
      });
    }
    const { bytes } = writeGguf(out, md, tensors, opts.onProgress);
    return { path: out, bytes, tensors: tensors.length, architecture: arch, fallbacks };
  } finally {
    m.close();
  }
}
