// Adapter versions on disk: adapters/<model>/vN/ holds peft/ (adapter_config.json + adapter_model.safetensors),
// adapter.gguf (the same LoRA for llama.cpp and Ollama, where the architecture has a GGUF mapping), metrics.json,
// config.json (the round's training config) and lineage.json. A version is written into a staging
// directory beside its final place (same filesystem) and renamed in one step, so a crash or kill -9 leaves either a
// whole vN or none; staging directories of dead processes are removed at start-up.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConflictError, ReinError } from '../../common/errors.ts';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import type { ModelConfig } from '../../common/engine/families/registry.ts';
import { loraToGguf } from '../engine/gguf/lora.ts';
import type { ReinHome } from '../home.ts';
import { pidAlive } from '../pid.ts';
import { savePeftAdapter } from '../engine/peft.ts';
import { fsyncPath, fsyncTree } from '../fs-atomic.ts';
import type { Store } from '../store/store.ts';

const STAGE_PREFIX = '.stage-';

/** A version that did not fit on the disk: named, with what to do (full-disk.test.ts). */
export class DiskFullError extends ReinError {
  constructor(message: string, detail: Record<string, unknown>) {
    super('not_available', message, { detail });
    this.name = 'DiskFullError';
  }
}

/** A filesystem-safe folder name for a model id (ids may be paths): readable part + short hash. */
export function modelFolder(modelId: string): string {
  const safe = modelId.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+/, '').slice(-48) || 'model';
  return `${safe}-${createHash('sha256').update(modelId).digest('hex').slice(0, 8)}`;
}

export function modelAdaptersDir(home: ReinHome, modelId: string): string {
  return path.join(home.adaptersDir, modelFolder(modelId));
}

export function versionDir(home: ReinHome, modelId: string, version: number): string {
  return path.join(modelAdaptersDir(home, modelId), `v${version}`);
}

export interface VersionFiles {
  adapter: LoraAdapter;
  baseModel: string;
  /** The base model's config: the GGUF LoRA needs its architecture and head layout. */
  modelConfig: ModelConfig;
  metrics: unknown;
  config: unknown;
  lineage: Record<string, unknown>;
}

export const GGUF_LORA = 'adapter.gguf';

/** Writes vN atomically; returns its path. Throws ConflictError when vN already exists. */
export function writeVersion(home: ReinHome, modelId: string, version: number, files: VersionFiles): string {
  const dir = versionDir(home, modelId, version);
  if (existsSync(dir)) throw new ConflictError(`adapter version ${version} of ${modelId} already exists at ${dir}`, { dir });
  const parent = path.dirname(dir);
  mkdirSync(parent, { recursive: true, mode: 0o700 });
  const stage = path.join(parent, `${STAGE_PREFIX}v${version}-${process.pid}`);
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage);
  try {
    savePeftAdapter(path.join(stage, 'peft'), files.adapter, { baseModel: files.baseModel });
    // The GGUF LoRA is part of the version, not made later at publish time; an architecture without a GGUF mapping
    // keeps the PEFT directory only, and lineage.json says why.
    let gguf: { gguf: string | null; ggufNote?: string };
    try {
      loraToGguf(files.adapter, files.modelConfig, path.join(stage, GGUF_LORA), { name: `rein-v${version}` });
      gguf = { gguf: GGUF_LORA };
    } catch (e) {
      gguf = { gguf: null, ggufNote: `no GGUF LoRA: ${e instanceof Error ? e.message : String(e)}` };
    }
    const json = (name: string, v: unknown): void => writeFileSync(path.join(stage, name), JSON.stringify(v, null, 2) + '\n');
    json('metrics.json', files.metrics);
    json('config.json', files.config);
    json('lineage.json', { ...files.lineage, ...gguf });
    // The bytes reach the disk before the rename does, and the rename before the row commits (power-loss.test.ts).
    fsyncTree(stage);
    renameSync(stage, dir);
    fsyncPath(parent);
  } catch (e) {
    rmSync(stage, { recursive: true, force: true });
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOSPC' ? 'the disk is full' : code === 'EDQUOT' ? 'the disk quota is used up' : code === 'EFBIG' ? 'a file would be larger than this system allows' : null;
    if (why !== null) throw new DiskFullError(`cannot write adapter version ${version} in ${parent}: ${why} (${code}); nothing of v${version} was kept, and its ratings stay pending. Free some space, then train again`, { dir: parent, code });
    throw e;
  }
  return dir;
}

/** A version directory's name in a model's folder: vN. */
const VERSION_NAME = /^v(\d+)$/;

/** Removes the entries of every model's folder that `doomed` picks (by name and full path); returns their paths. */
function removeEntries(home: ReinHome, doomed: (name: string, full: string) => boolean): string[] {
  const removed: string[] = [];
  if (!existsSync(home.adaptersDir)) return removed;
  for (const m of readdirSync(home.adaptersDir, { withFileTypes: true })) {
    if (!m.isDirectory()) continue;
    const dir = path.resolve(home.adaptersDir, m.name);
    for (const e of readdirSync(dir)) {
      const full = path.join(dir, e);
      if (!doomed(e, full)) continue;
      rmSync(full, { recursive: true, force: true });
      removed.push(full);
    }
  }
  return removed;
}

/** Removes staging directories left by processes that no longer run. Returns the removed paths. */
export function removeStaleStaging(home: ReinHome): string[] {
  return removeEntries(home, (e) => {
    const match = /^\.stage-v\d+-(\d+)$/.exec(e);
    return match !== null && !pidAlive(Number(match[1]));
  });
}

/**
 * Removes version directories (adapters/<model>/vN) that no adapter row names. A worker killed between the rename
 * of its version and the commit of the row leaves one: its run failed and its ratings are pending again, so the
 * directory is a result nothing refers to. Call it only when no worker can be writing (the scheduler does after a
 * worker died and at start-up). Returns the removed paths.
 */
export function removeOrphanVersions(home: ReinHome, store: Store): string[] {
  const named = new Set(store.adapters.paths().map((p) => path.resolve(p)));
  return removeEntries(home, (e, full) => VERSION_NAME.test(e) && !named.has(full));
}

/**
 * Keeps the newest `keep` inactive versions of a model and deletes the older ones (row and directory). Active,
 * candidate, rejected (kept for inspection) and rolled-back versions are never pruned here.
 */
export function pruneInactive(store: Store, home: ReinHome, modelId: string, keep: number): number[] {
  const drop = store.adapters.withStatus(modelId, 'inactive').slice(keep);
  if (drop.length === 0) return [];
  store.adapters.delete(modelId, drop, { action: 'pruneAdapters', detail: { keep } });
  const root = path.resolve(home.adaptersDir) + path.sep;
  for (const r of drop) if (path.resolve(r.path).startsWith(root)) rmSync(r.path, { recursive: true, force: true });
  return drop.map((r) => r.version);
}

/** The next version number of a model: one above any row or directory (a directory without a row still counts). */
export function nextVersion(store: Store, home: ReinHome, modelId: string): number {
  let v = store.adapters.maxVersion(modelId);
  const dir = modelAdaptersDir(home, modelId);
  if (existsSync(dir)) for (const e of readdirSync(dir)) {
    const m = VERSION_NAME.exec(e);
    if (m !== null) v = Math.max(v, Number(m[1]));
  }
  return v + 1;
}
