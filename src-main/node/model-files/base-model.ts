// Which model a round trains, and its shape for the presets. A model is an HF directory or one GGUF file. A model id
// is registered in the `models` table (id → path: `rein model add`, the wizard's useModel, useDemoModel; Ollama's as
// `ollama:<name>:<tag>` → its blob); an absolute path to an HF directory or a .gguf file is accepted as its own id
// (`rein settings set model.active=<path>`).
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { NotAvailableError } from '../../common/errors.ts';
import { modelParams, parseModelConfig } from '../../common/engine/families/registry.ts';
import { numel } from '../../common/engine/families/params.ts';
import type { ModelShape } from '../../common/training/presets.ts';
import type { Store } from '../store/store.ts';
import { readRegularFile } from '../fs-read.ts';
import { ggufConfigJson, loadGgufModel } from '../engine/gguf/load.ts';
import { GgufFile } from '../engine/gguf/read.ts';
import { loadTokenizer } from '../engine/tokenizer.ts';
import type { ReinTokenizer } from '../engine/tokenizer.ts';

/** How to set a model up, for the errors of every verb that needs one. */
export const SET_UP_A_MODEL =
  'choose one in the app (Settings → Model, or the setup wizard), or run `rein model list` to see the models on this computer and `rein model use <id>` to train one (`rein model add <path-or-ollama:name:tag>` adds one it did not find); `rein model use demo` uses the small demo model that ships with Rein';

/** A model given as one file: a .gguf (an Ollama blob has no extension, so the magic decides, not the name). */
export function isGgufModel(source: string): boolean {
  try {
    return statSync(source, { throwIfNoEntry: false })?.isFile() === true;
  } catch {
    return false; // a path no file can have (a NUL in a hand-set model.active)
  }
}

/**
 * The HF directory or GGUF file of the model `modelId`; `verb` (the caller) names what cannot run without one. The
 * name was kept from when every model was a directory.
 */
export function resolveModelDir(store: Store, modelId: string, verb = 'startTraining'): string {
  const dir = store.modelPath(modelId) ?? (path.isAbsolute(modelId) ? modelId : null);
  if (dir === null) {
    const which = modelId === '' || modelId === 'default' ? 'no model is set up' : `model ${JSON.stringify(modelId)} is not set up`;
    throw new NotAvailableError(verb, `${which}: ${SET_UP_A_MODEL}`);
  }
  if (isGgufModel(dir)) return dir;
  if (!existsSync(dir)) {
    throw new NotAvailableError(verb, `model ${JSON.stringify(modelId)}: ${dir} is gone (moved or deleted?); \`rein model add\` it again where it is now, or \`rein model use <id>\` another`);
  }
  if (!existsSync(path.join(dir, 'config.json'))) {
    throw new NotAvailableError(verb, `model ${JSON.stringify(modelId)}: ${dir} has no config.json`);
  }
  return dir;
}

/** An HF config.json is a few KB; a larger one is not a config. */
export const CONFIG_JSON_MAX_BYTES = 1024 * 1024;

/** A model's config.json, or the one a GGUF's metadata stands for (gguf/load.ts; the header only). */
export function modelConfigJson(source: string): Record<string, unknown> {
  if (isGgufModel(source)) {
    const f = GgufFile.open(source);
    try {
      return ggufConfigJson(f);
    } finally {
      f.close();
    }
  }
  return JSON.parse(readRegularFile(path.join(source, 'config.json'), CONFIG_JSON_MAX_BYTES)) as Record<string, unknown>;
}

/** The tokenizer (and chat template) of an HF directory, or of a GGUF's metadata. */
export function loadModelTokenizer(source: string): ReinTokenizer {
  if (!isGgufModel(source)) return loadTokenizer(source);
  const m = loadGgufModel(source, { tokenizer: true });
  m.close();
  return m.tokenizer!;
}

/** Parameter counts from config.json (or a GGUF's metadata) through the model's parameter table. */
export function modelShape(dir: string): ModelShape {
  const raw = modelConfigJson(dir);
  const total = modelParams(parseModelConfig(raw)).reduce((s, p) => s + numel(p.shape), 0);
  const experts = Number(raw['num_local_experts'] ?? raw['num_experts'] ?? 0);
  const perTok = Number(raw['num_experts_per_tok'] ?? 0);
  if (experts > 1 && perTok > 0) return { activeParams: Math.max(1, Math.round((total * perTok) / experts)), totalParams: total, moe: true };
  return { activeParams: total, totalParams: total, moe: false };
}
