import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelConfigError } from '../../common/engine/families/params.ts';
import { ModelLoadError, loadHfModel } from './hf.ts';
import { SafetensorsError, SafetensorsFile, writeSafetensors } from './safetensors.ts';
import { tokenizerSourceDir, writeTinyModel } from './tiny.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-hf-'));
const llamaDir = path.join(root, 'llama');
const qwenDir = path.join(root, 'qwen');
let n = 0;

beforeAll(() => {
  writeTinyModel(llamaDir, { arch: 'llama', hidden: 16, layers: 2, shards: 3, dtype: 'BF16', seed: 1 });
  writeTinyModel(qwenDir, { arch: 'qwen2', hidden: 16, layers: 2, seed: 1 });
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A copy of a model directory without its (large) tokenizer files, to break in one place. */
function clone(src: string, withTokenizer = false): string {
  const dst = path.join(root, `case-${n++}`);
  mkdirSync(dst);
  for (const f of readdirSync(src)) {
    if (!withTokenizer && f.startsWith('tokenizer')) continue;
    copyFileSync(path.join(src, f), path.join(dst, f));
  }
  return dst;
}

function editConfig(dir: string, patch: Record<string, unknown>): void {
  const p = path.join(dir, 'config.json');
  writeFileSync(p, JSON.stringify({ ...JSON.parse(readFileSync(p, 'utf8')), ...patch }));
}

function loadError(dir: string, opts = { tokenizer: false }): Error {
  const t0 = performance.now();
  try {
    loadHfModel(dir, opts).close();
  } catch (e) {
    // "Never hangs": a generous bound, since CI shares two cores.
    expect(performance.now() - t0).toBeLessThan(30_000);
    return e as Error;
  }
  throw new Error('expected loadHfModel to fail');
}

describe('HF model loading', () => {
  it('loads a sharded, untied, bf16 Llama with its tokenizer and generation config', () => {
    const m = loadHfModel(llamaDir);
    expect(m.config.architecture).toBe('LlamaForCausalLM');
    expect(m.config.ropeScaling?.type).toBe('llama3');
    expect(m.config.vocabSize).toBe(m.tokenizer!.size);
    expect(readdirSync(llamaDir).filter((f) => f.endsWith('.safetensors'))).toHaveLength(3);
    expect(m.params.at(-1)!.hfKey).toBe('lm_head.weight');
    expect(m.storedDtype('model.layers.1.mlp.up_proj.weight')).toBe('BF16');
    const w = m.read('model.layers.1.mlp.up_proj.weight');
    expect(w).toHaveLength(48 * 16);
    const std = Math.sqrt(Array.from(w).reduce((s, x) => s + x * x, 0) / w.length);
    expect(std).toBeGreaterThan(0.015);
    expect(std).toBeLessThan(0.025);
    const norm = m.read('model.layers.0.input_layernorm.weight');
    expect(Math.abs(Array.from(norm).reduce((s, x) => s + x, 0) / norm.length - 1)).toBeLessThan(0.1);
    expect(m.read('model.norm.weight', { as: 'f64' })).toBeInstanceOf(Float64Array);
    expect(m.tokenizer!.eosIds).toEqual(expect.arrayContaining([128001, 128009]));
    expect(() => m.read('model.layers.9.mlp.up_proj.weight')).toThrow(ModelLoadError);
    m.close();
  });

  it('loads a tied Qwen2 with q/k/v biases', () => {
    const m = loadHfModel(qwenDir, { tokenizer: false, scanAll: true });
    expect(m.config.tieWordEmbeddings).toBe(true);
    expect(m.params.some((p) => p.hfKey === 'lm_head.weight')).toBe(false);
    expect(m.read('model.layers.0.self_attn.q_proj.bias')).toHaveLength(16);
    expect(m.tokenizer).toBeNull();
    m.close();
  });

  it('the tiny generator is deterministic under a seed', () => {
    const again = path.join(root, 'qwen-again');
    const other = path.join(root, 'qwen-other');
    writeTinyModel(again, { arch: 'qwen2', hidden: 16, layers: 2, seed: 1 });
    writeTinyModel(other, { arch: 'qwen2', hidden: 16, layers: 2, seed: 2 });
    const bytes = (d: string) => readFileSync(path.join(d, 'model.safetensors'));
    expect(bytes(again).equals(bytes(qwenDir))).toBe(true);
    expect(bytes(other).equals(bytes(qwenDir))).toBe(false);
    expect(() => writeTinyModel(again, { arch: 'qwen2', hidden: 16 })).toThrow(/not empty/);
    expect(() => writeTinyModel(path.join(root, 'x'), { arch: 'llama', hidden: 18, heads: 4 })).toThrow(/multiple of heads/);
  });

  describe('bad model directories get named errors', () => {
    it('missing directory or config.json', () => {
      expect(loadError(path.join(root, 'nowhere'))).toBeInstanceOf(ModelLoadError);
      const d = clone(qwenDir);
      rmSync(path.join(d, 'config.json'));
      const e = loadError(d);
      expect(e).toBeInstanceOf(ModelLoadError);
      expect(e.message).toMatch(/config\.json is missing/);
    });

    it('unknown architecture', () => {
      const d = clone(qwenDir);
      editConfig(d, { architectures: ['GPTNeoXForCausalLM'] });
      const e = loadError(d);
      expect(e).toBeInstanceOf(ModelConfigError);
      expect(e.message).toMatch(/unsupported architecture GPTNeoXForCausalLM/);
    });

    it('missing shard', () => {
      const d = clone(llamaDir);
      rmSync(path.join(d, 'model-00002-of-00003.safetensors'));
      const e = loadError(d);
      expect(e).toBeInstanceOf(ModelLoadError);
      expect(e.message).toMatch(/shard model-00002-of-00003\.safetensors .* is missing/);
    });

    it('no weights at all', () => {
      const d = clone(qwenDir);
      rmSync(path.join(d, 'model.safetensors'));
      expect(loadError(d).message).toMatch(/no model\.safetensors/);
    });

    it('a tensor whose shape does not match the config', () => {
      const d = clone(qwenDir);
      editConfig(d, { intermediate_size: 40 });
      const e = loadError(d);
      expect(e).toBeInstanceOf(ModelLoadError);
      expect(e.message).toMatch(/model\.layers\.0\.mlp\.gate_proj\.weight has shape \[48, 16\], config\.json implies \[40, 16\]/);
    });

    it('a missing tensor (an untied config without lm_head.weight)', () => {
      const d = clone(qwenDir);
      editConfig(d, { tie_word_embeddings: false });
      const e = loadError(d);
      expect(e).toBeInstanceOf(ModelLoadError);
      expect(e.message).toMatch(/tensor lm_head\.weight is missing .*tie_word_embeddings/);
    });

    it('NaN in the weights, found at read time or by a full scan', () => {
      const d = clone(qwenDir);
      const file = path.join(d, 'model.safetensors');
      const src = SafetensorsFile.open(file);
      const tensors = Object.fromEntries(src.names().map((k) => [k, { shape: src.info(k).shape, data: src.read(k) as Float32Array }]));
      src.close();
      tensors['model.layers.1.self_attn.v_proj.weight']!.data[5] = NaN;
      writeSafetensors(file, tensors);
      const m = loadHfModel(d, { tokenizer: false });
      expect(() => m.read('model.layers.1.self_attn.v_proj.weight')).toThrow(/v_proj\.weight holds a non-finite value \(NaN\) at flat index 5/);
      expect(m.read('model.layers.1.self_attn.k_proj.weight')).toHaveLength(8 * 16);
      m.close();
      expect(loadError(d, { tokenizer: false, scanAll: true } as { tokenizer: false })).toBeInstanceOf(ModelLoadError);
    });

    it('a corrupt safetensors header inside the model', () => {
      const d = clone(qwenDir);
      const file = path.join(d, 'model.safetensors');
      const bytes = readFileSync(file);
      bytes.writeBigUInt64LE(BigInt(bytes.length), 0);
      writeFileSync(file, bytes);
      expect(loadError(d)).toBeInstanceOf(SafetensorsError);
    });

    it('a tokenizer whose ids do not fit the embedding', () => {
      const d = clone(llamaDir);
      // Qwen's tokenizer has 151669 ids; this Llama's embedding has 128256 rows.
      for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(path.join(tokenizerSourceDir('qwen2'), f), path.join(d, f));
      const e = loadError(d, { tokenizer: true } as never);
      expect(e).toBeInstanceOf(ModelLoadError);
      expect(e.message).toMatch(/tokenizer has 151669 token ids but the embedding only 128256 rows/);
    });
  });
});
