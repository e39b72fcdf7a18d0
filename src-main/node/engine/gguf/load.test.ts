// A GGUF file as a training base (load.ts, read.ts): tiny Llama (q/k rows permuted by the writer, untied) and Qwen2
// (biases, tied) models written by our converter load back to the HF weights exactly (f32) or to ggml's dequantized
// values (Q8_0, Q4_K), with the config, tokenizer and chat template of the HF directory; the engine on the .gguf alone
// computes what it computes on the HF directory. Bad files (truncated, a type or architecture we do not read, headers
// claiming more than the file holds) are refused with errors that name the problem, before anything is allocated.
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelParams } from '../../../common/engine/families/registry.ts';
import { Engine, baseEngineOptions } from '../engine.ts';
import { loadHfModel, loadModel } from '../hf.ts';
import type { HfModel } from '../hf.ts';
import { writeTinyModel } from '../tiny.ts';
import { permuteHeads, permuteRows, ggufTensorName } from './arch.ts';
import { hfToGguf } from './convert.ts';
import { ggufActQuant, loadGgufModel } from './load.ts';
import { dequantize, quantize } from './quant.ts';
import { GgufFile } from './read.ts';
import { dequantize as dequantizeBlocks } from '../../../common/engine/quant.ts';
import { Rng } from '../../../common/engine/rng.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-gguf-load-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const TEXTS = ['Hello world', 'def fib(n):\n    return n', 'naïve café 日本語 🤖', "it's 1234567"];

// Llama is read back from Q8_0 and Qwen2 from Q4_K (quantizing a ~150k × 256 embedding to Q4_K takes 20-60 s on a
// loaded 2-core machine, so each model is quantized once, and the one with a tied lm_head takes Q4_K).
const models: Record<'llama' | 'qwen2', { dir: string; f32: string; quant: string; type: 'Q8_0' | 'Q4_K' }> = {} as never;

beforeAll(() => {
  for (const arch of ['llama', 'qwen2'] as const) {
    // hidden 256 so that the rows of every weight fit Q4_K's 256-value blocks.
    const dir = writeTinyModel(path.join(root, arch), { arch, hidden: 256, heads: 4, kvHeads: 2, layers: 1, intermediate: 256, std: 0.1, seed: 5 }).dir;
    const f32 = path.join(root, `${arch}-f32.gguf`);
    const type = arch === 'qwen2' ? 'Q4_K' : 'Q8_0';
    const quant = path.join(root, `${arch}-${type}.gguf`);
    hfToGguf(dir, f32);
    expect(hfToGguf(dir, quant, { type: type === 'Q4_K' ? 'q4_k' : 'q8_0' }).fallbacks).toEqual([]);
    models[arch] = { dir, f32, quant, type };
  }
}, 600_000);

function withModels<T>(a: string, b: string, fn: (x: HfModel, y: HfModel) => T): T {
  const x = loadModel(a);
  const y = loadModel(b);
  try {
    return fn(x, y);
  } finally {
    x.close();
    y.close();
  }
}

describe.each(['llama', 'qwen2'] as const)('tiny %s from GGUF', (arch) => {
  it('f32: config, every weight (q/k rows back in HF order) and the tokenizer equal the HF directory', () => {
    withModels(models[arch].dir, models[arch].f32, (hf, g) => {
      // A GGUF has one eos id; the others config.json lists come back as llama.cpp's end-of-generation tokens.
      expect({ ...g.config, eosTokenIds: [] }).toEqual({ ...hf.config, eosTokenIds: [] });
      // (An id whose token text llama.cpp does not know as an end, like this Llama 3.0 vocabulary's reserved 128008
      // that the tiny config lists, is lost: a GGUF cannot say it.)
      const hfEos = new Set([...hf.config.eosTokenIds, ...hf.tokenizer!.eosIds]);
      for (const id of g.config.eosTokenIds) expect(hfEos).toContain(id);
      expect(g.config.eosTokenIds).toContain(hf.tokenizer!.eosIds[0]);
      expect(g.config.eosTokenIds.length).toBeGreaterThanOrEqual(2);
      expect(g.params.map((p) => p.hfKey)).toEqual(hf.params.map((p) => p.hfKey));
      for (const p of hf.params) expect([p.hfKey, Buffer.from((g.read(p.hfKey) as Float32Array).buffer).equals(Buffer.from((hf.read(p.hfKey) as Float32Array).buffer))]).toEqual([p.hfKey, true]);
      const ht = hf.tokenizer!, gt = g.tokenizer!;
      for (const t of TEXTS) expect([t, gt.encode(t)]).toEqual([t, ht.encode(t)]);
      // The GGUF's bos is tokenizer_config.json's, else config.json's id (Qwen's tokenizer_config names none).
      expect([gt.bosId, new Set(gt.eosIds), gt.chatTemplate]).toEqual([ht.bosId ?? hf.config.bosTokenId, new Set(g.config.eosTokenIds), ht.chatTemplate]);
      const chat = [{ role: 'user' as const, content: 'hi there' }];
      expect(gt.encodeTurn(chat, 'hello!')).toEqual(ht.encodeTurn(chat, 'hello!'));
    });
  });

  it('quantized: each 2-D weight is ggml\'s dequantization of the file, in HF order; 1-D weights exact', () => {
    const type = models[arch].type;
    withModels(models[arch].dir, models[arch].quant, (hf, g) => {
      const c = hf.config;
      for (const p of hf.params) {
        const w = hf.read(p.hfKey) as Float32Array;
        const got = g.read(p.hfKey) as Float32Array;
        expect(g.storedDtype(p.hfKey)).toBe(p.shape.length === 1 ? 'F32' : type);
        if (p.shape.length === 1) {
          expect(got).toEqual(w);
          continue;
        }
        const heads = permuteHeads(c, p.name);
        const inFile = heads === null ? w : permuteRows(w, p.shape[0]!, p.shape[1]!, heads);
        const deq = dequantize(type, quantize(type, inFile), w.length);
        // Un-permuting the dequantized file rows gives back HF order: compare in the file's order.
        const gotInFile = heads === null ? got : permuteRows(got, p.shape[0]!, p.shape[1]!, heads);
        expect([p.hfKey, Buffer.from(gotInFile.buffer).equals(Buffer.from(deq.buffer))]).toEqual([p.hfKey, true]);
        let err = 0;
        for (let i = 0; i < w.length; i++) err = Math.max(err, Math.abs(got[i]! - w[i]!));
        expect(err).toBeGreaterThan(0);
        expect(err).toBeLessThan(type === 'Q8_0' ? 0.01 : 0.1);
      }
    });
  }, 300_000);
});

describe('the engine on a .gguf alone', () => {
  it('computes the same log-probs as on the HF directory (Llama: the q/k permutation undone)', async () => {
    const a = Engine.load(models.llama.dir, { threads: 1, buckets: [16] });
    const b = Engine.load(models.llama.f32, { threads: 1, buckets: [16] });
    try {
      const ids = a.tokenizer!.encode('def f(a): return a+1');
      expect(b.tokenizer!.encode('def f(a): return a+1')).toEqual(ids);
      const x = await a.logprobs(ids);
      const y = await b.logprobs(ids);
      let d = 0;
      for (let i = 0; i < x.length; i++) d = Math.max(d, Math.abs(x[i]! - y[i]!));
      expect(d).toBe(0);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe("llama.cpp's activation rounding, from the weight types (config.actQuant)", () => {
  const table = (file: string, opts: { matchLlamaCpp?: boolean } = {}) => {
    const m = loadGgufModel(file, { tokenizer: false, ...opts });
    m.close();
    return m.config.actQuant;
  };
  const LINEARS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

  it('Q8_0 weights round to Q8_0 blocks (untied lm_head too), Q4_K to Q8_K (tied: token_embd\'s type), f32 not at all', () => {
    expect(table(models.llama.quant)).toEqual({ modules: Object.fromEntries(LINEARS.map((m) => [m, 'q8_0'])), lmHead: 'q8_0', mixed: [] });
    expect(table(models.qwen2.quant)).toEqual({ modules: Object.fromEntries(LINEARS.map((m) => [m, 'q8_K'])), lmHead: 'q8_K', mixed: [] });
    expect(table(models.llama.f32)).toBeUndefined();
    expect(table(models.qwen2.f32)).toBeUndefined();
  });

  it('matchLlamaCpp: false leaves the products exact', () => {
    expect(table(models.llama.quant, { matchLlamaCpp: false })).toBeUndefined();
  });

  it('one kind per module across layers: Q4_K and Q6_K share Q8_K; a module whose layers differ keeps exact inputs and is named', () => {
    const m = loadGgufModel(models.llama.quant, { tokenizer: false });
    m.close();
    const cfg = { ...m.config, numLayers: 2 };
    const params = modelParams(cfg);
    // A Q4_K_M-like mix: down_proj Q6_K in layer 0 and Q4_K in layer 1; v_proj Q8_0 in layer 0 and F16 in layer 1.
    const types: Record<string, string> = { 'blk.0.ffn_down.weight': 'Q6_K', 'blk.1.ffn_down.weight': 'Q4_K', 'blk.1.attn_v.weight': 'F16', 'output.weight': 'Q6_K' };
    const fake = { info: (name: string) => ({ type: types[name] ?? 'Q8_0' }) } as unknown as GgufFile;
    expect(ggufActQuant(fake, cfg, params)).toEqual({
      modules: { q_proj: 'q8_0', k_proj: 'q8_0', o_proj: 'q8_0', gate_proj: 'q8_0', up_proj: 'q8_0', down_proj: 'q8_K' },
      lmHead: 'q8_K',
      mixed: ['v_proj'],
    });
  });
});

describe.each(['llama', 'qwen2'] as const)('tiny %s GGUF kept block-quantized (Engine quantized: true)', (arch) => {
  it('each Q8_0/Q4_K weight dequantizes to what ggml reads, and the engine gives the dequantized path\'s log-probs', async () => {
    const g = loadModel(models[arch].quant);
    try {
      for (const p of g.params) {
        const q = g.readQuant!(p.hfKey);
        if (p.shape.length === 1) {
          expect(q).toBeNull();
          continue;
        }
        expect([p.hfKey, q?.spec]).toEqual([p.hfKey, models[arch].type === 'Q8_0' ? { bits: 8, zeroPoints: false } : { bits: 4, zeroPoints: true }]);
        const want = g.read(p.hfKey) as Float32Array;
        const got = dequantizeBlocks(q!);
        let err = 0;
        for (let i = 0; i < want.length; i++) err = Math.max(err, Math.abs(got[i]! - want[i]!));
        expect(err, p.hfKey).toBeLessThan(1e-6);
      }
    } finally {
      g.close();
    }
    // As a round loads it (baseEngineOptions), with the setting training.keepQuantized on (the default) and off.
    const as = (keep: boolean) => ({ ...baseEngineOptions({ 'training.matchLlamaCpp': true, 'training.keepQuantized': keep }, 1), buckets: [16] });
    const q = Engine.load(models[arch].quant, as(true));
    const f = Engine.load(models[arch].quant, as(false));
    try {
      expect([q.driver.quantized, f.driver.quantized]).toEqual([true, false]);
      const ids = q.tokenizer!.encode('def f(a): return a+1');
      const adapter = q.newAdapter({ r: 4, alpha: 8 }, 3);
      const rng = new Rng(4);
      for (const p of adapter.pairs) rng.fork(p.baseKey).fillNormal(p.b, 0.05);
      for (const ad of [null, adapter]) {
        const x = await q.logprobs(ids, { adapter: ad });
        const y = await f.logprobs(ids, { adapter: ad });
        let d = 0;
        for (let i = 0; i < x.length; i++) d = Math.max(d, Math.abs(x[i]! - y[i]!));
        expect(d, `max |Δ log p| ${ad === null ? 'base' : 'with LoRA'}`).toBeLessThan(1e-4);
      }
      // A LoRA step on the quantized base: the same gradients as on the f32 base, and a step along them raises Σ log p.
      const ones = (lp: Float64Array): Float64Array => new Float64Array(lp.length).fill(1);
      const gq = await q.driver.grad(ids, 1, adapter, ones);
      const gf = await f.driver.grad(ids, 1, adapter, ones);
      let num = 0;
      let den = 0;
      gq.grads.forEach((gr, k) => {
        for (const w of ['a', 'b'] as const) {
          for (let i = 0; i < gr[w].length; i++) {
            num = Math.max(num, Math.abs(gr[w][i]! - gf.grads[k]![w][i]!));
            den = Math.max(den, Math.abs(gf.grads[k]![w][i]!));
          }
        }
      });
      expect(den).toBeGreaterThan(0);
      expect(num / den).toBeLessThan(1e-4);
      const before = gq.logp.reduce((s, v) => s + v, 0);
      adapter.pairs.forEach((p, k) => {
        for (const w of ['a', 'b'] as const) for (let i = 0; i < p[w].length; i++) p[w][i]! += (1e-3 / den) * gq.grads[k]![w][i]!;
      });
      const after = (await q.logprobs(ids, { adapter })).reduce((s, v) => s + v, 0);
      expect(after).toBeGreaterThan(before);
    } finally {
      await q.close();
      await f.close();
    }
  }, 300_000);
});

// Hand-built GGUF headers, for files the writer would never produce.
function header(kv: [string, number, Buffer][], tensors: { name: string; ne: (number | bigint)[]; type: number; offset?: bigint }[], counts?: { tensors?: bigint; kv?: bigint }): Buffer {
  const parts: Buffer[] = [];
  const u32 = (v: number): Buffer => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    return b;
  };
  const u64 = (v: number | bigint): Buffer => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    return b;
  };
  const str = (s: string): Buffer => Buffer.concat([u64(Buffer.byteLength(s)), Buffer.from(s)]);
  parts.push(Buffer.from('GGUF'), u32(3), u64(counts?.tensors ?? BigInt(tensors.length)), u64(counts?.kv ?? BigInt(kv.length)));
  for (const [k, t, v] of kv) parts.push(str(k), u32(t), v);
  for (const t of tensors) parts.push(str(t.name), u32(t.ne.length), ...t.ne.map(u64), u32(t.type), u64(t.offset ?? 0n));
  const h = Buffer.concat(parts);
  return Buffer.concat([h, Buffer.alloc((32 - (h.length % 32)) % 32)]);
}

describe('bad GGUF files get a clear error, never an allocation', () => {
  const file = (name: string, bytes: Buffer): string => {
    const p = path.join(root, name);
    writeFileSync(p, bytes);
    return p;
  };
  const arch: [string, number, Buffer] = ['general.architecture', 8, Buffer.concat([Buffer.from([5, 0, 0, 0, 0, 0, 0, 0]), Buffer.from('llama')])];

  it('a truncated file: in the data, and in the header', () => {
    const p = path.join(root, 'cut.gguf');
    writeFileSync(p, readFileSync(models.qwen2.quant));
    truncateSync(p, readFileSync(p).length - 100);
    expect(() => GgufFile.open(p)).toThrow(/truncated or corrupt: tensor \S+ .* needs bytes \d+\.\.\d+, the file has \d+/);
    truncateSync(p, 5000);
    expect(() => GgufFile.open(p)).toThrow(/truncated or corrupt: .* needs \d+ bytes at offset \d+/);
    expect(() => GgufFile.open(file('empty.gguf', Buffer.alloc(0)))).toThrow(/not a GGUF file/);
  });

  it('a tensor type we do not read is named', () => {
    const p = file('q2k.gguf', Buffer.concat([header([arch], [{ name: 'blk.0.attn_q.weight', ne: [256, 1], type: 10 }]), Buffer.alloc(84)]));
    expect(() => GgufFile.open(p)).toThrow(/tensor blk\.0\.attn_q\.weight has ggml type Q2_K, which we cannot read \(we read F32, F16, Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K, BF16\)/);
  });

  it('headers claiming 100 GB: a tensor, a string, an array, a trillion tensors', () => {
    const big = file('big-tensor.gguf', header([arch], [{ name: 'token_embd.weight', ne: [4096, 6_553_600], type: 0 }]));
    expect(() => GgufFile.open(big)).toThrow(/tensor token_embd\.weight \[4096, 6553600\] F32 needs bytes \d+\.\.107374182\d+, the file has \d+/);
    const s = Buffer.concat([Buffer.alloc(8), Buffer.from('x')]);
    s.writeBigUInt64LE(100_000_000_000n);
    expect(() => GgufFile.open(file('big-str.gguf', header([['general.name', 8, s]], [])))).toThrow(/metadata general\.name needs 100000000000 bytes/);
    const arr = Buffer.alloc(12);
    arr.writeUInt32LE(8, 0);
    arr.writeBigUInt64LE(25_000_000_000n, 4);
    expect(() => GgufFile.open(file('big-arr.gguf', header([['tokenizer.ggml.tokens', 9, arr]], [])))).toThrow(/tokenizer\.ggml\.tokens \(25000000000 elements\) needs 200000000000 bytes/);
    expect(() => GgufFile.open(file('many.gguf', header([], [], { tensors: 1n << 40n })))).toThrow(/1099511627776 tensor infos needs \d+ bytes/);
    expect(() => GgufFile.open(file('huge-count.gguf', header([], [], { kv: 1n << 62n })))).toThrow(/metadata count is 4611686018427387904, beyond any file's size/);
  });

  it('an architecture we do not train, and a LoRA adapter given as a base', () => {
    const g2 = writeTinyModel(path.join(root, 'gemma2'), { arch: 'gemma2', hidden: 32, heads: 4, kvHeads: 2, layers: 1, intermediate: 32 }).dir;
    const gg = path.join(root, 'gemma2.gguf');
    hfToGguf(g2, gg);
    expect(() => loadGgufModel(gg)).toThrow(/architecture "gemma2" cannot be trained \(trainable: llama, qwen2, qwen3\)/);
    const lora = file('lora.gguf', header([arch, ['general.type', 8, Buffer.concat([Buffer.from([7, 0, 0, 0, 0, 0, 0, 0]), Buffer.from('adapter')])]], []));
    expect(() => loadGgufModel(lora)).toThrow(/general\.type is "adapter": this is not a base model/);
  });

  it('a tensor missing from the file is named with its HF key', () => {
    const g = GgufFile.open(models.qwen2.f32);
    const names = [...g.tensors.keys()];
    g.close();
    expect(names).toContain(ggufTensorName({ name: 'q_proj', layer: 0 }));
    const m = loadHfModel(models.qwen2.dir, { tokenizer: false });
    m.close();
    // Rename blk.0.attn_q.weight in place (same length), so the parameter table finds it missing.
    const bytes = readFileSync(models.qwen2.f32);
    const at = bytes.indexOf(Buffer.from('blk.0.attn_q.weight'));
    bytes.write('blk.0.attn_Q.weight', at);
    const p = file('renamed.gguf', bytes);
    expect(() => loadGgufModel(p)).toThrow(/tensor blk\.0\.attn_q\.weight \(model\.layers\.0\.self_attn\.q_proj\.weight\) is missing/);
  });
});
