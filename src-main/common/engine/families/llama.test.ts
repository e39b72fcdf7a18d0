import { describe, expect, it } from 'vitest';
import { LLAMA_PARAMS, llamaLayerParams, llamaLinearParams, llamaParams, parseLlamaConfig } from './llama.ts';
import { ModelConfigError } from './params.ts';

const llama3 = {
  architectures: ['LlamaForCausalLM'],
  vocab_size: 128256,
  hidden_size: 2048,
  intermediate_size: 8192,
  num_hidden_layers: 16,
  num_attention_heads: 32,
  num_key_value_heads: 8,
  head_dim: 64,
  hidden_act: 'silu',
  rms_norm_eps: 1e-5,
  rope_theta: 500000.0,
  rope_scaling: { factor: 32.0, high_freq_factor: 4.0, low_freq_factor: 1.0, original_max_position_embeddings: 8192, rope_type: 'llama3' },
  tie_word_embeddings: true,
  bos_token_id: 128000,
  eos_token_id: [128001, 128008, 128009],
}; // meta-llama/Llama-3.2-1B config.json

describe('Llama config', () => {
  it('parses Llama 3.2 with llama3 rope scaling', () => {
    const c = parseLlamaConfig(llama3);
    expect(c.ropeScaling).toEqual({ type: 'llama3', factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 });
    expect([c.numKvHeads, c.headDim, c.qkvBias, c.tieWordEmbeddings]).toEqual([8, 64, false, true]);
    expect(c.eosTokenIds).toEqual([128001, 128008, 128009]);
  });

  it('names what is wrong', () => {
    const bad = (patch: Record<string, unknown>, field: RegExp) => {
      const err = (() => {
        try {
          parseLlamaConfig({ ...llama3, ...patch });
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(ModelConfigError);
      expect((err as Error).message).toMatch(field);
    };
    bad({ architectures: ['MixtralForCausalLM'] }, /unsupported architecture MixtralForCausalLM/);
    bad({ hidden_size: undefined }, /hidden_size/);
    bad({ num_key_value_heads: 5 }, /multiple of num_key_value_heads/);
    bad({ rope_scaling: { rope_type: 'yarn', factor: 4 } }, /yarn/);
    bad({ rope_scaling: { rope_type: 'llama3', factor: 4 } }, /low_freq_factor/);
    bad({ hidden_act: 'gelu' }, /hidden_act/);
  });
});

describe('Llama parameter table', () => {
  it('derives every name, shape and HF key; tied models have no lm_head', () => {
    const c = parseLlamaConfig(llama3);
    const ps = llamaParams(c);
    expect(ps).toHaveLength(1 + 16 * 9 + 1);
    expect(ps[0]).toMatchObject({ hfKey: 'model.embed_tokens.weight', shape: [128256, 2048] });
    expect(ps.find((p) => p.hfKey === 'model.layers.15.self_attn.k_proj.weight')?.shape).toEqual([512, 2048]);
    expect(ps.find((p) => p.hfKey === 'model.layers.0.self_attn.o_proj.weight')?.shape).toEqual([2048, 2048]);
    expect(ps.find((p) => p.hfKey === 'model.layers.0.mlp.down_proj.weight')?.shape).toEqual([2048, 8192]);
    expect(ps.at(-1)!.hfKey).toBe('model.norm.weight');
    const untied = llamaParams({ ...c, tieWordEmbeddings: false });
    expect(untied.at(-1)).toMatchObject({ hfKey: 'lm_head.weight', shape: [128256, 2048], module: 'lm_head' });
    expect(llamaLinearParams(c).every((p) => p.layer !== null)).toBe(true);
    expect(llamaLayerParams(c, 3).map((p) => p.name)).toEqual(LLAMA_PARAMS.filter((r) => r.scope === 'layer' && (r.when === undefined || r.when(c))).map((r) => r.name));
  });

  it('Qwen2 has q/k/v biases and no o_proj bias', () => {
    const c = parseLlamaConfig({ ...llama3, architectures: ['Qwen2ForCausalLM'], rope_scaling: null, head_dim: undefined });
    const keys = llamaLayerParams(c, 0).map((p) => p.hfKey);
    expect(keys).toContain('model.layers.0.self_attn.q_proj.bias');
    expect(keys).toContain('model.layers.0.self_attn.v_proj.bias');
    expect(keys).not.toContain('model.layers.0.self_attn.o_proj.bias');
    expect(llamaLayerParams(c, 0).find((p) => p.name === 'k_proj.bias')?.shape).toEqual([512]);
  });
});
