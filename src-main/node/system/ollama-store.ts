// Ollama's model store, read as files (Ollama need not run). Layout (ollama/ollama server/internal/manifest, and
// what `ollama pull` writes):
//   <root>/manifests/<host>/<namespace>/<name>/<tag>   a JSON manifest: { schemaVersion: 2, config, layers: [
//                                                        { mediaType, digest: "sha256:<64 hex>", size }, … ] }
//   <root>/blobs/sha256-<64 hex>                        each layer's bytes, named by its digest (":" → "-")
// The weights are the layer of mediaType application/vnd.ollama.image.model: a GGUF file. <root> is OLLAMA_MODELS,
// else ~/.ollama/models. A name is [host/][namespace/]name[:tag], with registry.ollama.ai, library and latest
// left out when they are the defaults, as `ollama list` prints it.
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { BadInputError } from '../../common/errors.ts';
import { readRegularFile } from '../fs-read.ts';

export const OLLAMA_MODEL_LAYER = 'application/vnd.ollama.image.model';
const DEFAULT_HOST = 'registry.ollama.ai';
const DEFAULT_NAMESPACE = 'library';
/** A manifest lists a handful of layers; one of a megabyte is not a manifest. */
const MANIFEST_MAX_BYTES = 1 << 20;
const DIGEST = /^sha256:([0-9a-f]{64})$/;

export interface OllamaRef {
  host: string;
  namespace: string;
  name: string;
  tag: string;
}

export interface OllamaModelFile {
  ref: OllamaRef;
  /** `name:tag` as `ollama list` prints it: what `FROM` in a Modelfile and /api/create's `from` take. */
  display: string;
  manifest: string;
  /** The GGUF blob of the model layer. */
  blob: string;
  digest: string;
  size: number;
}

export function ollamaRoot(env: NodeJS.ProcessEnv, home: string): string {
  return env.OLLAMA_MODELS !== undefined && env.OLLAMA_MODELS !== '' ? env.OLLAMA_MODELS : path.join(home, '.ollama', 'models');
}

const PART = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** `qwen2.5`, `qwen2.5:7b`, `user/model:tag`, `hf.co/user/repo:Q4_K_M`; each part a plain name (no `..`, no `/`). */
export function parseOllamaName(text: string): OllamaRef {
  const colon = text.lastIndexOf(':');
  const slash = text.lastIndexOf('/');
  const [full, tag] = colon > slash ? [text.slice(0, colon), text.slice(colon + 1)] : [text, 'latest'];
  const parts = full.split('/');
  const bad = (why: string): never => {
    throw new BadInputError(`"${text}" is not an Ollama model name (${why}); names look like qwen2.5:7b or user/model:tag`, 'source');
  };
  if (parts.length > 3) bad('more than host/namespace/name');
  for (const p of [...parts, tag]) if (!PART.test(p) || p.includes('..')) bad(`"${p}" is not a plain name`);
  const [host, namespace, name] = parts.length === 3 ? parts : parts.length === 2 ? [DEFAULT_HOST, ...parts] : [DEFAULT_HOST, DEFAULT_NAMESPACE, parts[0]!];
  return { host: host!, namespace: namespace!, name: name!, tag };
}

export function ollamaDisplayName(r: OllamaRef): string {
  const prefix = r.host === DEFAULT_HOST ? (r.namespace === DEFAULT_NAMESPACE ? '' : `${r.namespace}/`) : `${r.host}/${r.namespace}/`;
  return `${prefix}${r.name}:${r.tag}`;
}

/** The model id Rein keys ratings and versions by for an Ollama model. */
export function ollamaModelId(r: OllamaRef): string {
  return `ollama:${ollamaDisplayName(r)}`;
}

/**
 * One manifest, read and followed to its GGUF blob. Every way it can be wrong (no such model, not JSON, no model
 * layer, a digest that is not sha256, a blob that is missing or of another size) is a BadInputError naming the file.
 */
export function resolveOllamaModel(root: string, ref: OllamaRef): OllamaModelFile {
  const display = ollamaDisplayName(ref);
  const manifest = path.join(root, 'manifests', ref.host, ref.namespace, ref.name, ref.tag);
  const st = statSync(manifest, { throwIfNoEntry: false });
  if (!st?.isFile()) throw new BadInputError(`Ollama has no model ${display} in ${root} (no manifest at ${manifest}); \`ollama list\` shows what is pulled, \`ollama pull ${display}\` gets it`, 'source');
  let m: unknown;
  try {
    m = JSON.parse(readRegularFile(manifest, MANIFEST_MAX_BYTES));
  } catch (e) {
    throw new BadInputError(`the Ollama manifest ${manifest} cannot be read: ${(e as Error).message}`, 'source');
  }
  const layers = (m as { layers?: unknown }).layers;
  if (!Array.isArray(layers)) throw new BadInputError(`the Ollama manifest ${manifest} has no layers list`, 'source');
  const model = layers.find((l): l is { digest: unknown; size: unknown } => typeof l === 'object' && l !== null && (l as { mediaType?: unknown }).mediaType === OLLAMA_MODEL_LAYER);
  if (model === undefined) throw new BadInputError(`the Ollama manifest ${manifest} has no ${OLLAMA_MODEL_LAYER} layer (a safetensors import, or not a model)`, 'source');
  const hex = typeof model.digest === 'string' ? DIGEST.exec(model.digest)?.[1] : undefined;
  if (hex === undefined) throw new BadInputError(`the Ollama manifest ${manifest} names the model blob ${JSON.stringify(model.digest)}, which is not a sha256 digest`, 'source');
  const blob = path.join(root, 'blobs', `sha256-${hex}`);
  const bst = statSync(blob, { throwIfNoEntry: false });
  if (!bst?.isFile()) throw new BadInputError(`the Ollama manifest ${manifest} points to blob sha256-${hex}, which is not in ${path.join(root, 'blobs')} (an interrupted pull? \`ollama pull ${display}\` again)`, 'source');
  if (typeof model.size === 'number' && model.size !== bst.size) {
    throw new BadInputError(`the Ollama blob ${blob} is ${bst.size} bytes, its manifest says ${model.size} (an interrupted pull? \`ollama pull ${display}\` again)`, 'source');
  }
  return { ref, display, manifest, blob, digest: `sha256:${hex}`, size: bst.size };
}

function list(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Every manifest in the store, as refs (host/namespace/name/tag folders that look like names). */
export function ollamaRefs(root: string, limit = 2000): OllamaRef[] {
  const out: OllamaRef[] = [];
  const dir = path.join(root, 'manifests');
  for (const host of list(dir)) {
    for (const namespace of list(path.join(dir, host))) {
      for (const name of list(path.join(dir, host, namespace))) {
        for (const tag of list(path.join(dir, host, namespace, name))) {
          if ([host, namespace, name, tag].every((p) => PART.test(p))) out.push({ host, namespace, name, tag });
          if (out.length >= limit) return out;
        }
      }
    }
  }
  return out;
}
