// An Ollama store on disk, written as `ollama pull` leaves it (ollama-store.ts has the layout): the GGUF as the blob
// of an application/vnd.ollama.image.model layer, a template and a config layer beside it, and the manifest under
// manifests/<host>/<namespace>/<name>/<tag>. Tests make the GGUF with our own writer (`rein model to-gguf`).
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

function blob(root: string, bytes: Uint8Array | string): { digest: string; size: number } {
  const buf = typeof bytes === 'string' ? Buffer.from(bytes) : Buffer.from(bytes);
  const hex = createHash('sha256').update(buf).digest('hex');
  mkdirSync(path.join(root, 'blobs'), { recursive: true });
  writeFileSync(path.join(root, 'blobs', `sha256-${hex}`), buf);
  return { digest: `sha256:${hex}`, size: buf.length };
}

/** Writes `gguf` into the store at `root` as <name>:<tag> (library namespace); returns the blob's path and the manifest's. */
export function writeOllamaModel(root: string, name: string, tag: string, gguf: string): { blob: string; manifest: string } {
  const model = blob(root, readFileSync(gguf));
  const template = blob(root, '{{ .Prompt }}');
  const config = blob(root, JSON.stringify({ model_format: 'gguf', model_family: 'qwen2', file_type: 'Q8_0' }));
  const manifest = path.join(root, 'manifests', 'registry.ollama.ai', 'library', name, tag);
  mkdirSync(path.dirname(manifest), { recursive: true });
  writeFileSync(
    manifest,
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
      config: { mediaType: 'application/vnd.docker.container.image.v1+json', ...config },
      layers: [
        { mediaType: 'application/vnd.ollama.image.model', ...model },
        { mediaType: 'application/vnd.ollama.image.template', ...template },
      ],
    }),
  );
  return { blob: path.join(root, 'blobs', `sha256-${model.digest.slice('sha256:'.length)}`), manifest };
}
