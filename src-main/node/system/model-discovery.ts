// The wizard's model step: local models in the Hugging Face cache (HF's layout: models--ORG--NAME/snapshots/REV,
// https://huggingface.co/docs/huggingface_hub/guides/manage-cache), in folders the user picks, and Ollama's
// (manifests/HOST/NAMESPACE/NAME/TAG, https://github.com/ollama/ollama/blob/main/docs/api.md), each with whether
// Rein can train it and, if not, why. Nothing is downloaded.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import type { LocalModel, ModelSource } from '../../common/system.ts';
import { CONFIG_JSON_MAX_BYTES, modelShape } from '../model-files/base-model.ts';
import { readRegularFile } from '../fs-read.ts';

const MAX_FOLDER_ENTRIES = 500;

function list(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function dirBytes(dir: string): number {
  let n = 0;
  for (const f of list(dir)) {
    try {
      // statSync follows the HF cache's snapshot symlinks to the blobs.
      const st = statSync(path.join(dir, f));
      if (st.isFile()) n += st.size;
    } catch {
      // a dangling link (an interrupted download)
    }
  }
  return n;
}

/** One HF-layout directory, judged: what it is, its size in parameters, and whether the engine can train it. */
export function describeHfDir(dir: string, name: string, source: ModelSource): LocalModel {
  const base: LocalModel = { name, path: dir, source, arch: null, params: null, trainable: false, why: null, bytes: dirBytes(dir) };
  let config: Record<string, unknown>;
  try {
    config = JSON.parse(readRegularFile(path.join(dir, 'config.json'), CONFIG_JSON_MAX_BYTES)) as Record<string, unknown>;
  } catch (e) {
    return { ...base, why: `config.json cannot be read: ${(e as Error).message}` };
  }
  const archs = config['architectures'];
  const arch = Array.isArray(archs) && typeof archs[0] === 'string' ? archs[0] : typeof config['model_type'] === 'string' ? config['model_type'] : null;
  const files = list(dir);
  let params: number;
  try {
    params = modelShape(dir).totalParams;
  } catch (e) {
    return { ...base, arch, why: `this model family is not supported yet (${(e as Error).message})` };
  }
  if (!files.some((f) => f.endsWith('.safetensors'))) return { ...base, arch, params, why: 'no .safetensors weights in the folder' };
  if (!files.includes('tokenizer.json')) return { ...base, arch, params, why: 'no tokenizer.json in the folder' };
  return { ...base, arch, params, trainable: true };
}

function hfCacheDir(env: NodeJS.ProcessEnv, home: string): string {
  if (env.HF_HUB_CACHE) return env.HF_HUB_CACHE;
  if (env.HF_HOME) return path.join(env.HF_HOME, 'hub');
  return path.join(env.XDG_CACHE_HOME ?? path.join(home, '.cache'), 'huggingface', 'hub');
}

/** Every model in the HF cache, at the revision `refs/main` points to (else the newest snapshot). */
export function hfCacheModels(cache: string): LocalModel[] {
  const out: LocalModel[] = [];
  for (const entry of list(cache)) {
    if (!entry.startsWith('models--')) continue;
    const repo = path.join(cache, entry);
    let rev: string | null;
    try {
      rev = readFileSync(path.join(repo, 'refs', 'main'), 'utf8').trim();
    } catch {
      const snaps = list(path.join(repo, 'snapshots')).map((s) => ({ s, t: statSync(path.join(repo, 'snapshots', s)).mtimeMs }));
      rev = snaps.sort((a, b) => b.t - a.t)[0]?.s ?? null;
    }
    if (rev === null) continue;
    const dir = path.join(repo, 'snapshots', rev);
    if (!existsSync(path.join(dir, 'config.json'))) continue;
    out.push(describeHfDir(dir, entry.slice('models--'.length).replace('--', '/'), 'hf-cache'));
  }
  return out;
}

/** A folder the user picked: itself when it holds a config.json, else its subfolders that do. */
export function folderModels(folder: string): LocalModel[] {
  const abs = path.resolve(folder);
  if (existsSync(path.join(abs, 'config.json'))) return [describeHfDir(abs, path.basename(abs), 'folder')];
  return list(abs)
    .slice(0, MAX_FOLDER_ENTRIES)
    .filter((d) => existsSync(path.join(abs, d, 'config.json')))
    .map((d) => describeHfDir(path.join(abs, d), d, 'folder'));
}

/** Ollama's pulled models: GGUF blobs, which the engine cannot train from, so each says what to do instead. */
export function ollamaModels(env: NodeJS.ProcessEnv, home: string): LocalModel[] {
  const root = path.join(env.OLLAMA_MODELS ?? path.join(home, '.ollama', 'models'), 'manifests');
  const out: LocalModel[] = [];
  for (const host of list(root)) {
    for (const ns of list(path.join(root, host))) {
      for (const name of list(path.join(root, host, ns))) {
        for (const tag of list(path.join(root, host, ns, name))) {
          const full = `${host === 'registry.ollama.ai' && ns === 'library' ? '' : `${host}/${ns}/`}${name}:${tag}`;
          out.push({
            name: full,
            path: path.join(root, host, ns, name, tag),
            source: 'ollama',
            arch: 'gguf',
            params: null,
            trainable: false,
            why: 'Ollama keeps GGUF weights, which Rein cannot train from; get the same model from Hugging Face (safetensors) to train it, and Rein can publish the adapter back to Ollama',
            bytes: null,
          });
        }
      }
    }
  }
  return out;
}

export function discoverModels(opts: { folders: string[]; demoDir: string; active: string | null; env?: NodeJS.ProcessEnv }): LocalModel[] {
  const env = opts.env ?? process.env;
  const home = env.HOME !== undefined && env.HOME !== '' ? env.HOME : homedir();
  const found: LocalModel[] = [];
  if (opts.active !== null && path.isAbsolute(opts.active) && existsSync(path.join(opts.active, 'config.json'))) {
    found.push(describeHfDir(opts.active, path.basename(opts.active), 'active'));
  }
  if (existsSync(path.join(opts.demoDir, 'config.json'))) found.push(describeHfDir(opts.demoDir, 'Rein demo model', 'demo'));
  found.push(...hfCacheModels(hfCacheDir(env, home)));
  for (const f of opts.folders) found.push(...folderModels(f));
  found.push(...ollamaModels(env, home));
  const seen = new Set<string>();
  return found.filter((m) => (seen.has(m.path) ? false : (seen.add(m.path), true)));
}
