import { describe, expect, it } from 'vitest';
import { LoraError, fromBase, fuse, loraScale, loraSpec, loraTargets, peftKeys } from './lora.ts';
import { llamaLinearParams, parseLlamaConfig } from './families/llama.ts';
import { Rng } from './rng.ts';

const config = parseLlamaConfig({
  architectures: ['Qwen2ForCausalLM'],
  vocab_size: 100,
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: true,
});

describe('LoRA', () => {
  it('scales by alpha/r, or alpha/√r with rsLoRA', () => {
    expect(loraScale({ r: 16, alpha: 32, rslora: false })).toBe(2);
    expect(loraScale({ r: 16, alpha: 32, rslora: true })).toBe(8);
  });

  it('fromBase makes PEFT-shaped pairs for every targeted linear: A in ±1/√in, B zero, deterministic', () => {
    const spec = loraSpec({ r: 4 });
    const ad = fromBase(llamaLinearParams(config), spec, 1);
    expect(ad.pairs).toHaveLength(2 * 7);
    const q = ad.pairs.find((p) => p.baseKey === 'model.layers.1.self_attn.k_proj.weight')!;
    expect([q.outFeatures, q.inFeatures]).toEqual([8, 16]); // KV = 2 heads × D 4
    expect(q.a).toHaveLength(4 * 16);
    expect(q.b).toHaveLength(8 * 4);
    expect(q.b.every((x) => x === 0)).toBe(true);
    expect(q.a.every((x) => Math.abs(x) <= 1 / Math.sqrt(16))).toBe(true);
    expect(new Set(q.a).size).toBeGreaterThan(60);
    const again = fromBase(llamaLinearParams(config), spec, 1);
    expect([...again.pairs[3]!.a]).toEqual([...ad.pairs[3]!.a]);
    expect([...fromBase(llamaLinearParams(config), spec, 2).pairs[3]!.a]).not.toEqual([...ad.pairs[3]!.a]);
  });

  it('names PEFT keys from the base key', () => {
    expect(peftKeys('model.layers.3.mlp.down_proj.weight')).toEqual({
      a: 'base_model.model.model.layers.3.mlp.down_proj.lora_A.weight',
      b: 'base_model.model.model.layers.3.mlp.down_proj.lora_B.weight',
    });
  });

  it('a target that matches nothing is an error, not a silent no-op', () => {
    expect(() => loraTargets(llamaLinearParams(config), loraSpec({ targets: ['q_proj', 'qproj'] }))).toThrow(LoraError);
    expect(() => loraSpec({ r: 0 })).toThrow(/rank/);
  });

  it('a fresh adapter fuses back to the base exactly', () => {
    const ad = fromBase(llamaLinearParams(config), loraSpec({ r: 4, alpha: 8 }), 3);
    const p = ad.pairs[0]!;
    const base = new Rng(9).fillNormal(new Float32Array(p.outFeatures * p.inFeatures), 0.02);
    const fused = fuse(base, p, 4, loraScale(ad.spec));
    expect(fused).not.toBe(base);
    expect(Buffer.from(fused.buffer).equals(Buffer.from(base.buffer))).toBe(true);
  });

  it('fuse adds scale·B·A (checked against a direct sum in float64)', () => {
    const [nOut, nIn, r] = [3, 5, 2];
    const rng = new Rng(11);
    const base = rng.fillNormal(new Float64Array(nOut * nIn), 1);
    const a = rng.fillNormal(new Float32Array(r * nIn), 1);
    const b = rng.fillNormal(new Float32Array(nOut * r), 1);
    const fused = fuse(base, { a, b, inFeatures: nIn, outFeatures: nOut }, r, 0.5);
    for (let o = 0; o < nOut; o++) {
      for (let i = 0; i < nIn; i++) {
        const delta = b[o * r]! * a[i]! + b[o * r + 1]! * a[nIn + i]!;
        expect(fused[o * nIn + i]).toBeCloseTo(base[o * nIn + i]! + 0.5 * delta, 12);
      }
    }
    expect(() => fuse(base, { a, b, inFeatures: nIn, outFeatures: nOut }, 3, 1)).toThrow(LoraError);
  });
});
