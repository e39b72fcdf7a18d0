import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { gguf } from '@huggingface/gguf';
import { runCliInProcess } from '../test-utils/rein.ts';
import { writeTinyModel } from '../../node/engine/tiny.ts';
import { fromBase, loraSpec } from '../../common/engine/lora.ts';
import { modelLinearParams } from '../../common/engine/models/registry.ts';
import { loadHfModel } from '../../node/engine/hf.ts';
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

    const bad = await rein('model', 'lora-to-gguf', 'peft');
    expect([bad.code, bad.err]).toEqual([2, expect.stringMatching(/--base/)]);
    const missing = await rein('model', 'to-gguf', 'nope');
    expect([missing.code, missing.err]).toEqual([2, expect.stringMatching(/does not exist/)]);
  });
});
