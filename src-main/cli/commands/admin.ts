// `rein train`, `rein rollback`, `rein reset`, `rein export`, `rein import`.
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { BadInputError } from '../../common/errors.ts';
import { registerCommand } from '../dispatch.ts';
import type { CommandContext } from '../dispatch.ts';
import { intOption } from './format.ts';

registerCommand({
  name: 'train',
  summary: 'Start a training round now.',
  usage: 'rein train [--from <version>]',
  options: { from: { type: 'string', help: 'train on top of this adapter version instead of the active one' } },
  async run(ctx) {
    const fromVersion = intOption(ctx.options, 'from', 0, 1_000_000);
    const out = await (await ctx.api()).call('startTraining', fromVersion === undefined ? {} : { fromVersion });
    ctx.print(`Started training run ${out.runId}.`, out);
  },
});

registerCommand({
  name: 'rollback',
  summary: 'Make an earlier adapter version active (default: the one before; 0 = the base model).',
  usage: 'rein rollback [version]',
  args: [0, 1],
  async run(ctx) {
    let version: number | undefined;
    if (ctx.args[0] !== undefined) {
      if (!/^\d+$/.test(ctx.args[0])) throw new BadInputError(`a version is a whole number, not ${JSON.stringify(ctx.args[0])}`, 'version');
      version = Number(ctx.args[0]);
    }
    const out = await (await ctx.api()).call('rollback', version === undefined ? {} : { version });
    ctx.print(out.active ? `Adapter v${out.active.version} is active.` : 'The base model is active (no adapter).', out);
  },
});

async function confirmReset(ctx: CommandContext): Promise<boolean> {
  if (ctx.options.yes === true) return true;
  if (!ctx.io.stdinIsTTY) {
    throw new BadInputError('reset deletes every rating, run and adapter of the active model; stdin is not a terminal, so pass --yes to confirm', 'yes');
  }
  const rl = createInterface({ input: ctx.io.stdin, output: process.stderr });
  try {
    const answer = await rl.question('Delete every rating, training run and adapter of the active model (turns are kept)? Type "yes": ');
    return answer.trim().toLowerCase() === 'yes';
  } finally {
    rl.close();
  }
}

registerCommand({
  name: 'reset',
  summary: 'Delete all ratings, runs and adapters of the active model (asks first).',
  usage: 'rein reset [--yes]',
  options: { yes: { type: 'boolean', short: 'y', help: 'do not ask (needed when stdin is not a terminal)' } },
  async run(ctx) {
    if (!(await confirmReset(ctx))) {
      ctx.io.stderr('rein: reset cancelled; nothing was deleted\n');
      return 0;
    }
    const out = await (await ctx.api()).call('reset', { confirm: true });
    ctx.print(`Deleted ${out.ratings} ratings, ${out.runs} runs and ${out.adapters} adapters.`, out);
  },
});

registerCommand({
  name: 'export',
  summary: 'Write turns and ratings to a JSONL file.',
  usage: 'rein export <file>',
  args: [1, 1],
  async run(ctx) {
    // The running core has its own working directory: send an absolute path.
    const out = await (await ctx.api()).call('exportData', { path: path.resolve(ctx.io.cwd, ctx.args[0]) });
    ctx.print(`Wrote ${out.turns} turns and ${out.ratings} ratings to ${out.path}.`, out);
  },
});

registerCommand({
  name: 'import',
  summary: 'Read a JSONL export back (records already present are skipped).',
  usage: 'rein import <file>',
  args: [1, 1],
  async run(ctx) {
    const out = await (await ctx.api()).call('importData', { path: path.resolve(ctx.io.cwd, ctx.args[0]) });
    const bad = out.bad === 0 ? '' : `\n${out.bad} broken lines were left out: ${out.badLines.map((b) => `line ${b.line} (${b.reason})`).join('; ')}${out.bad > out.badLines.length ? '; …' : ''}`;
    ctx.print(`Imported ${out.turns} turns and ${out.ratings} ratings (${out.skipped} already present).${bad}`, out);
  },
});
