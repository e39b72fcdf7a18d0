import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { gguf } from '@huggingface/gguf';
import { runCliInProcess } from '../test-utils/rein.ts';
import { writeTinyModel } from '../../node/engine/tiny.ts';
import { fromBase, loraSpec } from '../../common/engine/lora.ts';
import { modelLinearParams } from '../../common/engine/families/registry.ts';
import { loadHfModel, loadModel } from '../../node/engine/hf.ts';
import { savePeftAdapter } from '../../node/engine/peft.ts';
import './gguf.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-cli-gguf-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const rein = (...argv: string[]) => runCliInProcess(root, argv);

describe('rein model to-gguf / lora-to-gguf', () => {
  it('converts a model (with progress on stderr) and its adapter, and names bad input', async () => {
    const dir = writeTinyModel(path.join(root, 'm'), { arch: 'qwen2', hidden: 16, heads: 2, kvHeads: 1, layers: 1 }).dir;
    const r = await rein('model', 'to-gguf', 'm', '--f16');
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/100%\s+\d+\/\d+ tensors/);
    const file = path.join(dir, 'm-f16.gguf');
    expect(r.out).toContain(file);
    const g = await gguf(file, { allowLocalFile: true });
    expect((g.metadata as Record<string, unknown>)['general.file_type']).toBe(1);

    const m = loadHfModel(dir, { tokenizer: false });
    savePeftAdapter(path.join(root, 'peft'), fromBase(modelLinearParams(m.config), loraSpec({ r: 2 }), 0), { baseModel: dir });
    m.close();
    const l = await rein('model', 'lora-to-gguf', 'peft', '--base', 'm', '--out', 'a.gguf', '--json');
    expect(l.code).toBe(0);
    expect(JSON.parse(l.out).tensors).toBe(14);
    expect(existsSync(path.join(root, 'a.gguf'))).toBe(true);

    // --type q8_0: rows of 16 do not fit Q8_0's 32-value blocks, so the weights fall back to F16 and are listed;
    // q4_k falls back to a legacy quant only where rows fit 32. Both load back through our reader.
    const q = await rein('model', 'to-gguf', 'm', '--type', 'q8_0', '--json');
    expect(q.code).toBe(0);
    const qr = JSON.parse(q.out) as { type: string; path: string; fallbacks: { tensor: string; type: string }[] };
    expect(qr.type).toBe('q8_0');
    expect(qr.path).toBe(path.join(dir, 'm-q8_0.gguf'));
    expect(qr.fallbacks).toContainEqual({ tensor: 'blk.0.attn_q.weight', type: 'F16' });
    const qm = loadModel(qr.path);
    expect(qm.storedDtype('model.layers.0.self_attn.q_proj.weight')).toBe('F16');
    qm.close();
    writeTinyModel(path.join(root, 'w'), { arch: 'qwen2', hidden: 256, heads: 2, kvHeads: 1, layers: 1, intermediate: 64 });
    const k = await rein('model', 'to-gguf', 'w', '--type', 'Q4_K', '--out', 'w.gguf', '--json');
    expect(k.code).toBe(0);
    const km = loadModel(path.join(root, 'w.gguf'));
    expect(km.storedDtype('model.layers.0.mlp.up_proj.weight')).toBe('Q4_K');
    // down_proj's rows are the intermediate size, 64: Q4_0 (32-value blocks) instead of Q4_K.
    expect(km.storedDtype('model.layers.0.mlp.down_proj.weight')).toBe('Q4_0');
    km.close();
    const badType = await rein('model', 'to-gguf', 'm', '--type', 'q3_k');
    expect([badType.code, badType.err]).toEqual([2, expect.stringMatching(/--type q3_k is not one of f32, f16, q8_0, q4_0, q4_k/)]);

    const bad = await rein('model', 'lora-to-gguf', 'peft');
    expect([bad.code, bad.err]).toEqual([2, expect.stringMatching(/--base/)]);
    const missing = await rein('model', 'to-gguf', 'nope');
    expect([missing.code, missing.err]).toEqual([2, expect.stringMatching(/does not exist/)]);
    // Q4_K of the ~150k × 256 embedding takes 20-60 s of JS on a loaded 2-core machine.
  }, 300_000);
});
