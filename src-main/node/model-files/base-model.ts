// Which model directory a round trains, and its shape for the presets. A model id is registered in the `models`
// table (id → path, by the wizard: useModel, useDemoModel); an absolute path to an HF directory is accepted as its own
// id (`rein settings set model.active=<dir>`).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { NotAvailableError } from '../../common/errors.ts';
import { modelParams, parseModelConfig } from '../../common/engine/families/registry.ts';
import { numel } from '../../common/engine/families/params.ts';
import type { ModelShape } from '../../common/training/presets.ts';
import type { Store } from '../store/store.ts';
import { readRegularFile } from '../fs-read.ts';

/** How to set a model up, for the errors of every verb that needs one. */
export const SET_UP_A_MODEL = 'choose one in the app (Settings → Model, or the setup wizard), or run `rein settings set model.active=<an HF model directory>`; `rein demo` tries the small demo model';

/** The directory of the model `modelId`; `verb` (the caller) names what cannot run without one. */
export function resolveModelDir(store: Store, modelId: string, verb = 'startTraining'): string {
  const dir = store.modelPath(modelId) ?? (path.isAbsolute(modelId) ? modelId : null);
  if (dir === null) {
    const which = modelId === '' || modelId === 'default' ? 'no model is set up' : `model ${JSON.stringify(modelId)} is not set up`;
    throw new NotAvailableError(verb, `${which}: ${SET_UP_A_MODEL}`);
  }
  if (!existsSync(path.join(dir, 'config.json'))) {
    throw new NotAvailableError(verb, `model ${JSON.stringify(modelId)}: ${dir} has no config.json`);
  }
  return dir;
}

/** An HF config.json is a few KB; a larger one is not a config. */
export const CONFIG_JSON_MAX_BYTES = 1024 * 1024;

/** Parameter counts from config.json through the model's parameter table. */
export function modelShape(dir: string): ModelShape {
  const raw = JSON.parse(readRegularFile(path.join(dir, 'config.json'), CONFIG_JSON_MAX_BYTES)) as Record<string, unknown>;
  const total = modelParams(parseModelConfig(raw)).reduce((s, p) => s + numel(p.shape), 0);
  const experts = Number(raw['num_local_experts'] ?? raw['num_experts'] ?? 0);
  const perTok = Number(raw['num_experts_per_tok'] ?? 0);
  if (experts > 1 && perTok > 0) return { activeParams: Math.max(1, Math.round((total * perTok) / experts)), totalParams: total, moe: true };
  return { activeParams: total, totalParams: total, moe: false };
}
