// `rein good`, `rein bad`, `rein rate <1-5>` and `rein undo`. With --stdin, one rating per input line, each its
// own write: a word (good, bad, 1-5) using the flags for turn and session, or a JSON object in the `rate` verb's shape.
import { createInterface } from 'node:readline';
import type { RateInput } from '../../common/api.ts';
import { BadInputError, EXIT_CODE, ReinError } from '../../common/errors.ts';
import { registerCommand } from '../dispatch.ts';
import type { CommandContext, OptionSpec } from '../dispatch.ts';
import { formatStatus, intOption, ratingLabel, signed, statusRow, stringOption } from './format.ts';

const RATE_OPTIONS: Record<string, OptionSpec> = {
  turn: { type: 'string', help: 'the turn id to rate (default: the newest unrated turn)' },
  session: { type: 'string', help: 'rate the newest turn of this agent session' },
  correction: { type: 'string', help: 'the answer it should have given (a desirable example)' },
  tag: { type: 'string', multiple: true, help: 'a tag for the rating' },
  comment: { type: 'string', help: 'a free-text comment' },
  stdin: { type: 'boolean', help: 'read one rating per line from stdin (good, bad, 1-5, or a JSON object)' },
};

function parseValue(word: string): RateInput['value'] {
  const w = word.trim().toLowerCase();
  if (w === 'good' || w === 'bad') return w;
  if (/^[1-5]$/.test(w)) return Number(w);
  throw new BadInputError(`a rating is good, bad or a whole number 1-5, not ${JSON.stringify(word)}`, 'value');
}

function fromFlags(ctx: CommandContext, value: RateInput['value']): RateInput {
  const o = ctx.options;
  const input: RateInput = { value, rater: 'cli' };
  const turnId = intOption(o, 'turn', 1, Number.MAX_SAFE_INTEGER);
  if (turnId !== undefined) input.turnId = turnId;
  const session = stringOption(o, 'session');
  if (session !== undefined) input.session = session;
  const correction = stringOption(o, 'correction');
  if (correction !== undefined) input.correction = correction;
  if (Array.isArray(o.tag) && o.tag.length > 0) input.tags = o.tag;
  const comment = stringOption(o, 'comment');
  if (comment !== undefined) input.comment = comment;
  return input;
}

function fromLine(ctx: CommandContext, line: string, n: number): RateInput {
  const t = line.trim();
  if (!t.startsWith('{')) return fromFlags(ctx, parseValue(t));
  try {
    return { rater: 'cli', ...(JSON.parse(t) as object) } as RateInput;
  } catch (e) {
    throw new BadInputError(`stdin line ${n}: not valid JSON: ${(e as Error).message}`, 'stdin');
  }
}

async function rateOne(ctx: CommandContext, input: RateInput) {
  const api = await ctx.api();
  const { rating, status } = await api.call('rate', input);
  return {
    result: { rating, status },
    human: `Rated turn ${rating.turnId} ${ratingLabel(rating)} (reward ${signed(rating.value)}). Pending ${status.pending} of ${status.threshold}.`,
  };
}

/** Each line is its own write; a failed line is reported and the rest go on. The exit code is the first failure's. */
async function rateStdin(ctx: CommandContext): Promise<number> {
  const rl = createInterface({ input: ctx.io.stdin, crlfDelay: Infinity });
  let ok = 0;
  let failed = 0;
  let code = 0;
  let n = 0;
  for await (const line of rl) {
    n++;
    if (line.trim() === '' || line.trim().startsWith('#')) continue;
    try {
      const { result, human } = await rateOne(ctx, fromLine(ctx, line, n));
      ok++;
      if (ctx.json) ctx.io.stdout(JSON.stringify(result.rating) + '\n');
      else ctx.io.stdout(human + '\n');
    } catch (e) {
      failed++;
      const err = e instanceof ReinError ? e : new ReinError('internal', String((e as Error)?.message ?? e));
      code ||= EXIT_CODE[err.code];
      ctx.io.stderr(ctx.json ? JSON.stringify({ line: n, error: err.toBody() }) + '\n' : `rein: stdin line ${n}: ${err.message}\n`);
    }
  }
  if (!ctx.json) ctx.io.stderr(`rein: ${ok} rated, ${failed} failed\n`);
  return code;
}

function ratingCommand(name: string, summary: string, usage: string, valueOf: (ctx: CommandContext) => RateInput['value'], args: [number, number]) {
  registerCommand({
    name,
    summary,
    usage,
    args,
    options: RATE_OPTIONS,
    async run(ctx) {
      if (ctx.options.stdin) {
        if (ctx.args.length > 0) throw new BadInputError('--stdin takes the ratings from stdin, not from arguments', 'argv');
        return rateStdin(ctx);
      }
      const { result, human } = await rateOne(ctx, fromFlags(ctx, valueOf(ctx)));
      ctx.print(human, result);
    },
  });
}

ratingCommand('good', 'Rate the newest answer (or --turn N) good.', 'rein good [--turn <id>] [--session <id>] [--tag <t>] [--comment <text>]', () => 'good', [0, 0]);
ratingCommand('bad', 'Rate the newest answer (or --turn N) bad, optionally with a correction.', 'rein bad [--turn <id>] [--session <id>] [--correction <text>]', () => 'bad', [0, 0]);
ratingCommand(
  'rate',
  'Rate an answer on a 1-5 scale (or good/bad).',
  'rein rate <1-5|good|bad> [--turn <id>] [--session <id>] [--correction <text>] [--tag <t>] [--comment <text>] | rein rate --stdin',
  (ctx) => {
    if (ctx.args.length !== 1) throw new BadInputError('rein rate needs a rating: 1-5, good or bad', 'value');
    return parseValue(ctx.args[0]);
  },
  [0, 1],
);

registerCommand({
  name: 'undo',
  summary: 'Undo the newest rating (of --session, or of any session).',
  usage: 'rein undo [--session <id>]',
  options: { session: { type: 'string', help: 'undo the newest rating of this session only' } },
  async run(ctx) {
    const session = stringOption(ctx.options, 'session');
    const out = await (await ctx.api()).call('undo', session === undefined ? {} : { session });
    ctx.print(
      out.undone
        ? `Undid rating #${out.undone.id} (${ratingLabel(out.undone)}) of turn ${out.undone.turnId}. Pending ${out.status.pending} of ${out.status.threshold}.`
        : 'Nothing to undo.',
      out,
    );
  },
});

registerCommand({
  name: 'status',
  summary: 'Model, active adapter, ratings, pending count and the reward baseline (the running EMA of rewards).',
  usage: 'rein status',
  async run(ctx) {
    const api = await ctx.api();
    const s = await api.call('status', {});
    ctx.print(`${formatStatus(s)}\n${statusRow('core', api.via === 'http' ? 'running (answered over HTTP)' : 'not running (read the store directly)')}`, s);
  },
});
