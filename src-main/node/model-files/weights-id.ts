// A model's weights identity: which weights a reply was sampled from and a round trains against, whatever file holds
// them. The model id says which model (tokenizer, architecture); two files of one model id can hold different weights
// (the f16 GGUF and a Q4_K copy of it, a fine-tune saved under the same name), and a μ sampled from one is not a
// probability of the other, so MIS-PO's ratio π/μ needs the weights to be the same too (training/data.ts).
//
// What is hashed: every weight matrix (the parameter table's tensors of two or more dimensions) in the table's order,
// each as its HF key, its shape and every value rounded to f16 (SHA-256). f16 is the precision at which Rein itself
// serves an HF model (serving/embedded.ts converts it to model-f16.gguf once), so an f32 or bf16 folder and its f16
// GGUF are one identity, and a Q8_0/Q4_0/Q4_K file of the same model is another (quantization moves nearly every
// value). Values are read through the engine's readers (engine/hf.ts, engine/gguf/load.ts), which give HF keys and HF
// layouts whatever the file (llama.cpp's q/k row permutation undone), so the identity does not depend on the format.
// 1-D tensors (norms, biases) are left out: no quantization touches them (converters keep them F32), and llama.cpp's
// converter stores Gemma's norms as w + 1, so they would tell a model from its own GGUF without the weights differing.
// Every value is hashed, not a sample: a fine-tune that moved a few rows is other weights too, and the readers read
// whole tensors anyway. It costs one pass over the weights (about 10 s for a 100M-parameter f32 folder on a busy
// 2-core machine), so it is cached by path, size and mtime of each file: in memory, and in a file of the Rein home
// that the model server and the trainer worker (a process per round) share.
import { createHash } from 'node:crypto';
import { readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadHfModel } from '../engine/hf.ts';
import { loadGgufModel } from '../engine/gguf/load.ts';
import { f32ToF16 } from '../engine/safetensors.ts';
import { readRegularFile } from '../fs-read.ts';
import { isGgufModel } from './base-model.ts';

const cache = new Map<string, string>();
const ID = /^[0-9a-f]{64}$/;
/** The most identities the cache file keeps (the newest): a model rewritten in place leaves its old key behind. */
const CACHE_ENTRIES = 64;

/** The cache file's entries, key → identity; an unreadable or malformed file is no cache. */
function readCacheFile(file: string): [string, string][] {
  try {
    const v = JSON.parse(readRegularFile(file, 1024 * 1024)) as unknown;
    if (!Array.isArray(v)) return [];
    return v.filter((e): e is [string, string] => Array.isArray(e) && e.length === 2 && typeof e[0] === 'string' && typeof e[1] === 'string' && ID.test(e[1]));
  } catch {
    return [];
  }
}

/** Adds an entry, written to a temporary file and renamed, so a reader never sees half a file. */
function writeCacheFile(file: string, key: string, id: string): void {
  const entries = [...readCacheFile(file).filter(([k]) => k !== key), [key, id] as [string, string]].slice(-CACHE_ENTRIES);
  const tmp = `${file}.tmp-${process.pid}`;
  try {
    writeFileSync(tmp, JSON.stringify(entries), { mode: 0o600 });
    renameSync(tmp, file);
  } catch {
    // A cache that cannot be written costs the next process one pass over the weights, nothing else.
  }
}

/** What the identity of `source` is cached under: each weight file's path, size and mtime. */
function cacheKey(source: string): string {
  const files = isGgufModel(source) ? [source] : readdirSync(source).filter((f) => f.endsWith('.safetensors')).sort().map((f) => path.join(source, f));
  return files.map((f) => {
    const s = statSync(f);
    return `${path.resolve(f)}\u0000${s.size}\u0000${s.mtimeMs}`;
  }).join('\u0001');
}

/**
 * The weights identity (64 hex digits) of an HF model directory or a GGUF file; see the head of this file.
 * `cacheFile` (ReinHome.modelsDir/weights-ids.json) keeps it across processes.
 */
export function weightsId(source: string, o: { cacheFile?: string } = {}): string {
  const key = cacheKey(source);
  const inFile = o.cacheFile === undefined ? undefined : readCacheFile(o.cacheFile).find(([k]) => k === key)?.[1];
  const hit = cache.get(key) ?? inFile;
  if (hit !== undefined) {
    cache.set(key, hit);
    if (o.cacheFile !== undefined && inFile === undefined) writeCacheFile(o.cacheFile, key, hit);
    return hit;
  }
  const m = isGgufModel(source) ? loadGgufModel(source, { tokenizer: false, matchLlamaCpp: false }) : loadHfModel(source, { tokenizer: false });
  try {
    const h = createHash('sha256');
    for (const p of m.params) {
      if (p.shape.length < 2) continue;
      const x = m.read(p.hfKey);
      const half = new Uint16Array(x.length);
      for (let i = 0; i < x.length; i++) half[i] = f32ToF16(x[i]!);
      h.update(`${p.hfKey}[${p.shape.join(',')}]\n`);
      h.update(new Uint8Array(half.buffer));
    }
    const id = h.digest('hex');
    cache.set(key, id);
    if (o.cacheFile !== undefined) writeCacheFile(o.cacheFile, key, id);
    return id;
  } finally {
    m.close();
  }
}

/** Where a Rein home keeps the identities it computed. */
export const weightsIdCacheFile = (modelsDir: string): string => path.join(modelsDir, 'weights-ids.json');

/** A weights identity as messages show it: its first 12 hex digits. */
export const shortWeightsId = (id: string): string => id.slice(0, 12);
