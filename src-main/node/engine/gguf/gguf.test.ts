// The GGUF writers, read back with an independent parser (@huggingface/gguf): the container (every value type,
// fastest-first dims, aligned offsets, the bytes at each offset), the HF → GGUF conversion of tiny Llama and Qwen2
// models (metadata from config.json, llama.cpp's tensor names and shapes, f16), the q/k permutation checked through
// RoPE itself, the tokenizer metadata, the LoRA export, and bad input.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gguf } from '@huggingface/gguf';
import { llamaLinearParams, parseLlamaConfig } from '../../../common/engine/families/llama.ts';
import { fromBase, loraSpec } from '../../../common/engine/lora.ts';
import { Rng } from '../../../common/engine/rng.ts';
import { f16ToF32 } from '../safetensors.ts';
import { loadHfModel } from '../hf.ts';
import { savePeftAdapter } from '../peft.ts';
import { writeTinyModel } from '../tiny.ts';
import { GgufError, writeGguf } from './format.ts';
import type { GgufValue } from './format.ts';
import { ggufTensorName, permuteRows } from './arch.ts';
import { hfToGguf } from './convert.ts';
import { peftToGguf } from './lora.ts';
import { TOKEN_TYPE, vocabMetadata } from './vocab.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-gguf-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const parse = (file: string) => gguf(file, { allowLocalFile: true });

/** The raw bytes of a tensor in a GGUF file, from the parser's data offset. */
function tensorBytes(file: string, info: { offset: bigint }, dataStart: number, n: number): Buffer {
  const buf = readFileSync(file);
  const at = dataStart + Number(info.offset);
  return buf.subarray(at, at + n);
}

/** Where the data section starts: the end of the tensor infos padded to 32 (the parser reports the infos' end). */
const dataStart = (tensorInfoByteRange: [number, number] | undefined): number => Math.ceil(tensorInfoByteRange![1] / 32) * 32;

describe('GGUF container', () => {
  it('writes every value type and tensor layout that the reference parser reads back', async () => {
    const file = path.join(root, 'kv.gguf');
    const md = new Map<string, GgufValue>([
      ['general.architecture', { type: 'str', value: 'llama' }],
      ['a.u32', { type: 'u32', value: 4000000000 }],
      ['a.i32', { type: 'i32', value: -7 }],
      ['a.u64', { type: 'u64', value: 2 ** 40 }],
      ['a.f32', { type: 'f32', value: 0.5 }],
      ['a.bool', { type: 'bool', value: true }],
      ['a.str', { type: 'str', value: 'héllo ✓' }],
      ['a.strs', { type: 'str[]', value: ['x', '', 'Ġthe'] }],
      ['a.i32s', { type: 'i32[]', value: [1, -2, 3] }],
      ['a.f32s', { type: 'f32[]', value: [0.25, -1] }],
    ]);
    const w = Float32Array.from({ length: 3 * 5 }, (_, i) => i - 7.5);
    const v = Float32Array.from([1, 2, 3]); // 12 bytes: the next tensor must be padded to 32
    const h = Float32Array.from({ length: 2 * 3 }, (_, i) => i / 3);
    writeGguf(file, md, [
      { name: 'w', shape: [3, 5], type: 'F32', data: () => w },
      { name: 'v', shape: [3], type: 'F32', data: () => v },
      { name: 'h', shape: [2, 3], type: 'F16', data: () => h },
    ]);
    const g = await parse(file);
    const m = g.metadata as Record<string, unknown>;
    expect(m['version']).toBe(3);
    expect(m['a.u32']).toBe(4000000000);
    expect(m['a.i32']).toBe(-7);
    expect(m['a.u64']).toBe(BigInt(2 ** 40));
    expect(m['a.f32']).toBe(0.5);
    expect(m['a.bool']).toBe(true);
    expect(m['a.str']).toBe('héllo ✓');
    expect(m['a.strs']).toEqual(['x', '', 'Ġthe']);
    expect(m['a.i32s']).toEqual([1, -2, 3]);
    expect(m['a.f32s']).toEqual([0.25, -1]);
    const [tw, tv, th] = g.tensorInfos;
    expect(tw!.shape).toEqual([5n, 3n]); // fastest-first
    expect(tv!.offset % 32n).toBe(0n);
    expect(th!.offset % 32n).toBe(0n);
    expect(th!.dtype).toBe(1);
    const start = dataStart(g.tensorInfoByteRange);
    const wb = tensorBytes(file, tw!, start, w.byteLength);
    expect(new Float32Array(wb.buffer.slice(wb.byteOffset, wb.byteOffset + wb.length))).toEqual(w);
    const hb = tensorBytes(file, th!, start, 12);
    const back = Array.from({ length: 6 }, (_, i) => f16ToF32(hb.readUInt16LE(2 * i)));
    back.forEach((x, i) => expect(Math.abs(x - h[i]!)).toBeLessThan(1e-3));
    expect(readFileSync(file).length).toBe(start + Number(th!.offset) + 12 + 20); // data padded to the alignment
  });

  it('refuses duplicate names, non-finite values and bad shapes, leaving no file behind', () => {
    const file = path.join(root, 'bad.gguf');
    const one = (): Float32Array => Float32Array.from([1]);
    expect(() => writeGguf(file, new Map(), [{ name: 'x', shape: [1], type: 'F32', data: one }, { name: 'x', shape: [1], type: 'F32', data: one }])).toThrow(/appears twice/);
    expect(() => writeGguf(file, new Map(), [{ name: 'x', shape: [2], type: 'F32', data: () => Float32Array.from([1, NaN]) }])).toThrow(GgufError);
    expect(() => writeGguf(file, new Map(), [{ name: 'x', shape: [3], type: 'F32', data: one }])).toThrow(/needs 3 values/);
    expect(() => writeGguf(file, new Map([['k', { type: 'u32', value: -1 }]]), [])).toThrow(/not a valid u32/);
    // ggml/src/gguf.cpp refuses a name of GGML_MAX_NAME (64) bytes or more: 63 is the longest ggml loads.
    expect(() => writeGguf(file, new Map(), [{ name: 'n'.repeat(64), shape: [1], type: 'F32', data: one }])).toThrow(/64 bytes; ggml allows at most 63/);
    const ok = path.join(root, 'name63.gguf');
    writeGguf(ok, new Map(), [{ name: 'n'.repeat(63), shape: [1], type: 'F32', data: one }]);
    expect(existsSync(ok)).toBe(true);
    rmSync(ok);
    expect(existsSync(file)).toBe(false);
    expect(readdirSync(root).filter((f) => f.startsWith('bad.gguf'))).toEqual([]);
  });
});

describe('q/k permutation', () => {
  it('makes llama.cpp interleaved RoPE on the permuted rows equal HF half-split RoPE on the original rows', () => {
    const heads = 2;
    const D = 8;
    const cols = 3;
    const rng = new Rng(5);
    const W = new Float32Array(heads * D * cols);
    rng.fillNormal(W, 1);
    const x = Float32Array.from([0.3, -1.2, 0.7]);
    const proj = (M: Float32Array): number[] => Array.from({ length: heads * D }, (_, r) => M[r * cols]! * x[0]! + M[r * cols + 1]! * x[1]! + M[r * cols + 2]! * x[2]!);
    const pos = 3;
    const ang = (i: number): number => pos * Math.pow(10000, (-2 * i) / D);
    // HF rotate_half: pairs (j, j + D/2).
    const q = proj(W);
    const hf = [...q];
    for (let h = 0; h < heads; h++) {
      for (let j = 0; j < D / 2; j++) {
        const a = q[h * D + j]!;
        const b = q[h * D + j + D / 2]!;
        hf[h * D + j] = a * Math.cos(ang(j)) - b * Math.sin(ang(j));
        hf[h * D + j + D / 2] = b * Math.cos(ang(j)) + a * Math.sin(ang(j));
      }
    }
    // llama.cpp GGML_ROPE_TYPE_NORM: pairs (2j, 2j + 1).
    const qp = proj(permuteRows(W, heads * D, cols, heads));
    const gg = [...qp];
    for (let h = 0; h < heads; h++) {
      for (let j = 0; j < D / 2; j++) {
        const a = qp[h * D + 2 * j]!;
        const b = qp[h * D + 2 * j + 1]!;
        gg[h * D + 2 * j] = a * Math.cos(ang(j)) - b * Math.sin(ang(j));
        gg[h * D + 2 * j + 1] = b * Math.cos(ang(j)) + a * Math.sin(ang(j));
      }
    }
    // Attention scores are dot products within a head, so equal multisets per head suffice; check the map exactly.
    for (let h = 0; h < heads; h++) {
      for (let j = 0; j < D / 2; j++) {
        expect(gg[h * D + 2 * j]).toBeCloseTo(hf[h * D + j]!, 5);
        expect(gg[h * D + 2 * j + 1]).toBeCloseTo(hf[h * D + j + D / 2]!, 5);
      }
    }
  });
});

describe('HF → GGUF', () => {
  const dirs: Record<string, string> = {};
  beforeAll(() => {
    for (const arch of ['llama', 'qwen2'] as const) {
      dirs[arch] = writeTinyModel(path.join(root, arch), { arch, hidden: 16, heads: 4, kvHeads: 2, layers: 2, intermediate: 24 }).dir;
    }
  });

  for (const arch of ['llama', 'qwen2'] as const) {
    it(`${arch}: metadata from config.json, llama.cpp tensor names and fastest-first shapes, values in place`, async () => {
      const dir = dirs[arch]!;
      const out = path.join(root, `${arch}.gguf`);
      const progress: number[] = [];
      const r = hfToGguf(dir, out, { onProgress: (p) => progress.push(p.index) });
      const cfg = JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
      const g = await parse(out);
      const m = g.metadata as Record<string, unknown>;
      const a = arch === 'llama' ? 'llama' : 'qwen2';
      expect(m['general.architecture']).toBe(a);
      expect(m['general.file_type']).toBe(0);
      expect(m[`${a}.embedding_length`]).toBe(cfg['hidden_size']);
      expect(m[`${a}.block_count`]).toBe(cfg['num_hidden_layers']);
      expect(m[`${a}.feed_forward_length`]).toBe(cfg['intermediate_size']);
      expect(m[`${a}.attention.head_count`]).toBe(cfg['num_attention_heads']);
      expect(m[`${a}.attention.head_count_kv`]).toBe(cfg['num_key_value_heads']);
      expect(m[`${a}.context_length`]).toBe(cfg['max_position_embeddings']);
      expect(m[`${a}.rope.freq_base`]).toBe(cfg['rope_theta']);
      expect(m[`${a}.attention.layer_norm_rms_epsilon`]).toBeCloseTo(cfg['rms_norm_eps'] as number, 12);
      expect(m['tokenizer.ggml.model']).toBe('gpt2');
      expect(m['tokenizer.ggml.pre']).toBe(arch === 'llama' ? 'llama-bpe' : 'qwen2');
      expect((m['tokenizer.ggml.tokens'] as string[]).length).toBe(cfg['vocab_size']);
      expect(typeof m['tokenizer.chat_template']).toBe('string');
      expect(progress).toEqual([...Array(r.tensors).keys()]);

      const infos = new Map(g.tensorInfos.map((t) => [t.name, t]));
      const H = cfg['hidden_size'] as number;
      const V = cfg['vocab_size'] as number;
      expect(infos.get('token_embd.weight')!.shape).toEqual([BigInt(H), BigInt(V)]);
      expect(infos.get('blk.1.attn_k.weight')!.shape).toEqual([BigInt(H), BigInt((H / 4) * 2)]);
      expect(infos.get('blk.0.ffn_down.weight')!.shape).toEqual([24n, BigInt(H)]);
      expect(infos.has('output.weight')).toBe(arch === 'llama'); // the tiny qwen2 ties its lm_head
      expect(infos.has('blk.0.attn_q.bias')).toBe(arch === 'qwen2');
      expect(infos.has('rope_freqs.weight')).toBe(arch === 'llama'); // Llama 3 scaling
      // A weight copied unchanged (v is never permuted) reads back bit for bit.
      const hf = loadHfModel(dir, { tokenizer: false });
      const vRef = hf.read('model.layers.1.self_attn.v_proj.weight') as Float32Array;
      const qRef = hf.read('model.layers.0.self_attn.q_proj.weight') as Float32Array;
      hf.close();
      const start = dataStart(g.tensorInfoByteRange);
      const read = (name: string, n: number): Float32Array => {
        const b = tensorBytes(out, infos.get(name)!, start, n * 4);
        return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
      };
      expect(read('blk.1.attn_v.weight', vRef.length)).toEqual(vRef);
      const q = read('blk.0.attn_q.weight', qRef.length);
      if (arch === 'qwen2') expect(q).toEqual(qRef);
      else {
        expect(q).not.toEqual(qRef);
        expect(q).toEqual(permuteRows(qRef, H, H, 4));
      }
    });
  }

  it('f16: 2-D weights as F16 within half-precision rounding, norms and biases kept F32', async () => {
    const out = path.join(root, 'qwen2-f16.gguf');
    const f32File = path.join(root, 'qwen2.gguf');
    const g32 = await parse(f32File);
    hfToGguf(dirs['qwen2']!, out, { type: 'f16' });
    const g = await parse(out);
    const dataBytes = (file: string, range: [number, number] | undefined): number => readFileSync(file).length - dataStart(range);
    expect(dataBytes(out, g.tensorInfoByteRange)).toBeLessThan(dataBytes(f32File, g32.tensorInfoByteRange) * 0.55);
    expect((g.metadata as Record<string, unknown>)['general.file_type']).toBe(1);
    for (const t of g.tensorInfos) expect([t.name, t.dtype]).toEqual([t.name, t.shape.length >= 2 ? 1 : 0]);
    const info = g.tensorInfos.find((t) => t.name === 'blk.0.ffn_up.weight')!;
    const hf = loadHfModel(dirs['qwen2']!, { tokenizer: false });
    const ref = hf.read('model.layers.0.mlp.up_proj.weight');
    hf.close();
    const b = tensorBytes(out, info, dataStart(g.tensorInfoByteRange), ref.length * 2);
    let worst = 0;
    for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(f16ToF32(b.readUInt16LE(2 * i)) - ref[i]!) / Math.max(Math.abs(ref[i]!), 1e-4));
    expect(worst).toBeLessThan(1e-3);
  });

  it('vocabulary: tokens and types from tokenizer.json, [PAD] entries past the tokenizer, special ids', () => {
    const dir = dirs['qwen2']!;
    const tj = JSON.parse(readFileSync(path.join(dir, 'tokenizer.json'), 'utf8')) as {
      model: { vocab: Record<string, number> };
      added_tokens: { id: number; content: string; special: boolean }[];
    };
    const size = Object.keys(tj.model.vocab).length + tj.added_tokens.length;
    const v = vocabMetadata(dir, size + 3, { bos: 151643, eos: null });
    expect(v.tokens.length).toBe(size + 3);
    expect(v.tokens[tj.model.vocab['Ġthe']!]).toBe('Ġthe');
    expect(v.tokens[size + 1]).toBe(`[PAD${size + 1}]`);
    const types = (v.metadata.get('tokenizer.ggml.token_type') as { value: Int32Array }).value;
    expect(types[size + 1]).toBe(TOKEN_TYPE.UNUSED);
    expect(types[tj.model.vocab['Ġthe']!]).toBe(TOKEN_TYPE.NORMAL);
    const imEnd = tj.added_tokens.find((t) => t.content === '<|im_end|>')!;
    expect(types[imEnd.id]).toBe(TOKEN_TYPE.CONTROL);
    const think = tj.added_tokens.find((t) => t.content === '<think>');
    if (think !== undefined) expect(types[think.id]).toBe(think.special ? TOKEN_TYPE.CONTROL : TOKEN_TYPE.USER_DEFINED);
    expect(v.eos).toBe(imEnd.id); // tokenizer_config.json eos_token
    expect(v.bos).toBe(151643); // config.json, as tokenizer_config.json has bos_token null
    expect(v.addBos).toBe(false);
    expect(() => vocabMetadata(dir, size - 1, { bos: null, eos: null })).toThrow(/vocab_size/);
  });

  it('refuses an unknown pre-tokenizer and a non-BPE tokenizer by name', () => {
    const dir = path.join(root, 'odd-tok');
    writeTinyModel(dir, { arch: 'qwen2', hidden: 8, heads: 2, kvHeads: 1, layers: 1 });
    const tjPath = path.join(dir, 'tokenizer.json');
    const tj = JSON.parse(readFileSync(tjPath, 'utf8')) as { pre_tokenizer: { pretokenizers: { pattern?: { Regex: string } }[] }; model: { type: string } };
    tj.pre_tokenizer.pretokenizers[0]!.pattern = { Regex: '\\s+' };
    writeFileSync(tjPath, JSON.stringify(tj));
    expect(() => hfToGguf(dir, path.join(root, 'odd.gguf'))).toThrow(/unknown pre-tokenizer/);
    tj.model.type = 'Unigram';
    writeFileSync(tjPath, JSON.stringify(tj));
    expect(() => hfToGguf(dir, path.join(root, 'odd.gguf'))).toThrow(/byte-level BPE/);
    expect(existsSync(path.join(root, 'odd.gguf'))).toBe(false);
  });
});

describe('PEFT → GGUF LoRA', () => {
  it('writes adapter metadata and A/B under the base tensor names, B rows permuted for llama q/k', async () => {
    const dir = writeTinyModel(path.join(root, 'lora-base'), { arch: 'llama', hidden: 16, heads: 4, kvHeads: 2, layers: 2, intermediate: 24 }).dir;
    const config = parseLlamaConfig(JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8')));
    const adapter = fromBase(llamaLinearParams(config), loraSpec({ r: 4, alpha: 8, rslora: true }), 1);
    const rng = new Rng(2);
    for (const p of adapter.pairs) rng.fork(p.baseKey).fillNormal(p.b, 0.1);
    const peft = path.join(root, 'peft');
    savePeftAdapter(peft, adapter, { baseModel: dir });
    const out = path.join(root, 'lora.gguf');
    const r = peftToGguf(peft, config, out);
    expect(r.tensors).toBe(adapter.pairs.length * 2);
    const g = await parse(out);
    const m = g.metadata as Record<string, unknown>;
    expect(m['general.type']).toBe('adapter');
    expect(m['adapter.type']).toBe('lora');
    expect(m['general.architecture']).toBe('llama');
    expect(m['adapter.lora.alpha']).toBeCloseTo(8 * Math.sqrt(4), 5); // rsLoRA: alpha/√r = alpha'/r
    const infos = new Map(g.tensorInfos.map((t) => [t.name, t]));
    const q = adapter.pairs.find((p) => p.module === 'q_proj' && p.layer === 1)!;
    const name = ggufTensorName({ name: 'q_proj', layer: 1 });
    expect(infos.get(`${name}.lora_a`)!.shape).toEqual([16n, 4n]); // A [r, in] → dims [in, r]
    expect(infos.get(`${name}.lora_b`)!.shape).toEqual([4n, 16n]); // B [out, r] → dims [r, out]
    const start = dataStart(g.tensorInfoByteRange);
    const read = (n: string, len: number): Float32Array => {
      const b = tensorBytes(out, infos.get(n)!, start, len * 4);
      return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
    };
    expect(read(`${name}.lora_a`, q.a.length)).toEqual(q.a);
    expect(read(`${name}.lora_b`, q.b.length)).toEqual(permuteRows(q.b, 16, 4, 4));
    const v = adapter.pairs.find((p) => p.module === 'v_proj' && p.layer === 0)!;
    expect(read('blk.0.attn_v.weight.lora_b', v.b.length)).toEqual(v.b);
  });

  it('refuses an adapter that does not fit the base model', () => {
    const dir = path.join(root, 'lora-base');
    const config = parseLlamaConfig(JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8')));
    const other = parseLlamaConfig({ ...JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8')), hidden_size: 32, head_dim: 8 });
    const adapter = fromBase(llamaLinearParams(other), loraSpec({ r: 2 }), 0);
    const peft = path.join(root, 'peft-other');
    savePeftAdapter(peft, adapter, { baseModel: 'other' });
    expect(() => peftToGguf(peft, config, path.join(root, 'x.gguf'))).toThrow(/base weight is/);
  });
});
