// Loading a Hugging Face model directory: config.json, model.safetensors or shards listed in
// model.safetensors.index.json ({"metadata": …, "weight_map": {key: file}}), tokenizer.json +
// tokenizer_config.json, and an optional generation_config.json. Every weight the parameter table names is
// checked for presence and shape when the model is opened; values are read lazily, one tensor at a time,
// and checked for NaN/Inf as they are read.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ReinError } from '../../common/errors.ts';
import { modelParams, parseModelConfig } from '../../common/engine/families/registry.ts';
import { loadGgufModel } from './gguf/load.ts';
import { SafetensorsFile } from './safetensors.ts';
import { loadTokenizer } from './tokenizer.ts';
import type { GenerationConfig, HfModel } from './model.ts';
import type { ReinTokenizer } from './tokenizer.ts';

// A loaded model's interface lives in model.ts, below both this file and gguf/load.ts, which returns one too.
export type { GenerationConfig, HfModel } from './model.ts';

/** A model directory that cannot be used: a missing file, shard or tensor, a wrong shape, bad values. */
export class ModelLoadError extends ReinError {
  readonly dir: string;
  constructor(dir: string, message: string, detail?: Record<string, unknown>) {
    super('bad_input', `model ${dir}: ${message}`, { detail: { dir, ...detail } });
    this.name = 'ModelLoadError';
    this.dir = dir;
  }
}

export interface LoadOptions {
  /** Load tokenizer.json (default true). */
  tokenizer?: boolean;
  /** Read every weight now and check it for NaN/Inf (default false: each read is checked instead). */
  scanAll?: boolean;
  /** A GGUF: compute what llama.cpp computes on it (gguf/load.ts GgufLoadOptions; default true). */
  matchLlamaCpp?: boolean;
}

function readJsonFile(dir: string, file: string): unknown {
  const p = path.join(dir, file);
  let text: string;
  try {
    text = readFileSync(p, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new ModelLoadError(dir, code === 'ENOENT' ? `${file} is missing` : `cannot read ${file}: ${(e as Error).message}`, { file });
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ModelLoadError(dir, `${file} is not valid JSON: ${(e as Error).message}`, { file });
  }
}

function idList(v: unknown): number[] {
  if (typeof v === 'number' && Number.isInteger(v)) return [v];
  if (Array.isArray(v)) return v.filter((x): x is number => typeof x === 'number' && Number.isInteger(x));
  return [];
}

/** Which safetensors file holds each tensor key. */
function weightFiles(dir: string): Map<string, string> {
  const indexName = 'model.safetensors.index.json';
  if (existsSync(path.join(dir, indexName))) {
    const index = readJsonFile(dir, indexName) as { weight_map?: unknown };
    const wm = index?.weight_map;
    if (typeof wm !== 'object' || wm === null || Array.isArray(wm)) throw new ModelLoadError(dir, `${indexName} has no weight_map object`, { file: indexName });
    const map = new Map<string, string>();
    for (const [key, file] of Object.entries(wm)) {
      // A shard name must stay inside the model directory.
      if (typeof file !== 'string' || file !== path.basename(file) || !file.endsWith('.safetensors')) {
        throw new ModelLoadError(dir, `${indexName} maps ${key} to an invalid file name ${JSON.stringify(file)}`, { file: indexName, tensor: key });
      }
      map.set(key, file);
    }
    for (const file of new Set(map.values())) {
      if (!existsSync(path.join(dir, file))) {
        const example = [...map].find(([, f]) => f === file)![0];
        throw new ModelLoadError(dir, `shard ${file} (holding ${example} and others) is missing`, { file });
      }
    }
    return map;
  }
  if (!existsSync(path.join(dir, 'model.safetensors'))) {
    throw new ModelLoadError(dir, 'no model.safetensors and no model.safetensors.index.json', { file: 'model.safetensors' });
  }
  return new Map([['*', 'model.safetensors']]);
}

export function loadHfModel(dir: string, opts: LoadOptions = {}): HfModel {
  if (!existsSync(dir)) throw new ModelLoadError(dir, 'the directory does not exist');
  const rawConfig = readJsonFile(dir, 'config.json');
  if (typeof rawConfig !== 'object' || rawConfig === null || Array.isArray(rawConfig)) throw new ModelLoadError(dir, 'config.json is not a JSON object');
  const config = parseModelConfig(rawConfig);
  const params = modelParams(config);

  let generation: GenerationConfig | null = null;
  if (existsSync(path.join(dir, 'generation_config.json'))) {
    const g = readJsonFile(dir, 'generation_config.json') as Record<string, unknown>;
    generation = { bosTokenId: typeof g.bos_token_id === 'number' ? g.bos_token_id : null, eosTokenIds: idList(g.eos_token_id), raw: g };
  }

  const fileOf = weightFiles(dir);
  const files = new Map<string, SafetensorsFile>();
  const closeAll = (): void => {
    for (const f of files.values()) f.close();
  };
  const fileFor = (key: string): SafetensorsFile | undefined => {
    const name = fileOf.get(key) ?? fileOf.get('*');
    if (name === undefined) return undefined;
    let f = files.get(name);
    if (f === undefined) {
      f = SafetensorsFile.open(path.join(dir, name));
      files.set(name, f);
    }
    return f.has(key) ? f : undefined;
  };

  try {
    for (const p of params) {
      const f = fileFor(p.hfKey);
      if (f === undefined) {
        const hint = p.name === 'lm_head' ? ' (set tie_word_embeddings in config.json if the model shares it with embed_tokens)' : '';
        throw new ModelLoadError(dir, `tensor ${p.hfKey} is missing${hint}`, { tensor: p.hfKey });
      }
      const got = f.info(p.hfKey).shape;
      if (got.length !== p.shape.length || got.some((d, i) => d !== p.shape[i])) {
        throw new ModelLoadError(dir, `tensor ${p.hfKey} has shape [${got.join(', ')}], config.json implies [${p.shape.join(', ')}]`, {
          tensor: p.hfKey,
          shape: got,
          expected: p.shape,
        });
      }
    }

    let tokenizer: ReinTokenizer | null = null;
    if (opts.tokenizer ?? true) {
      const extraEos = [...config.eosTokenIds, ...(generation?.eosTokenIds ?? [])];
      tokenizer = loadTokenizer(dir, { extraEosIds: extraEos });
      if (tokenizer.size > config.vocabSize) {
        throw new ModelLoadError(dir, `the tokenizer has ${tokenizer.size} token ids but the embedding only ${config.vocabSize} rows (vocab_size)`, {
          tokenizerSize: tokenizer.size,
          vocabSize: config.vocabSize,
        });
      }
    }

    const known = new Set(params.map((p) => p.hfKey));
    const read = (hfKey: string, ro: { as?: 'f32' | 'f64' } = {}): Float32Array | Float64Array => {
      if (!known.has(hfKey)) throw new ModelLoadError(dir, `${hfKey} is not a weight of this ${config.architecture}`, { tensor: hfKey });
      const data = fileFor(hfKey)!.read(hfKey, ro);
      for (let i = 0; i < data.length; i++) {
        if (!Number.isFinite(data[i]!)) {
          throw new ModelLoadError(dir, `tensor ${hfKey} holds a non-finite value (${data[i]}) at flat index ${i}`, { tensor: hfKey, index: i });
        }
      }
      return data;
    };
    if (opts.scanAll === true) for (const p of params) read(p.hfKey);

    return {
      dir,
      config,
      rawConfig: rawConfig as Record<string, unknown>,
      params,
      tokenizer,
      generation,
      read,
      storedDtype: (hfKey) => {
        const f = fileFor(hfKey);
        if (f === undefined) throw new ModelLoadError(dir, `tensor ${hfKey} is missing`, { tensor: hfKey });
        return f.info(hfKey).dtype;
      },
      close: closeAll,
    };
  } catch (e) {
    closeAll();
    throw e;
  }
}

/**
 * A model from an HF directory or a single GGUF file (gguf/load.ts), behind the same interface. Any file is read as a
 * GGUF (its magic is checked): Ollama's blobs have no extension.
 */
export function loadModel(source: string, opts: LoadOptions = {}): HfModel {
  if (existsSync(source) && statSync(source).isFile()) return loadGgufModel(source, { tokenizer: opts.tokenizer, matchLlamaCpp: opts.matchLlamaCpp });
  return loadHfModel(source, opts);
}
