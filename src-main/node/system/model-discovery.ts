// Where models live (issue #13 item 4): the Hugging Face cache (models--ORG--NAME/snapshots/REV,
// https://huggingface.co/docs/huggingface_hub/guides/manage-cache), Ollama's store (ollama-store.ts), LM Studio's
// models folder (<root>/<publisher>/<model>/<file>.gguf, in ~/.lmstudio/models or the older ~/.cache/lm-studio/models),
// folders the user names (HF folders and loose .gguf files) and Rein's own list (`rein model add`). Each model is
// judged from its config.json or its GGUF header and metadata only: what it is, its type and size, and whether Rein can
// train it and, if not, why. No weight is read and nothing is downloaded.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { BadInputError } from '../../common/errors.ts';
import type { LocalModel, ModelSource } from '../../common/system.ts';
import { CONFIG_JSON_MAX_BYTES, modelShape } from '../model-files/base-model.ts';
import { readRegularFile } from '../fs-read.ts';
import { checkGgufModel } from '../engine/gguf/load.ts';
import { GgufFile } from '../engine/gguf/read.ts';
import { ggufTokenizerKind } from '../engine/gguf/vocab.ts';
import { ollamaModelId, ollamaRefs, ollamaRoot, parseOllamaName, resolveOllamaModel } from './ollama-store.ts';

const MAX_FOLDER_ENTRIES = 500;

function list(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function isDir(p: string): boolean {
  try {
    return statSync(p, { throwIfNoEntry: false })?.isDirectory() === true;
  } catch {
    return false; // a symlink loop or an unreadable entry is skipped, never a failed scan
  }
}

function isFile(p: string): boolean {
  try {
    return statSync(p, { throwIfNoEntry: false })?.isFile() === true;
  } catch {
    return false; // a symlink loop or an unreadable path is not a model file
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

/** llama.h llama_ftype: general.file_type, the name llama.cpp's quantize gives the mix (Q4_K_M keeps some Q6_K). */
const FILE_TYPES: Record<number, string> = {
  0: 'F32', 1: 'F16', 2: 'Q4_0', 3: 'Q4_1', 7: 'Q8_0', 8: 'Q5_0', 9: 'Q5_1', 10: 'Q2_K', 11: 'Q3_K_S', 12: 'Q3_K_M',
  13: 'Q3_K_L', 14: 'Q4_K_S', 15: 'Q4_K_M', 16: 'Q5_K_S', 17: 'Q5_K_M', 18: 'Q6_K', 19: 'IQ2_XXS', 20: 'IQ2_XS',
  21: 'Q2_K_S', 22: 'IQ3_XS', 23: 'IQ3_XXS', 24: 'IQ1_S', 25: 'IQ4_NL', 26: 'IQ3_S', 27: 'IQ3_M', 28: 'IQ2_S',
  29: 'IQ2_M', 30: 'IQ4_XS', 31: 'IQ1_M', 32: 'BF16', 36: 'TQ1_0', 37: 'TQ2_0', 38: 'MXFP4_MOE',
};

const TORCH_DTYPES: Record<string, string> = { float32: 'F32', float16: 'F16', bfloat16: 'BF16' };

function ggufNoun(e: unknown, file: string): string {
  // A GgufError's message starts with the path, which the listing shows beside it.
  const m = (e as Error).message;
  return m.startsWith(`${file}: `) ? m.slice(file.length + 2) : m;
}

/**
 * One GGUF file judged from its header and metadata: its architecture, file type, parameter count (from the tensor
 * shapes) and whether the engine trains it: an architecture with a parameter table, every tensor of a type we read
 * and of the shape the metadata implies, and a byte-level BPE tokenizer in the metadata.
 */
export function describeGguf(file: string, o: { name?: string; source: ModelSource; id?: string }): LocalModel {
  let bytes: number | null;
  try {
    bytes = statSync(file, { throwIfNoEntry: false })?.size ?? null;
  } catch {
    bytes = null;
  }
  const base: LocalModel = { id: o.id ?? file, name: o.name ?? path.basename(file, '.gguf'), path: file, source: o.source, format: 'gguf', arch: null, type: null, params: null, trainable: false, why: null, bytes, added: false, active: false };
  let f: GgufFile;
  try {
    // The vocabulary and merges are walked, not decoded: the listing needs their counts only.
    f = GgufFile.open(file, { skipStringArrays: true });
  } catch (e) {
    return { ...base, why: ggufNoun(e, file) };
  }
  let m: LocalModel = base;
  try {
    const arch = typeof f.metadata.get('general.architecture') === 'string' ? (f.metadata.get('general.architecture') as string) : null;
    const ft = f.metadata.get('general.file_type');
    let params = 0;
    const byType = new Map<string, number>();
    for (const t of f.tensors.values()) {
      params += t.shape.reduce((a, d) => a * d, 1);
      if (t.shape.length === 2) byType.set(t.type, (byType.get(t.type) ?? 0) + t.bytes);
    }
    // Without general.file_type, the type holding most of the matrices' bytes.
    const most = [...byType].sort((a, b) => b[1] - a[1])[0]?.[0] ?? null;
    const type = typeof ft === 'number' ? (FILE_TYPES[ft] ?? most) : most;
    const gname = f.metadata.get('general.name');
    m = { ...base, name: o.name ?? (typeof gname === 'string' && gname !== '' ? gname : base.name), arch, type, params };
    checkGgufModel(f);
    ggufTokenizerKind((k) => f.metadata.get(k), file);
    if (!((f.skipped.get('tokenizer.ggml.tokens') ?? 0) > 0)) return { ...m, why: 'the metadata holds no tokenizer (tokenizer.ggml.tokens)' };
    if (!f.skipped.has('tokenizer.ggml.merges')) return { ...m, why: 'the metadata holds no BPE merges (tokenizer.ggml.merges)' };
  } catch (e) {
    return { ...m, why: ggufNoun(e, file) };
  } finally {
    f.close();
  }
  return { ...m, trainable: true };
}

/** One HF-layout directory, judged: what it is, its size in parameters, and whether the engine can train it. */
export function describeHfDir(dir: string, name: string, source: ModelSource, id: string = dir): LocalModel {
  const base: LocalModel = { id, name, path: dir, source, format: 'hf', arch: null, type: null, params: null, trainable: false, why: null, bytes: dirBytes(dir), added: false, active: false };
  let config: Record<string, unknown>;
  try {
    config = JSON.parse(readRegularFile(path.join(dir, 'config.json'), CONFIG_JSON_MAX_BYTES)) as Record<string, unknown>;
  } catch (e) {
    return { ...base, why: `config.json cannot be read: ${(e as Error).message}` };
  }
  const archs = config['architectures'];
  const arch = Array.isArray(archs) && typeof archs[0] === 'string' ? archs[0] : typeof config['model_type'] === 'string' ? config['model_type'] : null;
  const dtype = config['torch_dtype'] ?? config['dtype'];
  const type = typeof dtype === 'string' ? (TORCH_DTYPES[dtype] ?? dtype) : null;
  const files = list(dir);
  let params: number;
  try {
    params = modelShape(dir).totalParams;
  } catch (e) {
    return { ...base, arch, type, why: `this model family is not supported yet (${(e as Error).message})` };
  }
  if (!files.some((f) => f.endsWith('.safetensors'))) return { ...base, arch, type, params, why: 'no .safetensors weights in the folder' };
  if (!files.includes('tokenizer.json')) return { ...base, arch, type, params, why: 'no tokenizer.json in the folder' };
  return { ...base, arch, type, params, trainable: true };
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
    const name = entry.slice('models--'.length).replace('--', '/');
    if (existsSync(path.join(dir, 'config.json'))) out.push(describeHfDir(dir, name, 'hf-cache'));
    // GGUF repositories (TheBloke/…-GGUF, bartowski/…) hold .gguf files and no config.json.
    else for (const f of list(dir).filter(isGgufName).slice(0, MAX_FOLDER_ENTRIES)) out.push(describeGguf(path.join(dir, f), { name: `${name}/${f}`, source: 'hf-cache' }));
  }
  return out;
}

/** A weights file, not a vision projector (mmproj-*.gguf, which LM Studio and HF repositories keep beside it). */
function isGgufName(f: string): boolean {
  return f.toLowerCase().endsWith('.gguf') && !f.toLowerCase().startsWith('mmproj');
}

/**
 * A folder the user picked: itself when it holds a config.json, else its subfolders that do, and the .gguf files in it
 * and in its subfolders (LM Studio's <publisher>/<model>/<file>.gguf is two levels down: `depth` 2).
 */
export function folderModels(folder: string, source: ModelSource = 'folder', depth = 1): LocalModel[] {
  const abs = path.resolve(folder);
  if (existsSync(path.join(abs, 'config.json'))) return [describeHfDir(abs, path.basename(abs), source)];
  const out: LocalModel[] = [];
  const walk = (dir: string, rel: string, left: number): void => {
    for (const e of list(dir).slice(0, MAX_FOLDER_ENTRIES)) {
      if (out.length >= MAX_FOLDER_ENTRIES) return;
      const p = path.join(dir, e);
      const name = rel === '' ? e : `${rel}/${e}`;
      if (isGgufName(e) && isFile(p)) out.push(describeGguf(p, { name, source }));
      else if (left > 0 && isDir(p)) {
        if (existsSync(path.join(p, 'config.json'))) out.push(describeHfDir(p, name, source));
        else walk(p, name, left - 1);
      }
    }
  };
  walk(abs, '', depth);
  return out;
}

/** LM Studio's models folders (the current one, and the one older versions used). */
export function lmStudioDirs(home: string): string[] {
  return [path.join(home, '.lmstudio', 'models'), path.join(home, '.cache', 'lm-studio', 'models')];
}

/** Ollama's pulled models, each followed through its manifest to its GGUF blob and judged like any GGUF. */
export function ollamaModels(env: NodeJS.ProcessEnv, home: string): LocalModel[] {
  const root = ollamaRoot(env, home);
  return ollamaRefs(root).map((ref) => {
    const id = ollamaModelId(ref);
    try {
      const m = resolveOllamaModel(root, ref);
      return describeGguf(m.blob, { name: m.display, source: 'ollama', id });
    } catch (e) {
      const name = id.slice('ollama:'.length);
      return { id, name, path: path.join(root, 'manifests', ref.host, ref.namespace, ref.name, ref.tag), source: 'ollama', format: 'gguf', arch: null, type: null, params: null, trainable: false, why: (e as Error).message, bytes: null, added: false, active: false } satisfies LocalModel;
    }
  });
}

function homeOf(env: NodeJS.ProcessEnv): string {
  return env.HOME !== undefined && env.HOME !== '' ? env.HOME : homedir();
}

/** A model in Rein's own list (the store's models table): its id, its file or folder, and where it came from. */
export interface RegisteredModel {
  id: string;
  name: string;
  path: string;
}

/**
 * What `rein model add` and `useModel` take, judged: `ollama:<name>[:<tag>]` (followed through Ollama's store), a .gguf
 * file, or an HF folder. A path must exist; the judgement says whether Rein can train it.
 */
export function describeSource(source: string, env: NodeJS.ProcessEnv = process.env): LocalModel {
  if (source.startsWith('ollama:')) {
    const ref = parseOllamaName(source.slice('ollama:'.length));
    const m = resolveOllamaModel(ollamaRoot(env, homeOf(env)), ref);
    return describeGguf(m.blob, { name: m.display, source: 'ollama', id: ollamaModelId(ref) });
  }
  const home = homeOf(env);
  const abs = source === '~' ? home : source.startsWith('~/') ? path.join(home, source.slice(2)) : source;
  if (!path.isAbsolute(abs)) throw new BadInputError(`${source} is not an absolute path (start it with / or ~/), nor ollama:<name>:<tag>, nor demo`, 'source');
  if (abs.includes('\0')) throw new BadInputError(`${JSON.stringify(source)} holds a NUL character, which no path can`, 'source');
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(abs, { throwIfNoEntry: false });
  } catch (e) {
    // ELOOP (a symlink loop), EACCES, ENAMETOOLONG: the path cannot be read, which is the caller's to fix.
    throw new BadInputError(`${abs} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): a model is a .gguf file or an HF folder`, 'source');
  }
  if (!st) throw new BadInputError(`there is no file or folder at ${abs}`, 'source');
  if (st.isFile()) {
    if (!abs.toLowerCase().endsWith('.gguf')) throw new BadInputError(`${abs} is a file but not a .gguf; a model is a .gguf file or an HF folder (config.json, safetensors, tokenizer.json)`, 'source');
    return describeGguf(abs, { source: 'added' });
  }
  if (!st.isDirectory() || !existsSync(path.join(abs, 'config.json'))) throw new BadInputError(`${abs} has no config.json (an HF model folder is needed), nor is it a .gguf file`, 'source');
  return describeHfDir(abs, path.basename(abs), 'added');
}

export interface DiscoverOptions {
  /** Folders to search for HF folders and .gguf files (the models.folders setting and the wizard's picks). */
  folders: string[];
  demoDir: string;
  /** The model.active setting. */
  active: string | null;
  /** Rein's own list. */
  registered?: RegisteredModel[];
  env?: NodeJS.ProcessEnv;
}

/**
 * Every model on this computer that Rein knows of or finds, each once (by id): Rein's own list and the active one
 * first, then the ones it can train, then the others with their reasons (each group in the order found).
 */
export function discoverModels(opts: DiscoverOptions): LocalModel[] {
  const env = opts.env ?? process.env;
  const home = homeOf(env);
  const found: LocalModel[] = [];
  const describeRegistered = (r: RegisteredModel): LocalModel => {
    try {
      return describeSource(r.id.startsWith('ollama:') ? r.id : r.path, env);
    } catch (e) {
      return { id: r.id, name: r.name, path: r.path, source: 'added', format: r.path.toLowerCase().endsWith('.gguf') ? 'gguf' : 'hf', arch: null, type: null, params: null, trainable: false, why: (e as Error).message, bytes: null, added: true, active: false };
    }
  };
  const registered = opts.registered ?? [];
  for (const r of registered) found.push({ ...describeRegistered(r), id: r.id, name: r.name, added: true });
  const act = opts.active;
  if (act !== null && !registered.some((r) => r.id === act) && path.isAbsolute(act)) {
    if (existsSync(path.join(act, 'config.json'))) found.push(describeHfDir(act, path.basename(act), 'active'));
    else if (isFile(act)) found.push(describeGguf(act, { source: 'active' }));
  }
  if (existsSync(path.join(opts.demoDir, 'config.json'))) found.push(describeHfDir(opts.demoDir, 'Rein demo model', 'demo'));
  found.push(...hfCacheModels(hfCacheDir(env, home)));
  for (const f of opts.folders) found.push(...folderModels(f));
  found.push(...ollamaModels(env, home));
  for (const d of lmStudioDirs(home)) found.push(...folderModels(d, 'lmstudio', 2));
  const seen = new Set<string>();
  const rank = (m: LocalModel): number => (m.added || m.active ? 0 : m.trainable ? 1 : 2);
  return found
    .filter((m) => (seen.has(m.id) ? false : (seen.add(m.id), true)))
    .map((m) => ({ ...m, active: m.id === act }))
    .map((m, i) => ({ m, i }))
    .sort((a, b) => rank(a.m) - rank(b.m) || a.i - b.i)
    .map(({ m }) => m);
}
