// Config parsing and parameter tables of the families behind the registry (Gemma 2/3, Qwen3-MoE, Mixtral): the
// layer layout, the expert rows and their HF keys, and named errors for what the engine cannot run.
import { describe, expect, it } from 'vitest';
import { ModelConfigError } from './params.ts';
import { modelLinearParams, modelParams, parseModelConfig } from './registry.ts';
import type { GemmaConfig } from './gemma.ts';
import type { MoeConfig } from './moe.ts';

const base = { vocab_size: 64, hidden_size: 16, intermediate_size: 24, num_hidden_layers: 4, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 4, rms_norm_eps: 1e-6 };
const fieldOf = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ModelConfigError);
    return (e as ModelConfigError).field;
  }
  return undefined;
};

describe('model registry', () => {
  it('names every supported architecture when one is not', () => {
    expect(() => parseModelConfig({ ...base, architectures: ['Phi3ForCausalLM'] })).toThrow(/Gemma2ForCausalLM.*Qwen3MoeForCausalLM.*MixtralForCausalLM/);
  });

  it('Gemma 2 alternates local/global from layer 0; Gemma 3 has a global layer every sliding_window_pattern', () => {
    const g2 = parseModelConfig({ ...base, architectures: ['Gemma2ForCausalLM'], final_logit_softcapping: 30, attn_logit_softcapping: 50 }) as GemmaConfig;
    expect(g2.layerTypes).toEqual(['sliding_attention', 'full_attention', 'sliding_attention', 'full_attention']);
    expect([g2.attnLogitSoftcapping, g2.finalLogitSoftcapping, g2.qkNorm, g2.tieWordEmbeddings, g2.queryPreAttnScalar]).toEqual([50, 30, false, true, 4]);
    const g3 = parseModelConfig({ ...base, num_hidden_layers: 7, architectures: ['Gemma3ForCausalLM'], rope_local_base_freq: 10000 }) as GemmaConfig;
    expect(g3.layerTypes.map((t) => t[0])).toEqual(['s', 's', 's', 's', 's', 'f', 's']);
    expect([g3.qkNorm, g3.ropeTheta, g3.ropeLocalTheta, g3.attnLogitSoftcapping]).toEqual([true, 1_000_000, 10000, null]);
    expect(fieldOf(() => parseModelConfig({ ...base, architectures: ['Gemma3ForCausalLM'], layer_types: ['full_attention'] }))).toBe('layer_types');
    expect(fieldOf(() => parseModelConfig({ ...base, architectures: ['Gemma2ForCausalLM'], hidden_activation: 'relu' }))).toBe('hidden_activation');
  });

  it("Gemma's table: four layer norms under HF's keys, q/k norms only for Gemma 3, the same LoRA targets as Llama", () => {
    const g3 = parseModelConfig({ ...base, architectures: ['Gemma3ForCausalLM'] });
    const layer0 = modelParams(g3).filter((p) => p.layer === 0);
    expect(layer0.filter((p) => p.kind === 'norm').map((p) => `${p.name}=${p.hfKey.split('.').slice(3).join('.')}`)).toEqual([
      'input_layernorm=input_layernorm.weight',
      'q_norm=self_attn.q_norm.weight',
      'k_norm=self_attn.k_norm.weight',
      'post_attention_norm=post_attention_layernorm.weight',
      'pre_feedforward_layernorm=pre_feedforward_layernorm.weight',
      'post_feedforward_layernorm=post_feedforward_layernorm.weight',
    ]);
    expect(modelParams(g3).some((p) => p.name === 'lm_head')).toBe(false);
    expect(new Set(modelLinearParams(g3).map((p) => p.module))).toEqual(new Set(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']));
  });

  it('MoE tables: a router and E experts per layer under each architecture own keys; LoRA targets the attention only', () => {
    const q = parseModelConfig({ ...base, architectures: ['Qwen3MoeForCausalLM'], num_experts: 3, num_experts_per_tok: 2, moe_intermediate_size: 8, norm_topk_prob: true }) as MoeConfig;
    expect([q.numExperts, q.topK, q.moeIntermediateSize, q.normTopkProb, q.qkNorm]).toEqual([3, 2, 8, true, true]);
    const qp = modelParams(q).filter((p) => p.layer === 1 && p.expert !== undefined);
    expect(qp).toHaveLength(9);
    expect(qp.find((p) => p.name === 'experts.2.down_proj')).toMatchObject({ hfKey: 'model.layers.1.mlp.experts.2.down_proj.weight', shape: [16, 8], expert: 2 });
    expect(modelParams(q).find((p) => p.name === 'router' && p.layer === 0)).toMatchObject({ hfKey: 'model.layers.0.mlp.gate.weight', shape: [3, 16] });
    expect(new Set(modelLinearParams(q).map((p) => p.module))).toEqual(new Set(['q_proj', 'k_proj', 'v_proj', 'o_proj']));

    const m = parseModelConfig({ ...base, architectures: ['MixtralForCausalLM'], num_local_experts: 2, num_experts_per_tok: 2 }) as MoeConfig;
    expect([m.moeIntermediateSize, m.normTopkProb, m.qkNorm]).toEqual([24, true, false]);
    expect(modelParams(m).filter((p) => p.layer === 0 && p.expert === 1).map((p) => `${p.name}=${p.hfKey}`)).toEqual([
      'experts.1.gate_proj=model.layers.0.block_sparse_moe.experts.1.w1.weight',
      'experts.1.down_proj=model.layers.0.block_sparse_moe.experts.1.w2.weight',
      'experts.1.up_proj=model.layers.0.block_sparse_moe.experts.1.w3.weight',
    ]);
  });

  it('MoE configs the engine cannot run get named errors', () => {
    const q = { ...base, architectures: ['Qwen3MoeForCausalLM'], num_experts: 4, num_experts_per_tok: 2, moe_intermediate_size: 8 };
    expect(fieldOf(() => parseModelConfig({ ...q, moe_intermediate_size: undefined }))).toBe('moe_intermediate_size');
    expect(fieldOf(() => parseModelConfig({ ...q, mlp_only_layers: [1] }))).toBe('mlp_only_layers');
    expect(fieldOf(() => parseModelConfig({ ...q, num_experts_per_tok: 5 }))).toBe('num_experts_per_tok');
    expect(fieldOf(() => parseModelConfig({ ...base, architectures: ['MixtralForCausalLM'], num_experts_per_tok: 2 }))).toBe('num_local_experts');
  });
});
