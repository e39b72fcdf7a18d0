// `rein turns` and `rein ratings`: newest first, paged.
import type { VerbInput } from '../../common/api.ts';
import type { TurnState } from '../../common/domain.ts';
import { BadInputError } from '../../common/errors.ts';
import { registerCommand } from '../dispatch.ts';
import { formatRating, formatTurn, intOption, stringOption } from './format.ts';

const PAGING = {
  limit: { type: 'string', help: 'how many to show (1-1000, default 20)' },
  offset: { type: 'string', help: 'skip this many of the newest' },
  source: { type: 'string', help: 'only this source (claude-code, codex, openclaw, proxy, api, ...)' },
} as const;

function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], name: string): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) throw new BadInputError(`--${name} must be one of ${allowed.join(', ')}, not ${JSON.stringify(value)}`, name);
  return value as T;
}

registerCommand({
  name: 'turns',
  summary: 'Captured turns, newest first.',
  usage: 'rein turns [--limit N] [--offset N] [--source S] [--session ID] [--state unrated|rated|ignored|expired] [--search TEXT]',
  options: {
    ...PAGING,
    session: { type: 'string', help: 'only this agent session' },
    state: { type: 'string', help: 'unrated, rated, ignored or expired' },
    search: { type: 'string', help: 'text to find in the prompt or response' },
  },
  async run(ctx) {
    const o = ctx.options;
    const input: VerbInput<'listTurns'> = { limit: intOption(o, 'limit', 1, 1000) ?? 20, offset: intOption(o, 'offset', 0, Number.MAX_SAFE_INTEGER) ?? 0 };
    const source = stringOption(o, 'source');
    if (source !== undefined) input.source = source;
    const session = stringOption(o, 'session');
    if (session !== undefined) input.session = session;
    const state = oneOf<TurnState>(stringOption(o, 'state'), ['unrated', 'rated', 'ignored', 'expired'], 'state');
    if (state !== undefined) input.state = state;
    const search = stringOption(o, 'search');
    if (search !== undefined) input.search = search;
    const page = await (await ctx.api()).call('listTurns', input);
    const shown = `${page.items.length} of ${page.total} turns`;
    ctx.print(page.items.length === 0 ? `No turns (${page.total} in all).` : `${page.items.map(formatTurn).join('\n')}\n(${shown})`, page);
  },
});

registerCommand({
  name: 'ratings',
  summary: 'Ratings, newest first.',
  usage: 'rein ratings [--limit N] [--offset N] [--kind good|bad|scale] [--source S] [--all]',
  options: {
    ...PAGING,
    kind: { type: 'string', help: 'good, bad or scale' },
    all: { type: 'boolean', help: 'include undone ratings' },
  },
  async run(ctx) {
    const o = ctx.options;
    const input: VerbInput<'listRatings'> = {
      limit: intOption(o, 'limit', 1, 1000) ?? 20,
      offset: intOption(o, 'offset', 0, Number.MAX_SAFE_INTEGER) ?? 0,
      includeUndone: o.all === true,
    };
    const kind = oneOf(stringOption(o, 'kind'), ['good', 'bad', 'scale'] as const, 'kind');
    if (kind !== undefined) input.kind = kind;
    const source = stringOption(o, 'source');
    if (source !== undefined) input.source = source;
    const page = await (await ctx.api()).call('listRatings', input);
    ctx.print(
      page.items.length === 0 ? `No ratings (${page.total} in all).` : `${page.items.map(formatRating).join('\n')}\n(${page.items.length} of ${page.total} ratings)`,
      page,
    );
  },
});
