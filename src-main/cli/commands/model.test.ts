import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../test-utils/rein.ts';
import './model.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-cli-model-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const rein = (...argv: string[]) => runCliInProcess(root, argv);

describe('rein model tiny', () => {
  it('writes a sharded model with the requested shape', async () => {
    const dir = path.join(root, 'm');
    const r = await rein('model', 'tiny', 'qwen2', dir, '--layers', '3', '--hidden', '16', '--shards', '2', '--seed', '9', '--json');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out).files).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']);
    const cfg = JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8'));
    expect([cfg.num_hidden_layers, cfg.hidden_size, cfg.architectures[0]]).toEqual([3, 16, 'Qwen2ForCausalLM']);
    const index = JSON.parse(readFileSync(path.join(dir, 'model.safetensors.index.json'), 'utf8'));
    expect(Object.keys(index.weight_map)).toContain('model.layers.2.self_attn.k_proj.bias');
  });

  it('refuses bad arguments with a usage exit code', async () => {
    expect((await rein('model', 'tiny', 'gpt2', path.join(root, 'x'))).code).toBe(2);
    const bad = await rein('model', 'tiny', 'llama', path.join(root, 'y'), '--hidden', 'big');
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--hidden must be an integer/);
    expect((await rein('model', 'tiny', 'llama', path.join(root, 'm'))).code).toBe(4);
  });
});
