import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fromBase, loraSpec } from '../../common/engine/lora.ts';
import { llamaLinearParams, parseLlamaConfig } from '../../common/engine/families/llama.ts';
import { Rng } from '../../common/engine/rng.ts';
import { ConflictError } from '../../common/errors.ts';
import { PeftError, loadPeftAdapter, savePeftAdapter } from './peft.ts';
import { SafetensorsFile } from './safetensors.ts';

const tmp = mkdtempSync(path.join(tmpdir(), 'rein-peft-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const config = parseLlamaConfig({
  architectures: ['LlamaForCausalLM'],
  vocab_size: 64,
  hidden_size: 16,
  intermediate_size: 40,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 1,
  rms_norm_eps: 1e-5,
});
const linears = llamaLinearParams(config);

function trained(seed: number) {
  const ad = fromBase(linears, loraSpec({ r: 4, alpha: 8, rslora: true }), seed);
  const rng = new Rng(seed + 100);
  for (const p of ad.pairs) rng.fillNormal(p.b, 0.1);
  return ad;
}

describe('PEFT adapter directory', () => {
  it('matches SPECS.md: config fields, key names and shapes', () => {
    const dir = path.join(tmp, 'v1');
    savePeftAdapter(dir, trained(1), { baseModel: 'meta-llama/Llama-3.2-1B' });
    expect(readdirSync(dir).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    const cfg = JSON.parse(readFileSync(path.join(dir, 'adapter_config.json'), 'utf8'));
    expect(cfg).toEqual({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      base_model_name_or_path: 'meta-llama/Llama-3.2-1B',
      r: 4,
      lora_alpha: 8,
      target_modules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
      lora_dropout: 0,
      bias: 'none',
      use_rslora: true,
      use_dora: false,
      modules_to_save: null,
      fan_in_fan_out: false,
    });
    const f = SafetensorsFile.open(path.join(dir, 'adapter_model.safetensors'));
    expect(f.names()).toHaveLength(2 * 7 * 2);
    expect(f.info('base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight').shape).toEqual([4, 16]); // [r, in]
    expect(f.info('base_model.model.model.layers.1.self_attn.k_proj.lora_B.weight').shape).toEqual([4, 4]); // [out = KVH·D, r]
    expect(f.info('base_model.model.model.layers.0.mlp.down_proj.lora_A.weight').shape).toEqual([4, 40]);
    expect(f.info('base_model.model.model.layers.0.mlp.down_proj.lora_B.weight').shape).toEqual([16, 4]);
    expect(f.info('base_model.model.model.layers.0.mlp.up_proj.lora_A.weight').dtype).toBe('F32');
    f.close();
  });

  it('loads back exactly, in parameter-table order', () => {
    const ad = trained(2);
    const dir = path.join(tmp, 'v2');
    savePeftAdapter(dir, ad, { baseModel: 'x' });
    const { adapter } = loadPeftAdapter(dir, linears);
    expect(adapter.spec).toMatchObject({ r: 4, alpha: 8, rslora: true });
    expect(adapter.pairs.map((p) => p.baseKey)).toEqual(ad.pairs.map((p) => p.baseKey));
    adapter.pairs.forEach((p, i) => {
      expect([...p.a]).toEqual([...ad.pairs[i]!.a]);
      expect([...p.b]).toEqual([...ad.pairs[i]!.b]);
    });
  });

  it('never overwrites by accident, and replaces atomically when asked', () => {
    const dir = path.join(tmp, 'v3');
    savePeftAdapter(dir, trained(3), { baseModel: 'x' });
    expect(() => savePeftAdapter(dir, trained(4), { baseModel: 'x' })).toThrow(ConflictError);
    savePeftAdapter(dir, trained(4), { baseModel: 'x', overwrite: true });
    const want = trained(4).pairs[0]!;
    const got = loadPeftAdapter(dir).adapter.pairs.find((p) => p.baseKey === want.baseKey)!;
    expect([...got.b]).toEqual([...want.b]);
    expect(readdirSync(tmp).filter((f) => f.includes('.tmp-') || f.includes('.old-'))).toEqual([]);
  });

  it('a failed save leaves nothing behind', () => {
    const ad = trained(5);
    ad.pairs[3]!.b[0] = NaN;
    const dir = path.join(tmp, 'v4');
    expect(() => savePeftAdapter(dir, ad, { baseModel: 'x' })).toThrow(PeftError);
    expect(existsSync(dir)).toBe(false);
  });

  it('rejects adapters it cannot apply faithfully', () => {
    const dir = path.join(tmp, 'v5');
    savePeftAdapter(dir, trained(6), { baseModel: 'x' });
    const cfgPath = path.join(dir, 'adapter_config.json');
    const good = readFileSync(cfgPath, 'utf8');
    const withCfg = (patch: Record<string, unknown>) => {
      writeFileSync(cfgPath, JSON.stringify({ ...JSON.parse(good), ...patch }));
      return () => loadPeftAdapter(dir, linears);
    };
    expect(withCfg({ use_dora: true })).toThrow(/DoRA/);
    expect(withCfg({ peft_type: 'IA3' })).toThrow(/peft_type/);
    expect(withCfg({ modules_to_save: ['lm_head'] })).toThrow(/modules_to_save/);
    expect(withCfg({ r: 8 })).toThrow(/expected \[8, in\]/);
    writeFileSync(cfgPath, good);
    const other = llamaLinearParams({ ...config, intermediateSize: 24 });
    expect(() => loadPeftAdapter(dir, other)).toThrow(/the adapter is for \[\d+, 40\] but the base weight is \[\d+, 24\]|\[40, 16\] but the base weight is \[24, 16\]/);
    rmSync(cfgPath);
    expect(() => loadPeftAdapter(dir)).toThrow(/adapter_config\.json is missing/);
  });
});
