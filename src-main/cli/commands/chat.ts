// `rein chat` and `rein arena`: the Chat screen and the Arena in the terminal. Both read one line at a time from
// stdin (a terminal or a pipe alike), stream the answer's tokens as they come (chatToken events), and use the same
// verbs as the app: chat, rate, arenaStart, arenaVote.
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import type { ArenaMatchView, ChatAnswer, RateInput } from '../../common/api.ts';
import { BadInputError, ReinError } from '../../common/errors.ts';
import { registerCommand } from '../dispatch.ts';
import type { CommandContext } from '../dispatch.ts';
import type { CliApi } from '../connect.ts';
import { intOption, stringOption } from './format.ts';

const CHAT_HELP = `Type a message and press Enter. Commands:
  /version [N|base|active]  answer with version N, the base, or the active version (no argument: show it)
  /system [text]            set the system prompt (no text: clear it)
  /good  /bad  /rate N      rate the last answer (N = 1-5)
  /correct <text>           rate the last answer with the answer it should have given
  /new                      start a new conversation
  /quit                     leave (also Ctrl-D)
`;

/** `base` → 0, `active` → undefined, `v3` or `3` → 3. */
export function parseVersion(word: string): number | undefined {
  const w = word.trim().toLowerCase();
  if (w === 'active' || w === '') return undefined;
  if (w === 'base' || w === 'v0' || w === '0') return 0;
  const m = /^v?(\d{1,9})$/.exec(w);
  if (m === null) throw new BadInputError(`a version is a number (3 or v3), base or active, not ${JSON.stringify(word)}`, 'version');
  return Number(m[1]);
}

const versionName = (v: number | undefined | null): string => (v === undefined || v === null ? 'the active version' : v === 0 ? 'the base' : `v${v}`);

/** Streams one answer: chatToken pieces are written as they arrive; whatever did not stream is written at the end. */
async function streamed<T>(api: CliApi, ctx: CommandContext, streamId: string, call: () => Promise<T>, full: (r: T) => string): Promise<T> {
  let shown = '';
  const off = await api.subscribe('chatToken', (e) => {
    if (e.streamId !== streamId || ctx.json) return;
    shown += e.text;
    ctx.io.stdout(e.text);
  });
  try {
    const r = await call();
    const text = full(r);
    if (!ctx.json) ctx.io.stdout((text.startsWith(shown) ? text.slice(shown.length) : `\n${text}`) + '\n');
    return r;
  } finally {
    off();
  }
}

function showError(ctx: CommandContext, e: unknown): void {
  const err = e instanceof ReinError ? e : new ReinError('internal', String((e as Error)?.message ?? e));
  ctx.io.stderr(ctx.json ? JSON.stringify({ error: err.toBody() }) + '\n' : `rein: ${err.message}\n`);
}

registerCommand({
  name: 'chat',
  summary: 'Talk to your local model; rate its answers as you go',
  usage: 'rein chat [--version N|base] [--system <text>] [--max-tokens N]',
  description:
    "Answers stream from Rein's model server (or proxy.upstream) with the active version unless --version says otherwise. Every answer is stored as a turn with its tokens, μ and version, so rating it trains the model. Reads one line at a time from stdin, so it works in a pipe too.\n\n" +
    CHAT_HELP,
  options: {
    version: { type: 'string', help: 'the version that answers: a number, base, or active (default)' },
    system: { type: 'string', help: 'the system prompt' },
    'max-tokens': { type: 'string', help: 'the longest answer in tokens (default 512)' },
  },
  async run(ctx) {
    const api = await ctx.api();
    let version = parseVersion(stringOption(ctx.options, 'version') ?? 'active');
    let system = stringOption(ctx.options, 'system') ?? null;
    const maxTokens = intOption(ctx.options, 'max-tokens', 1, 8192) ?? 512;
    let history: { role: 'user' | 'assistant'; content: string }[] = [];
    let session = `cli-${randomUUID()}`;
    let last: ChatAnswer | null = null;
    const tty = ctx.io.stdinIsTTY;
    if (tty && !ctx.json) ctx.io.stdout(`Chatting with ${versionName(version)}. /help lists the commands.\n`);
    const rl = createInterface({ input: ctx.io.stdin, crlfDelay: Infinity, terminal: false });
    const prompt = () => tty && !ctx.json && ctx.io.stdout('you> ');
    const rate = async (value: RateInput['value'], correction?: string) => {
      if (last === null || last.turnId === null) throw new BadInputError(last === null ? 'nothing to rate yet: ask something first' : `the last answer was not stored (${last.note ?? ''})`, 'turn');
      const { rating, status } = await api.call('rate', { turnId: last.turnId, value, rater: 'cli', ...(correction === undefined ? {} : { correction }) });
      ctx.print(`Rated turn ${rating.turnId} ${correction !== undefined ? 'with a correction' : typeof value === 'number' ? `${value}/5` : value}. Pending ${status.pending} of ${status.threshold}.`, { rating });
    };
    prompt();
    for await (const raw of rl) {
      const line = raw.trim();
      try {
        if (line === '') {
          // Nothing typed: ask again.
        } else if (line === '/quit' || line === '/exit') {
          break;
        } else if (line === '/help') {
          ctx.io.stdout(CHAT_HELP);
        } else if (line === '/new') {
          history = [];
          session = `cli-${randomUUID()}`;
          last = null;
          ctx.print('New conversation.', { new: true });
        } else if (line === '/version' || line.startsWith('/version ')) {
          const arg = line.slice('/version'.length).trim();
          if (arg !== '') version = parseVersion(arg);
          ctx.print(`Answering with ${versionName(version)}.`, { version: version ?? null });
        } else if (line === '/system' || line.startsWith('/system ')) {
          const text = line.slice('/system'.length).trim();
          system = text === '' ? null : text;
          ctx.print(system === null ? 'No system prompt.' : 'System prompt set.', { system });
        } else if (line === '/good' || line === '/bad') {
          await rate(line.slice(1) as 'good' | 'bad');
        } else if (line.startsWith('/rate')) {
          const n = line.slice('/rate'.length).trim();
          if (!/^[1-5]$/.test(n)) throw new BadInputError(`/rate takes a whole number 1-5, not ${JSON.stringify(n)}`, 'value');
          await rate(Number(n));
        } else if (line.startsWith('/correct')) {
          const text = line.slice('/correct'.length).trim();
          if (text === '') throw new BadInputError('/correct needs the answer it should have given', 'correction');
          await rate('bad', text);
        } else if (line.startsWith('/')) {
          throw new BadInputError(`unknown command ${line.split(' ')[0]} (/help lists them)`, 'command');
        } else {
          const messages = [...(system === null ? [] : [{ role: 'system' as const, content: system }]), ...history, { role: 'user' as const, content: line }];
          const streamId = `cli-${randomUUID()}`;
          if (tty && !ctx.json) ctx.io.stdout(`${version === undefined ? 'model' : versionName(version)}> `);
          const answer = await streamed(api, ctx, streamId, () => api.call('chat', { messages, session, streamId, maxTokens, ...(version === undefined ? {} : { version }) }), (r) => r.text);
          last = answer;
          history.push({ role: 'user', content: line }, { role: 'assistant', content: answer.text });
          if (ctx.json) ctx.io.stdout(JSON.stringify(answer) + '\n');
          else ctx.io.stdout(`  (turn ${answer.turnId ?? '-'}, ${versionName(answer.version)}${answer.note ? `; ${answer.note}` : ''}: /good /bad /rate N)\n`);
        }
      } catch (e) {
        showError(ctx, e);
      }
      prompt();
    }
    rl.close();
    return 0;
  },
});

const VOTES: Record<string, 'a' | 'b' | 'tie' | 'bad'> = { a: 'a', b: 'b', tie: 'tie', t: 'tie', bad: 'bad', 'both bad': 'bad', n: 'bad' };

function reveal(m: ArenaMatchView): string {
  return `A was ${versionName(m.a.version)}, B was ${versionName(m.b.version)}.`;
}

registerCommand({
  name: 'arena',
  summary: 'Blind A/B: the same prompt to two versions; vote for the better answer',
  usage: 'rein arena [--versions A,B] [--system <text>] [--max-tokens N]',
  description:
    'Each line you type goes to two versions (default: the active one and its parent; base = 0), shown as A and B in random order. Then type a, b, tie or bad (both bad), or press Enter to skip. The vote is stored with both answers, each side is rated (winner good, loser bad), and the versions are revealed. Win rates: the Versions screen, or `rein arena --stats`.',
  options: {
    versions: { type: 'string', help: 'the two versions, e.g. 3,base (default: active,parent)' },
    system: { type: 'string', help: 'the system prompt' },
    'max-tokens': { type: 'string', help: 'the longest answer in tokens (default 512)' },
    stats: { type: 'boolean', help: 'print each version\'s win rates and Good-rate and exit' },
  },
  async run(ctx) {
    const api = await ctx.api();
    if (ctx.options.stats === true) {
      const stats = await api.call('versionStats', {});
      const pct = (x: { rate: number; ci: [number, number]; n: number }) => (x.n === 0 ? '-' : `${(x.rate * 100).toFixed(0)}% [${(x.ci[0] * 100).toFixed(0)}-${(x.ci[1] * 100).toFixed(0)}] of ${x.n}`);
      const lines = stats.map((s) =>
        `${s.version === 0 ? 'base' : `v${s.version}`} (${s.status})  vs parent: ${s.vsParent ? `${pct(s.vsParent.winRate)}, ${s.vsParent.votes} votes` : '-'}  vs base: ${s.vsBase ? `${pct(s.vsBase.winRate)}, ${s.vsBase.votes} votes` : '-'}  good-rate: ${pct(s.goodRate)}`,
      );
      ctx.print(lines.join('\n'), stats);
      return 0;
    }
    const v = stringOption(ctx.options, 'versions');
    let versions: [number, number] | undefined;
    if (v !== undefined) {
      const parts = v.split(',').map((p) => parseVersion(p));
      if (parts.length !== 2 || parts.some((p) => p === undefined)) throw new BadInputError('--versions takes two versions, e.g. 3,base', 'versions');
      versions = [parts[0]!, parts[1]!];
    }
    const system = stringOption(ctx.options, 'system');
    const maxTokens = intOption(ctx.options, 'max-tokens', 1, 8192) ?? 512;
    const tty = ctx.io.stdinIsTTY && !ctx.json;
    const rl = createInterface({ input: ctx.io.stdin, crlfDelay: Infinity, terminal: false });
    const lines = rl[Symbol.asyncIterator]();
    if (tty) ctx.io.stdout('Type a prompt (/quit to leave).\nprompt> ');
    for (;;) {
      const next = await lines.next();
      if (next.done === true) break;
      const line = next.value.trim();
      if (line === '/quit' || line === '/exit') break;
      if (line === '') continue;
      try {
        const streamId = `cli-${randomUUID()}`;
        let side: 'a' | 'b' | null = null;
        const off = await api.subscribe('chatToken', (e) => {
          if (ctx.json || !e.streamId.startsWith(streamId)) return;
          const s = e.streamId.endsWith(':a') ? 'a' : 'b';
          if (s !== side) ctx.io.stdout(`${side === null ? '' : '\n'}\n── ${s.toUpperCase()} ──\n`);
          side = s;
          ctx.io.stdout(e.text);
        });
        let m: ArenaMatchView;
        try {
          m = await api.call('arenaStart', { prompt: line, maxTokens, ...(system === undefined ? {} : { system }), ...(versions === undefined ? {} : { versions }) });
        } finally {
          off();
        }
        if (ctx.json) ctx.io.stdout(JSON.stringify(m) + '\n');
        else if (side !== 'b') ctx.io.stdout(`\n── A ──\n${m.a.text}\n── B ──\n${m.b.text}\n`);
        else ctx.io.stdout('\n');
        if (tty) ctx.io.stdout('vote a / b / tie / bad (Enter skips)> ');
        const answer = await lines.next();
        const word = answer.done === true ? '' : answer.value.trim().toLowerCase();
        if (word === '') {
          ctx.print('Skipped: no vote.', { skipped: m.id });
        } else {
          const vote = VOTES[word];
          if (vote === undefined) throw new BadInputError(`a vote is a, b, tie or bad, not ${JSON.stringify(word)} (the match is left unvoted)`, 'vote');
          const r = await api.call('arenaVote', { matchId: m.id, vote, rater: 'cli' });
          ctx.print(`Voted ${vote}. ${reveal(r.match)}`, r);
        }
      } catch (e) {
        showError(ctx, e);
      }
      if (tty) ctx.io.stdout('prompt> ');
    }
    rl.close();
    return 0;
  },
});
