// PEFT LoRA adapter directories (huggingface/peft; see shared/SPECS.md "PEFT LoRA adapter"):
// adapter_config.json + adapter_model.safetensors with keys
// base_model.model.<module path>.lora_A.weight [r, in] and .lora_B.weight [out, r].
// Saving stages the directory beside its destination and renames it into place, so a crash or an abort
// never leaves a half-written adapter under the final name.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConflictError, ReinError } from '../../common/errors.ts';
import { loraSpec, peftKeys } from '../../common/engine/lora.ts';
import type { LoraAdapter, LoraPair } from '../../common/engine/lora.ts';
import type { ResolvedParam } from '../../common/engine/families/params.ts';
import { SafetensorsFile, writeSafetensors } from './safetensors.ts';
import type { TensorToWrite } from './safetensors.ts';

export const ADAPTER_CONFIG = 'adapter_config.json';
export const ADAPTER_WEIGHTS = 'adapter_model.safetensors';

export class PeftError extends ReinError {
  constructor(dir: string, message: string, detail?: Record<string, unknown>) {
    super('bad_input', `adapter ${dir}: ${message}`, { detail: { dir, ...detail } });
    this.name = 'PeftError';
  }
}

/** adapter_config.json with the fields SPECS.md lists for the widest compatibility (vLLM, Ollama, llama.cpp's converter). */
export interface PeftConfig {
  peft_type: 'LORA';
  task_type: 'CAUSAL_LM';
  base_model_name_or_path: string;
  r: number;
  lora_alpha: number;
  target_modules: string[];
  lora_dropout: number;
  bias: 'none';
  use_rslora: boolean;
  use_dora: false;
  modules_to_save: null;
  fan_in_fan_out: false;
}

export function peftConfig(adapter: LoraAdapter, baseModel: string): PeftConfig {
  return {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: baseModel,
    r: adapter.spec.r,
    lora_alpha: adapter.spec.alpha,
    target_modules: [...adapter.spec.targets],
    lora_dropout: adapter.spec.dropout,
    bias: 'none',
    use_rslora: adapter.spec.rslora,
    use_dora: false,
    modules_to_save: null,
    fan_in_fan_out: false,
  };
}

export interface SaveOptions {
  baseModel: string;
  /** Replace an existing directory (swapped in by rename; the old one is removed afterwards). */
  overwrite?: boolean;
  /** safetensors __metadata__ (PEFT writes {"format": "pt"}). */
  metadata?: Record<string, string>;
}

export function savePeftAdapter(dir: string, adapter: LoraAdapter, opts: SaveOptions): void {
  const target = path.resolve(dir);
  if (existsSync(target) && opts.overwrite !== true) throw new ConflictError(`adapter directory ${target} already exists`, { dir: target });
  const r = adapter.spec.r;
  const tensors: Record<string, TensorToWrite> = {};
  for (const p of adapter.pairs) {
    if (p.a.length !== r * p.inFeatures || p.b.length !== p.outFeatures * r) {
      throw new PeftError(target, `LoRA pair for ${p.baseKey} does not have A [${r}, ${p.inFeatures}] and B [${p.outFeatures}, ${r}]`, { tensor: p.baseKey });
    }
    for (const t of [p.a, p.b]) {
      for (let i = 0; i < t.length; i++) {
        if (!Number.isFinite(t[i]!)) throw new PeftError(target, `LoRA weights for ${p.baseKey} are not finite`, { tensor: p.baseKey });
      }
    }
    const k = peftKeys(p.baseKey);
    tensors[k.a] = { shape: [r, p.inFeatures], data: p.a };
    tensors[k.b] = { shape: [p.outFeatures, r], data: p.b };
  }
  const stage = `${target}.tmp-${process.pid}-${Date.now()}`;
  mkdirSync(stage, { recursive: true });
  try {
    writeFileSync(path.join(stage, ADAPTER_CONFIG), JSON.stringify(peftConfig(adapter, opts.baseModel), null, 2) + '\n');
    writeSafetensors(path.join(stage, ADAPTER_WEIGHTS), tensors, opts.metadata ?? { format: 'pt' });
    if (existsSync(target)) {
      const old = `${target}.old-${process.pid}-${Date.now()}`;
      renameSync(target, old);
      renameSync(stage, target);
      rmSync(old, { recursive: true, force: true });
    } else {
      renameSync(stage, target);
    }
  } catch (e) {
    rmSync(stage, { recursive: true, force: true });
    throw e;
  }
}

const KEY_RE = /^base_model\.model\.(.+\.layers\.(\d+)\..+)\.lora_([AB])\.weight$/;

/**
 * Load a PEFT LoRA directory. With `linears` (the model's linear weights from its parameter table), every
 * pair must name one of them with matching in/out features; without, shapes are only checked against r.
 */
export function loadPeftAdapter(dir: string, linears?: readonly ResolvedParam[]): { adapter: LoraAdapter; config: PeftConfig } {
  const target = path.resolve(dir);
  const cfgPath = path.join(target, ADAPTER_CONFIG);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(cfgPath, 'utf8'));
  } catch (e) {
    const missing = (e as NodeJS.ErrnoException).code === 'ENOENT';
    throw new PeftError(target, missing ? `${ADAPTER_CONFIG} is missing` : `${ADAPTER_CONFIG} is unreadable: ${(e as Error).message}`);
  }
  const c = raw as Record<string, unknown>;
  const bad = (field: string, why: string): never => {
    throw new PeftError(target, `${ADAPTER_CONFIG} field ${field}: ${why}`, { field });
  };
  if (c.peft_type !== 'LORA') bad('peft_type', `only LORA is supported, got ${JSON.stringify(c.peft_type)}`);
  if (c.use_dora === true) bad('use_dora', 'DoRA adapters are not supported');
  if (c.bias !== undefined && c.bias !== 'none') bad('bias', `only "none" is supported, got ${JSON.stringify(c.bias)}`);
  if (c.fan_in_fan_out === true) bad('fan_in_fan_out', 'transposed (Conv1D) weights are not supported');
  if (c.modules_to_save !== undefined && c.modules_to_save !== null && !(Array.isArray(c.modules_to_save) && c.modules_to_save.length === 0)) {
    bad('modules_to_save', 'full-weight modules are not supported');
  }
  if (!Number.isInteger(c.r) || (c.r as number) < 1) bad('r', `must be a positive integer, got ${JSON.stringify(c.r)}`);
  if (typeof c.lora_alpha !== 'number' || !(c.lora_alpha > 0)) bad('lora_alpha', `must be a positive number, got ${JSON.stringify(c.lora_alpha)}`);
  let targets: string[];
  if (Array.isArray(c.target_modules) && c.target_modules.every((t) => typeof t === 'string')) targets = c.target_modules as string[];
  else if (typeof c.target_modules === 'string') targets = [c.target_modules]; // PEFT also allows one regex string; treated as a name
  else targets = bad('target_modules', 'must be a list of module names');
  const spec = loraSpec({
    r: c.r as number,
    alpha: c.lora_alpha as number,
    rslora: c.use_rslora === true,
    targets,
    dropout: typeof c.lora_dropout === 'number' ? c.lora_dropout : 0,
  });

  const wPath = path.join(target, ADAPTER_WEIGHTS);
  if (!existsSync(wPath)) throw new PeftError(target, `${ADAPTER_WEIGHTS} is missing`);
  const file = SafetensorsFile.open(wPath);
  try {
    const byModule = new Map<string, { a?: string; b?: string; layer: number }>();
    for (const name of file.names()) {
      const m = KEY_RE.exec(name);
      if (m === null) throw new PeftError(target, `unexpected tensor ${name} (only ...layers.N.<module>.lora_A/B.weight)`, { tensor: name });
      const entry = byModule.get(m[1]!) ?? { layer: Number(m[2]) };
      entry[m[3] === 'A' ? 'a' : 'b'] = name;
      byModule.set(m[1]!, entry);
    }
    const linearByKey = new Map((linears ?? []).map((p) => [p.hfKey, p]));
    const pairs: LoraPair[] = [];
    for (const [modPath, e] of byModule) {
      if (e.a === undefined || e.b === undefined) {
        throw new PeftError(target, `${modPath} has lora_${e.a === undefined ? 'A' : 'B'} missing`, { module: modPath });
      }
      const baseKey = `${modPath}.weight`;
      const module = modPath.slice(modPath.lastIndexOf('.') + 1);
      const aShape = file.info(e.a).shape;
      const bShape = file.info(e.b).shape;
      if (aShape.length !== 2 || bShape.length !== 2 || aShape[0] !== spec.r || bShape[1] !== spec.r) {
        throw new PeftError(target, `${modPath}: lora_A is [${aShape.join(', ')}] and lora_B [${bShape.join(', ')}]; expected [${spec.r}, in] and [out, ${spec.r}]`, {
          module: modPath,
        });
      }
      const inFeatures = aShape[1]!;
      const outFeatures = bShape[0]!;
      if (linears !== undefined) {
        const base = linearByKey.get(baseKey);
        if (base === undefined) throw new PeftError(target, `${modPath} is not a linear weight of the base model`, { module: modPath });
        const [bo, bi] = base.shape as [number, number];
        if (bo !== outFeatures || bi !== inFeatures) {
          throw new PeftError(target, `${modPath}: the adapter is for [${outFeatures}, ${inFeatures}] but the base weight is [${bo}, ${bi}]`, {
            module: modPath,
          });
        }
      }
      const a = Float32Array.from(file.read(e.a));
      const b = Float32Array.from(file.read(e.b));
      for (const t of [a, b]) {
        for (let i = 0; i < t.length; i++) {
          if (!Number.isFinite(t[i]!)) throw new PeftError(target, `${modPath} holds a non-finite value`, { module: modPath });
        }
      }
      pairs.push({ baseKey, module, layer: e.layer, inFeatures, outFeatures, a, b });
    }
    if (linears !== undefined) {
      const order = new Map(linears.map((p, i) => [p.hfKey, i]));
      pairs.sort((x, y) => order.get(x.baseKey)! - order.get(y.baseKey)!);
    } else {
      pairs.sort((x, y) => x.layer - y.layer || (x.baseKey < y.baseKey ? -1 : 1));
    }
    return { adapter: { spec, pairs }, config: c as unknown as PeftConfig };
  } finally {
    file.close();
  }
}
