// Which adapter version produced a reply, and the vocabulary to map its tokens: the two facts the proxy needs from
// the core to store an on-policy turn. The version comes from the publish records (each names the model it was
// published under) or from `proxy.baseModelName` (version 0); the vocabulary is the active model's tokenizer.json.
import type { AdapterView } from '../../common/domain.ts';
import type { ReinCore } from '../core/core.ts';
import { DEFAULT_MODEL_ID } from '../core/core.ts';
import type { ReinTokenizer } from '../engine/tokenizer.ts';
import { loadModelTokenizer, resolveModelDir } from '../model-files/base-model.ts';

/** Ollama names a model without a tag `name:latest`. */
const untagged = (name: string): string => name.replace(/:latest$/, '');

/** The version whose publish record names `model`; the active version wins over older ones published under the same name. */
export function versionPublishedAs(adapters: readonly AdapterView[], model: string): number | null {
  const want = untagged(model);
  const ordered = [...adapters].sort((a, b) => Number(b.status === 'active') - Number(a.status === 'active') || b.version - a.version);
  for (const a of ordered) {
    for (const rec of Object.values(a.publish)) {
      if (!rec.ok || rec.model === undefined) continue;
      if (untagged(rec.model) === want) return a.version;
      // The stable alias (`<base>-rein`) of a versioned tag (`<base>-rein:v3`) follows the active version.
      if (a.status === 'active' && rec.model.split(':')[0] === want) return a.version;
    }
  }
  return null;
}

/** The model (its id, as ratings name it) and adapter version (0 = the base) that produced a reply. */
export interface Producer {
  modelId: string;
  version: number;
  /**
   * The weights identity of the file that sampled it (model-files/weights-id.ts), when the server says (Rein's own,
   * in x-rein-weights); absent for other upstreams, whose files Rein cannot see.
   */
  weights?: string;
}

export function activeModelId(core: ReinCore): string {
  return core.settings()['model.active'] ?? DEFAULT_MODEL_ID;
}

export function producerResolver(core: ReinCore): (model: string | null) => Promise<Producer | null> {
  return async (model) => {
    if (model === null) return null;
    // One settings read (each reads and validates every setting) for both facts.
    const s = core.settings();
    const modelId = s['model.active'] ?? DEFAULT_MODEL_ID;
    if (s['proxy.baseModelName'] === model) return { modelId, version: 0 };
    const version = versionPublishedAs(core.store.adapters.list(modelId), model);
    return version === null ? null : { modelId, version };
  };
}

/**
 * The name to send upstream for a request naming `model`: vLLM serves each version under its own name
 * (publish.ts vllmVersionName), so `publish.vllm.name` maps to the name the active version was published under.
 * null: send `model` as it is.
 */
export function upstreamModelResolver(core: ReinCore): (model: string) => string | null {
  return (model) => {
    const s = core.settings();
    if (!s['publish.vllm'].enabled || model !== s['publish.vllm'].name) return null;
    const active = core.store.adapters.active(s['model.active'] ?? DEFAULT_MODEL_ID);
    const rec = active?.publish.vllm;
    return rec?.ok === true && rec.model !== undefined ? rec.model : null;
  };
}

/** The active model's tokenizer, loaded once per model directory; null when the model has no tokenizer here. */
export function vocabResolver(core: ReinCore, log: (line: string) => void): () => ReinTokenizer | null {
  const cache = new Map<string, ReinTokenizer | null>();
  return () => {
    let dir: string;
    try {
      dir = resolveModelDir(core.store, activeModelId(core));
    } catch {
      return null;
    }
    if (!cache.has(dir)) {
      try {
        cache.set(dir, loadModelTokenizer(dir));
      } catch (e) {
        log(`rein proxy: no tokenizer for ${dir}: ${(e as Error).message}`);
        cache.set(dir, null);
      }
    }
    return cache.get(dir)!;
  };
}
