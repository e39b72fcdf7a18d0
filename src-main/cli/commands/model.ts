// `rein model tiny <arch> <dir>`: write a tiny random-weight model in the real HF layout (tests, benchmarks,
// trying the trainer without downloading a model).
import { BadInputError } from '../../common/errors.ts';
import { TINY_ARCHS, writeTinyModel } from '../../node/engine/tiny.ts';
import type { TinyArch, TinyOptions } from '../../node/engine/tiny.ts';
import { registerCommand } from '../dispatch.ts';
import type { Command, OptionValues } from '../dispatch.ts';

function intOption(options: OptionValues, name: string): number | undefined {
  const v = options[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^-?\d+$/.test(v)) throw new BadInputError(`--${name} must be an integer, got ${JSON.stringify(v)}`, name);
  return Number(v);
}

export const modelTinyCommand: Command = {
  name: 'model tiny',
  summary: 'Write a tiny random-weight model (HF layout, real tokenizer) for tests and benchmarks.',
  usage: 'rein model tiny <llama|qwen2> <dir> [--layers N] [--hidden H] [--heads N] [--kv-heads N] [--seed S] [--shards K] [--dtype F32|BF16|F16]',
  description:
    'Writes config.json, model.safetensors (or shards with an index), tokenizer.json, tokenizer_config.json and ' +
    'generation_config.json. The same options and seed give byte-identical files.',
  args: [2, 2],
  options: {
    layers: { type: 'string', help: 'decoder layers <n> (default 2)' },
    hidden: { type: 'string', help: 'hidden size <n> (default 64)' },
    heads: { type: 'string', help: 'attention heads <n> (default 4)' },
    'kv-heads': { type: 'string', help: 'key/value heads <n> (default heads/2)' },
    intermediate: { type: 'string', help: 'MLP width <n> (default 3 × hidden)' },
    seed: { type: 'string', help: 'random seed <n> (default 0)' },
    shards: { type: 'string', help: 'safetensors shards <n> (default 1)' },
    dtype: { type: 'string', help: 'weight dtype <F32|BF16|F16> (default F32)' },
    tied: { type: 'boolean', help: 'tie lm_head to the embedding (default: qwen2 tied, llama not)' },
    untied: { type: 'boolean', help: 'write a separate lm_head' },
    overwrite: { type: 'boolean', help: 'replace a non-empty directory' },
  },
  async run(ctx) {
    const [arch, dir] = ctx.args as [string, string];
    if (!(TINY_ARCHS as readonly string[]).includes(arch)) {
      throw new BadInputError(`unknown architecture "${arch}" (use ${TINY_ARCHS.join(' or ')})`, 'arch');
    }
    const o = ctx.options;
    if (o.tied === true && o.untied === true) throw new BadInputError('--tied and --untied contradict each other', 'tied');
    const dtype = o.dtype === undefined ? undefined : String(o.dtype).toUpperCase();
    if (dtype !== undefined && !['F32', 'BF16', 'F16'].includes(dtype)) throw new BadInputError(`--dtype must be F32, BF16 or F16, got ${dtype}`, 'dtype');
    const opts: TinyOptions = {
      arch: arch as TinyArch,
      layers: intOption(o, 'layers'),
      hidden: intOption(o, 'hidden'),
      heads: intOption(o, 'heads'),
      kvHeads: intOption(o, 'kv-heads'),
      intermediate: intOption(o, 'intermediate'),
      seed: intOption(o, 'seed'),
      shards: intOption(o, 'shards'),
      dtype: dtype as TinyOptions['dtype'],
      tieWordEmbeddings: o.tied === true ? true : o.untied === true ? false : undefined,
      overwrite: o.overwrite === true,
    };
    const info = writeTinyModel(dir, opts);
    ctx.print(`wrote ${arch} (${info.params.toLocaleString('en-US')} parameters) to ${info.dir}: ${info.files.join(', ')}`, info);
  },
};

registerCommand(modelTinyCommand);
