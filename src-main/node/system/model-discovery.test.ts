// Where models live, through the real core: an Ollama store written in Ollama's layout (the GGUF made by our own
// writer, `rein model to-gguf`), LM Studio's folder, a loose GGUF in a models.folders folder, and bad input (a
// manifest pointing nowhere, a digest that is a path, a truncated GGUF, a tensor type we do not read), each listed
// with its reason. The CLI's side (add, use, remove) is cli/commands/models.test.ts.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalModel } from '../../common/system.ts';
import { composeCore } from '../compose.ts';
import type { ReinCore } from '../core/core.ts';
import { resolveHome } from '../home.ts';
import { modelShape } from '../model-files/base-model.ts';
import { useModelStores } from './test-utils/model-stores.ts';
import type { ModelStores } from './test-utils/model-stores.ts';

let root: string;
let st: ModelStores;
let core: ReinCore;
const stores = useModelStores('rein-models-');

beforeAll(() => {
  ({ root, st } = stores);
  core = composeCore({ home: resolveHome({ REIN_HOME: path.join(root, 'home') }) });
});

afterAll(() => core?.close());

const byId = (ms: LocalModel[]) => Object.fromEntries(ms.map((m) => [m.id, m]));

describe('model discovery: Ollama, LM Studio, loose GGUFs', () => {
  it('follows an Ollama manifest to its GGUF blob and judges it from the header: architecture, type, size, parameters, trainable', async () => {
    await core.call('setSettings', { values: { 'models.folders': [st.loose] } }, 'test');
    const t0 = performance.now();
    const list = await core.call('discoverModels', {}, 'test');
    console.log(`discoverModels: ${list.length} models in ${(performance.now() - t0).toFixed(0)} ms`);
    const models = byId(list);
    const params = modelShape(st.hf).totalParams;
    expect(models['ollama:tiny:q8']).toMatchObject({ name: 'tiny:q8', path: st.blob, source: 'ollama', format: 'gguf', arch: 'qwen2', type: 'Q8_0', params, trainable: true, why: null, bytes: readFileSync(st.q8).length, added: false, active: false });
    expect(models[st.lmStudioFile]).toMatchObject({ source: 'lmstudio', arch: 'qwen2', type: 'Q8_0', trainable: true });
    expect(Object.keys(models).some((id) => id.includes('mmproj'))).toBe(false);
    // The ones Rein can train come before the ones it cannot.
    const firstNot = list.findIndex((m) => !m.trainable);
    expect(list.slice(firstNot).every((m) => !m.trainable)).toBe(true);
  });

  it('lists bad input with its reason: a manifest pointing nowhere, a digest that is not sha256, a truncated file, a tensor type we do not read', async () => {
    const models = byId(await core.call('discoverModels', {}, 'test'));
    expect(models['ollama:gone:latest']!.why).toMatch(/points to blob sha256-(ab){32}, which is not in .*blobs \(an interrupted pull\? `ollama pull gone:latest` again\)/);
    expect(models['ollama:sneaky:latest']!.why).toMatch(/names the model blob "sha256:\.\.\/\.\.\/\.\.\/etc\/passwd", which is not a sha256 digest/);
    expect(models[path.join(st.loose, 'cut.gguf')]).toMatchObject({ trainable: false, arch: null });
    expect(models[path.join(st.loose, 'cut.gguf')]!.why).toMatch(/^truncated or corrupt: /);
    expect(models[path.join(st.loose, 'q3k.gguf')]!.why).toMatch(/^tensor blk\.0\.attn_q\.weight has ggml type Q3_K, which we cannot read/);
    for (const m of Object.values(models)) expect(m.trainable === (m.why === null), m.id).toBe(true);
  });
});
