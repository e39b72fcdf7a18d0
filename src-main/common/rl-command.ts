// The `/rl` chat command, typed in an agent's prompt box and answered by a hook or plugin without a model call:
//   /rl good | bad | 👍 | 👎 | 1..5 [comment]     rate the newest unrated turn of this session
//   /rl fix "<correction>" | /rl fix <rest>       rate it bad and give the text it should have been
//   /rl undo | status | help
//   /rl train | rollback [version] | reset confirm   admin commands (a plugin may refuse them per sender)
// Only a message that *starts* with `/rl` followed by a space or the end is ours; `/rlx`, `/status` and a
// sentence that mentions /rl are not (null), so they reach the agent untouched.

export type RlRateValue = 'good' | 'bad' | 1 | 2 | 3 | 4 | 5;

export type RlCommand =
  | { kind: 'rate'; value: RlRateValue; comment?: string }
  | { kind: 'fix'; correction: string }
  | { kind: 'undo' }
  | { kind: 'status' }
  | { kind: 'help' }
  | { kind: 'train' }
  | { kind: 'rollback'; version?: number }
  | { kind: 'reset' };

export type RlParse = { ok: true; command: RlCommand } | { ok: false; error: string };

export const RL_ADMIN_KINDS: ReadonlySet<RlCommand['kind']> = new Set(['train', 'rollback', 'reset']);

export const RL_USAGE = [
  'Usage: /rl good | bad | 1-5 [comment] · /rl fix "<what it should have said>" · /rl undo · /rl status',
  '       /rl train · /rl rollback [version] · /rl reset confirm',
].join('\n');

// 👍/👎 with an optional skin tone (U+1F3FB..U+1F3FF) and an optional emoji presentation selector (U+FE0F).
const THUMBS_UP = /^\u{1F44D}[\u{1F3FB}-\u{1F3FF}]?\u{FE0F}?$/u;
const THUMBS_DOWN = /^\u{1F44E}[\u{1F3FB}-\u{1F3FF}]?\u{FE0F}?$/u;

/**
 * Parse a whole prompt. Returns null when the text is not an `/rl` command, a usage error when it is one but
 * malformed, else the command.
 */
export function parseRl(text: string): RlParse | null {
  const m = /^\s*\/rl(?=\s|$)([\s\S]*)$/.exec(text);
  if (!m) return null;
  return parseRlArgs(m[1] ?? '');
}

/** Parse what follows `/rl` (Claude's UserPromptExpansion gives it as `command_args`, OpenClaw as `ctx.args`). */
export function parseRlArgs(args: string): RlParse {
  const rest = args.trim();
  if (rest === '') return usage('/rl needs a rating or a command.');
  const sp = /^(\S+)(?:\s+([\s\S]*))?$/.exec(rest);
  const word = sp?.[1] ?? '';
  const tail = (sp?.[2] ?? '').trim();
  const lower = word.toLowerCase();

  const rating = ratingOf(word);
  if (rating !== null) {
    return ok(tail === '' ? { kind: 'rate', value: rating } : { kind: 'rate', value: rating, comment: tail });
  }
  if (/^[+-]?\d+(?:\.\d+)?$/.test(word)) return usage(`a score is a whole number from 1 to 5, not ${word}.`);

  switch (lower) {
    case 'fix': {
      const correction = unquote(tail);
      if (correction === null) return usage('the correction has an opening quote but no closing one.');
      if (correction.trim() === '') return usage('/rl fix needs the text the answer should have been.');
      return ok({ kind: 'fix', correction });
    }
    case 'undo':
    case 'status':
    case 'help':
    case 'train':
      return tail === '' ? ok({ kind: lower as 'undo' | 'status' | 'help' | 'train' }) : usage(`/rl ${lower} takes no arguments (got "${tail}").`);
    case 'rollback': {
      if (tail === '') return ok({ kind: 'rollback' });
      if (!/^v?\d+$/i.test(tail)) return usage(`/rl rollback takes a version number (got "${tail}").`);
      return ok({ kind: 'rollback', version: Number(tail.replace(/^v/i, '')) });
    }
    case 'reset':
      if (tail.toLowerCase() === 'confirm') return ok({ kind: 'reset' });
      return usage('/rl reset deletes every rating, run and adapter of the active model; type "/rl reset confirm".');
    default:
      return usage(`unknown /rl command "${word}".`);
  }
}

function ratingOf(word: string): RlRateValue | null {
  const lower = word.toLowerCase();
  if (lower === 'good' || THUMBS_UP.test(word)) return 'good';
  if (lower === 'bad' || THUMBS_DOWN.test(word)) return 'bad';
  if (/^[1-5]$/.test(word)) return Number(word) as 1 | 2 | 3 | 4 | 5;
  return null;
}

/**
 * A quoted correction ("…", '…', or typographic “…”) loses its quotes, and inside double quotes \" and \\ are
 * unescaped; anything else is taken verbatim (code with backslashes stays as typed). Returns null for an opening
 * quote whose closing one is missing, rather than guessing where the text ends.
 */
function unquote(s: string): string | null {
  const pairs: [string, string][] = [['"', '"'], ["'", "'"], ['\u201C', '\u201D']];
  for (const [open, close] of pairs) {
    if (!s.startsWith(open)) continue;
    if (s.length < 2 || !s.endsWith(close) || (open === '"' && /(^|[^\\])(\\\\)*\\"$/.test(s.slice(1)))) return null;
    const inner = s.slice(open.length, s.length - close.length);
    return open === '"' ? inner.replace(/\\(["\\])/g, '$1') : inner;
  }
  return s;
}

function ok(command: RlCommand): RlParse {
  return { ok: true, command };
}

function usage(why: string): RlParse {
  return { ok: false, error: `${why}\n${RL_USAGE}` };
}
