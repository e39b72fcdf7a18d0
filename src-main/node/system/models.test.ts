// Where models live, through the real core and the real CLI: an Ollama store written in Ollama's layout (the GGUF made
// by our own writer, `rein model to-gguf`), LM Studio's folder, a loose GGUF in a models.folders folder, and bad
// input (a manifest pointing nowhere, a digest that is a path, a truncated GGUF, a tensor type we do not read), each
// listed with its reason and refused by `rein model add` with it. Adding, using and removing never touch the files.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalModel } from '../../common/system.ts';
import { runCliInProcess } from '../../cli/test-utils/rein.ts';
import '../../cli/commands/index.ts';
import { createCore } from '../core/core.ts';
import type { ReinCore } from '../core/core.ts';
import { hfToGguf } from '../engine/gguf/convert.ts';
import { writeTinyModel } from '../engine/tiny.ts';
import { resolveHome } from '../home.ts';
import { modelShape } from '../training/model.ts';
import { writeOllamaModel } from './test-utils/ollama-fixture.ts';

let root: string;
let hf: string;
let q8: string;
let blob: string;
let core: ReinCore;
const saved = { HOME: process.env.HOME, OLLAMA_MODELS: process.env.OLLAMA_MODELS, HF_HUB_CACHE: process.env.HF_HUB_CACHE, HF_HOME: process.env.HF_HOME };
const reinHome = () => path.join(root, 'home');

/** The type field of tensor `name`'s info in a GGUF header, set to `typeId` (ggml.h: 11 is Q3_K, which we do not read). */
function setTensorType(file: string, name: string, typeId: number): void {
  const buf = readFileSync(file);
  const at = buf.indexOf(Buffer.from(name)) + Buffer.byteLength(name);
  const dims = buf.readUInt32LE(at);
  buf.writeUInt32LE(typeId, at + 4 + 8 * dims);
  writeFileSync(file, buf);
}

beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'rein-models-'));
  const user = path.join(root, 'user');
  process.env.HOME = user;
  process.env.OLLAMA_MODELS = path.join(root, 'ollama');
  delete process.env.HF_HUB_CACHE;
  delete process.env.HF_HOME;
  hf = path.join(root, 'tiny');
  writeTinyModel(hf, { arch: 'qwen2', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 128 });
  q8 = path.join(root, 'tiny-q8_0.gguf');
  hfToGguf(hf, q8, { type: 'q8_0' });
  blob = writeOllamaModel(process.env.OLLAMA_MODELS, 'tiny', 'q8', q8).blob;
  // A manifest whose model blob was never written (an interrupted pull), and one whose digest is a path.
  const lib = path.join(process.env.OLLAMA_MODELS, 'manifests', 'registry.ollama.ai', 'library');
  mkdirSync(path.join(lib, 'gone'), { recursive: true });
  writeFileSync(path.join(lib, 'gone', 'latest'), JSON.stringify({ layers: [{ mediaType: 'application/vnd.ollama.image.model', digest: `sha256:${'ab'.repeat(32)}`, size: 10 }] }));
  mkdirSync(path.join(lib, 'sneaky'), { recursive: true });
  writeFileSync(path.join(lib, 'sneaky', 'latest'), JSON.stringify({ layers: [{ mediaType: 'application/vnd.ollama.image.model', digest: 'sha256:../../../etc/passwd', size: 10 }] }));
  // LM Studio: <models>/<publisher>/<model>/<file>.gguf, with a vision projector beside it that is not a model.
  const lms = path.join(user, '.lmstudio', 'models', 'acme', 'tiny-GGUF');
  mkdirSync(lms, { recursive: true });
  copyFileSync(q8, path.join(lms, 'tiny-Q8_0.gguf'));
  writeFileSync(path.join(lms, 'mmproj-tiny-f16.gguf'), 'not a model');
  // A folder of loose GGUFs (the models.folders setting): a truncated one and one with a Q3_K tensor.
  const loose = path.join(root, 'loose');
  mkdirSync(loose);
  writeFileSync(path.join(loose, 'cut.gguf'), readFileSync(q8).subarray(0, 4096));
  copyFileSync(q8, path.join(loose, 'q3k.gguf'));
  setTensorType(path.join(loose, 'q3k.gguf'), 'blk.0.attn_q.weight', 11);
  core = createCore({ home: resolveHome({ REIN_HOME: reinHome() }) });
}, 120_000);

afterAll(() => {
  core?.close();
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  rmSync(root, { recursive: true, force: true });
});

const byId = (ms: LocalModel[]) => Object.fromEntries(ms.map((m) => [m.id, m]));

describe('model discovery: Ollama, LM Studio, loose GGUFs', () => {
  it('follows an Ollama manifest to its GGUF blob and judges it from the header: architecture, type, size, parameters, trainable', async () => {
    await core.call('setSettings', { values: { 'models.folders': [path.join(root, 'loose')] } }, 'test');
    const t0 = performance.now();
    const models = byId(await core.call('discoverModels', {}, 'test'));
    console.log(`discoverModels: ${Object.keys(models).length} models in ${(performance.now() - t0).toFixed(0)} ms`);
    const params = modelShape(hf).totalParams;
    expect(models['ollama:tiny:q8']).toMatchObject({ name: 'tiny:q8', path: blob, source: 'ollama', format: 'gguf', arch: 'qwen2', type: 'Q8_0', params, trainable: true, why: null, bytes: readFileSync(q8).length, added: false, active: false });
    const lms = path.join(process.env.HOME!, '.lmstudio', 'models', 'acme', 'tiny-GGUF', 'tiny-Q8_0.gguf');
    expect(models[lms]).toMatchObject({ source: 'lmstudio', arch: 'qwen2', type: 'Q8_0', trainable: true });
    expect(Object.keys(models).some((id) => id.includes('mmproj'))).toBe(false);
  });

  it('lists bad input with its reason: a manifest pointing nowhere, a digest that is not sha256, a truncated file, a tensor type we do not read', async () => {
    const models = byId(await core.call('discoverModels', {}, 'test'));
    expect(models['ollama:gone:latest']!.why).toMatch(/points to blob sha256-(ab){32}, which is not in .*blobs \(an interrupted pull\? `ollama pull gone:latest` again\)/);
    expect(models['ollama:sneaky:latest']!.why).toMatch(/names the model blob "sha256:\.\.\/\.\.\/\.\.\/etc\/passwd", which is not a sha256 digest/);
    const loose = path.join(root, 'loose');
    expect(models[path.join(loose, 'cut.gguf')]).toMatchObject({ trainable: false, arch: null });
    expect(models[path.join(loose, 'cut.gguf')]!.why).toMatch(/^truncated or corrupt: /);
    expect(models[path.join(loose, 'q3k.gguf')]!.why).toMatch(/^tensor blk\.0\.attn_q\.weight has ggml type Q3_K, which we cannot read/);
    for (const m of Object.values(models)) expect(m.trainable === (m.why === null), m.id).toBe(true);
  });
});

describe('rein model list|add|use|remove', () => {
  const rein = (...argv: string[]) => runCliInProcess(root, argv);

  it('refuses to add what it cannot train, with the reason, and adds nothing', async () => {
    const gone = await rein('model', 'add', 'ollama:gone');
    expect(gone.code).toBe(2);
    expect(gone.err).toMatch(/addModel: the Ollama manifest .*gone\/latest points to blob sha256-/);
    const missing = await rein('model', 'add', 'ollama:nothing:7b');
    expect(missing.err).toMatch(/Ollama has no model nothing:7b in .*`ollama pull nothing:7b` gets it/);
    expect((await rein('model', 'add', 'ollama:../../x')).err).toMatch(/is not an Ollama model name/);
    expect((await rein('model', 'add', path.join(root, 'loose', 'q3k.gguf'))).err).toMatch(/Rein cannot train .*q3k\.gguf: tensor blk\.0\.attn_q\.weight has ggml type Q3_K/);
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
});
