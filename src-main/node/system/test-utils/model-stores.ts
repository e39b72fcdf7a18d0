// The stores model-discovery.test and the CLI's models.test search: an Ollama store in Ollama's layout holding a tiny Qwen2
// quantized to Q8_0 by our own writer (`rein model to-gguf`), two bad manifests (a blob never written, a digest that
// is a path), LM Studio's folder (with a vision projector beside the model), and a folder of loose GGUFs (a truncated
// one and one with a tensor of a type we do not read). Point HOME and OLLAMA_MODELS at `user` and `ollama`.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { hfToGguf } from '../../engine/gguf/convert.ts';
import { writeTinyModel } from '../../engine/tiny.ts';
import { writeOllamaModel } from './ollama-fixture.ts';

/** The type field of tensor `name`'s info in a GGUF header, set to `typeId` (ggml.h: 11 is Q3_K, which we do not read). */
export function setTensorType(file: string, name: string, typeId: number): void {
  const buf = readFileSync(file);
  const at = buf.indexOf(Buffer.from(name)) + Buffer.byteLength(name);
  const dims = buf.readUInt32LE(at);
  buf.writeUInt32LE(typeId, at + 4 + 8 * dims);
  writeFileSync(file, buf);
}

export interface ModelStores {
  user: string;
  ollama: string;
  /** The tiny model's HF folder, its Q8_0 GGUF, and that GGUF as Ollama's blob of tiny:q8. */
  hf: string;
  q8: string;
  blob: string;
  lmStudioFile: string;
  loose: string;
}

export function writeModelStores(root: string): ModelStores {
  const user = path.join(root, 'user');
  const ollama = path.join(root, 'ollama');
  const hf = path.join(root, 'tiny');
  writeTinyModel(hf, { arch: 'qwen2', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 128 });
  const q8 = path.join(root, 'tiny-q8_0.gguf');
  hfToGguf(hf, q8, { type: 'q8_0' });
  const blob = writeOllamaModel(ollama, 'tiny', 'q8', q8).blob;
  const lib = path.join(ollama, 'manifests', 'registry.ollama.ai', 'library');
  mkdirSync(path.join(lib, 'gone'), { recursive: true });
  writeFileSync(path.join(lib, 'gone', 'latest'), JSON.stringify({ layers: [{ mediaType: 'application/vnd.ollama.image.model', digest: `sha256:${'ab'.repeat(32)}`, size: 10 }] }));
  mkdirSync(path.join(lib, 'sneaky'), { recursive: true });
  writeFileSync(path.join(lib, 'sneaky', 'latest'), JSON.stringify({ layers: [{ mediaType: 'application/vnd.ollama.image.model', digest: 'sha256:../../../etc/passwd', size: 10 }] }));
  const lms = path.join(user, '.lmstudio', 'models', 'acme', 'tiny-GGUF');
  mkdirSync(lms, { recursive: true });
  const lmStudioFile = path.join(lms, 'tiny-Q8_0.gguf');
  copyFileSync(q8, lmStudioFile);
  writeFileSync(path.join(lms, 'mmproj-tiny-f16.gguf'), 'not a model');
  const loose = path.join(root, 'loose');
  mkdirSync(loose);
  writeFileSync(path.join(loose, 'cut.gguf'), readFileSync(q8).subarray(0, 4096));
  copyFileSync(q8, path.join(loose, 'q3k.gguf'));
  setTensorType(path.join(loose, 'q3k.gguf'), 'blk.0.attn_q.weight', 11);
  return { user, ollama, hf, q8, blob, lmStudioFile, loose };
}

/**
 * For a test file: before its tests, writes the stores into a fresh temp folder and points HOME and OLLAMA_MODELS at
 * them with the HF cache variables unset (a machine holding only these stores); after them, restores the environment
 * and removes the folder. Read `root` and `st` inside hooks and tests.
 */
export function useModelStores(prefix: string): { root: string; st: ModelStores } {
  const saved = { HOME: process.env.HOME, OLLAMA_MODELS: process.env.OLLAMA_MODELS, HF_HUB_CACHE: process.env.HF_HUB_CACHE, HF_HOME: process.env.HF_HOME };
  const h = { root: '', st: null as unknown as ModelStores };
  beforeAll(() => {
    h.root = mkdtempSync(path.join(tmpdir(), prefix));
    h.st = writeModelStores(h.root);
    process.env.HOME = h.st.user;
    process.env.OLLAMA_MODELS = h.st.ollama;
    delete process.env.HF_HUB_CACHE;
    delete process.env.HF_HOME;
  }, 120_000);
  afterAll(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    rmSync(h.root, { recursive: true, force: true });
  });
  return h;
}
