// `rein presets`: the training presets (common/training/presets.ts) resolved for a model shape, in plain words and
// numbers, and every field that `training.custom` may override with its help. It asks the core's describePresets
// verb, so with no flags the shape is the active model's.
import type { VerbInput } from '../../common/api.ts';
import { BadInputError } from '../../common/errors.ts';
import { PRESET_NAMES, type PresetName, type PresetTable, type TrainingConfig } from '../../common/training/presets.ts';
import { registerCommand } from '../dispatch.ts';
import { stringOption } from './format.ts';

const WORDS: Record<PresetName, string> = {
  careful: 'small steps, a tight trust region and a small KL budget: changes slowly, hard to break',
  balanced: 'the default: moderate steps and trust region',
  aggressive: 'large steps, a wider trust region and KL budget: learns fastest, most likely to drift',
};

/** "1.5e9", "500M", "0.5B", "60k" → a parameter count. */
export function parseCount(text: string, name: string): number {
  const m = /^(\d+(?:\.\d+)?(?:e\d+)?)([kmb])?$/i.exec(text.trim());
  const n = m === null ? Number.NaN : Number(m[1]) * ({ k: 1e3, m: 1e6, b: 1e9 }[(m[2] ?? '').toLowerCase() as 'k' | 'm' | 'b'] ?? 1);
  if (!(n >= 1) || !Number.isFinite(n)) throw new BadInputError(`--${name} must be a parameter count such as 500M, 0.5B or 5e8, not ${JSON.stringify(text)}`, name);
  return n;
}

function count(n: number): string {
  return n >= 1e9 ? `${(n / 1e9).toFixed(2)}B` : n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : `${(n / 1e3).toFixed(1)}k`;
}

function row(name: PresetName, c: TrainingConfig): string {
  return [
    `${name}: ${WORDS[name]}`,
    `  lr ${c.lr.toPrecision(3)}, at least ${c.steps} steps of ${c.batchSize} turns (and ${c.epochs} epoch of the trained ratings), LoRA rank ${c.rank} (alpha ${c.alpha})`,
    `  KL weight β ${c.beta}, token ratio clip [${c.ratioClipLow}, ${c.ratioClipHigh}], trajectory band [${c.bandLow}, ${c.bandHigh}] (${c.drift}), advantage clip ±${c.advantageClip}`,
    `  eval gate: ${Math.round(c.heldoutFraction * 100)}% of the pending ratings held out (they train next round), KL budget ${c.klBudget.toPrecision(3)} nats/token to the parent`,
  ].join('\n');
}

export function formatPresets(t: PresetTable): string {
  const shape = `${count(t.shape.activeParams)} active parameters${t.shape.moe ? ` of ${count(t.shape.totalParams)} (MoE)` : ' (dense)'}`;
  const fields = t.fields.map((f) => `  ${f.key}: ${f.help}`).join('\n');
  return [
    `Presets for a ${t.bucket} model, ${shape}:`,
    ...PRESET_NAMES.map((n) => row(n, t.presets[n])),
    'custom: balanced, with any of these fields overridden (rein settings set training.preset=custom \'training.custom={"steps":48}\'):',
    fields,
  ].join('\n');
}

registerCommand({
  name: 'presets',
  summary: 'The training presets for the active model (or a given size), with every custom field.',
  usage: 'rein presets [--params N] [--total N] [--moe]',
  options: {
    params: { type: 'string', help: 'active parameters, e.g. 500M or 0.5B (default: the active model)' },
    total: { type: 'string', help: 'all parameters of a MoE (default: --params)' },
    moe: { type: 'boolean', help: 'a mixture of experts' },
  },
  async run(ctx) {
    const params = stringOption(ctx.options, 'params');
    const total = stringOption(ctx.options, 'total');
    if (params === undefined && (total !== undefined || ctx.options.moe === true)) throw new BadInputError('--total and --moe need --params', 'params');
    const input: VerbInput<'describePresets'> = {};
    if (params !== undefined) {
      input.activeParams = parseCount(params, 'params');
      input.totalParams = total === undefined ? input.activeParams : parseCount(total, 'total');
      input.moe = ctx.options.moe === true;
      if (input.totalParams < input.activeParams) throw new BadInputError('--total must be at least --params', 'total');
    }
    const table = await (await ctx.api()).call('describePresets', input);
    ctx.print(formatPresets(table), table);
  },
});
