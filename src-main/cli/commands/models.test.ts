// `rein model list|add|use|remove` in process against a temp home, over the stores of
// node/system/test-utils/model-stores.ts (Ollama, LM Studio, loose GGUFs): what cannot be trained is refused with its
// reason and nothing is added; adding, using and removing never touch the files.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalModel } from '../../common/system.ts';
import { composeCore } from '../../node/compose.ts';
import type { ReinCore } from '../../node/core/core.ts';
import { resolveHome } from '../../node/home.ts';
import { useModelStores } from '../../node/system/test-utils/model-stores.ts';
import type { ModelStores } from '../../node/system/test-utils/model-stores.ts';
import { modelShape } from '../../node/model-files/base-model.ts';
import { runCliInProcess } from '../test-utils/rein.ts';
import './index.ts';

let root: string;
let st: ModelStores;
let hf: string;
let blob: string;
let core: ReinCore;
const stores = useModelStores('rein-cli-models-');

beforeAll(() => {
  ({ root, st } = stores);
  ({ hf, blob } = st);
  // runCliInProcess uses <root>/home; this core watches the same store.
  core = composeCore({ home: resolveHome({ REIN_HOME: path.join(root, 'home') }) });
});

afterAll(() => core?.close());

describe('rein model list|add|use|remove', () => {
  const rein = (...argv: string[]) => runCliInProcess(root, argv);

  it('refuses to add what it cannot train, with the reason, and adds nothing', async () => {
    const gone = await rein('model', 'add', 'ollama:gone');
    expect(gone.code).toBe(2);
    expect(gone.err).toMatch(/addModel: the Ollama manifest .*gone\/latest points to blob sha256-/);
    const missing = await rein('model', 'add', 'ollama:nothing:7b');
    expect(missing.err).toMatch(/Ollama has no model nothing:7b in .*`ollama pull nothing:7b` gets it/);
    expect((await rein('model', 'add', 'ollama:../../x')).err).toMatch(/is not an Ollama model name/);
    expect((await rein('model', 'add', path.join(st.loose, 'q3k.gguf'))).err).toMatch(/Rein cannot train .*q3k\.gguf: tensor blk\.0\.attn_q\.weight has ggml type Q3_K/);
    expect((await rein('model', 'add', 'relative/model.gguf')).err).toMatch(/is not an absolute path/);
    expect(core.store.registeredModels()).toEqual([]);
  });

  it('adds an Ollama model and an HF folder, trains one, refuses to remove it while active, removes the other; files stay', async () => {
    const add = await rein('model', 'add', 'ollama:tiny:q8', '--json');
    expect(add.err).toBe('');
    expect(JSON.parse(add.out).model).toMatchObject({ id: 'ollama:tiny:q8', path: blob, added: true, trainable: true });
    expect((await rein('model', 'add', hf)).code).toBe(0);
    const use = await rein('model', 'use', 'ollama:tiny:q8');
    expect(use.out).toMatch(/^training ollama:tiny:q8\n\* ollama:tiny:q8\n {4}qwen2 · Q8_0 · [\d.]+M params · [\d.]+ MiB · ollama, added\n {4}trainable/);
    expect(core.settings()['model.active']).toBe('ollama:tiny:q8');
    // The presets now read the GGUF's shape.
    expect((await core.call('describePresets', {}, 'test')).shape.totalParams).toBe(modelShape(hf).totalParams);

    const list = JSON.parse((await rein('model', 'list', '--json')).out) as LocalModel[];
    expect(list.filter((m) => m.added).map((m) => [m.id, m.active])).toEqual([['ollama:tiny:q8', true], [hf, false]]);
    const text = (await rein('model', 'list')).out;
    expect(text).toMatch(/^\* ollama:tiny:q8/m);
    expect(text).toMatch(/ollama:gone:latest\n.*\n {4}not trainable: the Ollama manifest/);

    const active = await rein('model', 'remove', 'ollama:tiny:q8');
    expect(active.code).not.toBe(0);
    expect(active.err).toMatch(/ollama:tiny:q8 is the model being trained; `rein model use <id>` another first/);
    expect((await rein('model', 'remove', hf)).out).toMatch(/removed .* from Rein's list \(its files are untouched\)/);
    expect((await rein('model', 'remove', hf)).err).toMatch(/is not in Rein's list/);
    expect(existsSync(path.join(hf, 'model.safetensors'))).toBe(true);
    expect(existsSync(blob)).toBe(true);
    expect(core.store.registeredModels().map((m) => m.id)).toEqual(['ollama:tiny:q8']);
  });

  it('`model use demo` makes the shipped demo model active (copied into the home once), with --json', async () => {
    const r = await rein('model', 'use', 'demo', '--json');
    expect(r.err).toBe('');
    const out = JSON.parse(r.out) as { model: LocalModel; settings: Record<string, unknown> };
    const dir = path.join(root, 'home', 'models', 'demo');
    expect(out.model).toMatchObject({ path: dir, source: 'demo', trainable: true });
    expect(core.settings()['model.active']).toBe(dir);
    expect(existsSync(path.join(dir, 'model.safetensors'))).toBe(true);
    expect((await rein('model', 'use', 'demo')).out).toMatch(/^training the demo model \(.*models\/demo\)\n\* /);
    expect((await rein('model', 'use', 'dmeo')).err).toMatch(/dmeo is not an absolute path .*nor ollama:<name>:<tag>, nor demo/);
  });
});
