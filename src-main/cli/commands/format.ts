// Human-readable output of the CLI. `--json` prints the verbs' own results instead.
import type { RatingView, Status, TurnSummary } from '../../common/domain.ts';
import { BadInputError } from '../../common/errors.ts';
import { PARKED_ADVICE, ratingRoundText } from '../../common/training/rounds.ts';
import type { Settings } from '../../common/config.ts';
import { restartNeeded } from '../../node/serving/serve-model-info.ts';
import type { CommandContext, OptionValues } from '../dispatch.ts';

export function intOption(options: OptionValues, name: string, min: number, max: number): number | undefined {
  const v = options[name];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || !/^-?\d+$/.test(v.trim()) || n < min || n > max) {
    throw new BadInputError(`--${name} must be a whole number from ${min} to ${max}, not ${JSON.stringify(v)}`, name);
  }
  return n;
}

export function stringOption(options: OptionValues, name: string): string | undefined {
  const v = options[name];
  return typeof v === 'string' ? v : undefined;
}

export function signed(x: number): string {
  return (x > 0 ? '+' : '') + (Number.isInteger(x) ? String(x) : x.toFixed(2));
}

export function when(ms: number, now = Date.now()): string {
  const s = Math.round((now - ms) / 1000);
  if (s < 60) return `${Math.max(s, 0)}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  if (s < 86_400) return `${Math.round(s / 3600)}h ago`;
  return new Date(ms).toISOString().slice(0, 10);
}

export function oneLine(text: string, width: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > width ? flat.slice(0, width - 1) + '…' : flat;
}

export function ratingLabel(r: RatingView): string {
  return r.kind === 'scale' ? `${r.scale}/5` : r.kind;
}

export function formatRating(r: RatingView): string {
  const extra = [r.tags.length ? `tags ${r.tags.join(',')}` : '', r.comment ? `"${oneLine(r.comment, 40)}"` : '', r.correction ? 'with correction' : '']
    .filter(Boolean)
    .join(', ');
  return `#${r.id}  turn ${r.turnId}  ${ratingLabel(r).padEnd(5)} ${signed(r.value).padStart(5)}  ${when(r.createdAt).padEnd(8)}${
    r.undone ? ' (undone)' : ''
  }  ${ratingRoundText(r)}${extra ? `  ${extra}` : ''}`;
}

export function formatTurn(t: TurnSummary): string {
  const rating = t.rating ? ratingLabel(t.rating) : t.state;
  return `#${t.id}  ${rating.padEnd(8)} ${t.source.padEnd(12)} ${when(t.createdAt).padEnd(8)} ${oneLine(t.promptPreview, 60)}`;
}

/** One `rein status` line: the label padded to the widest one ("reward baseline"), then the value. */
export function statusRow(label: string, value: string): string {
  return `${label.padEnd(16)}${value}`;
}

export function formatStatus(s: Status): string {
  const lines = [
    `Rein ${s.version}  home ${s.home}`,
    statusRow('model', s.model.configured ? s.model.id : `${s.model.id || 'none'} (not configured)`),
    statusRow('adapter', s.activeAdapter ? `v${s.activeAdapter.version} since ${when(s.activeAdapter.createdAt)}` : 'base model (no adapter)'),
    statusRow('ratings', `${s.ratings.total} (good ${s.ratings.good}, bad ${s.ratings.bad}, scaled ${s.ratings.scaled})`),
    statusRow('pending', `${s.pending} of ${s.threshold} to the next training round`),
    ...(s.parked > 0 ? [statusRow('parked', `${s.parked} rating${s.parked === 1 ? '' : 's'} the rounds cannot encode, not counted as pending (\`rein ratings\` says why). ${PARKED_ADVICE}`)] : []),
    ...(s.rejected !== null ? [statusRow('rejected', `round ${s.rejected.runId} was rejected by the gate: its ${s.rejected.pending} ratings are pending again (not trained)`)] : []),
    // The running EMA of rewards; a round's advantages are against the mean of its other ratings (common/rewards.ts).
    statusRow(
      'reward baseline',
      s.ema ? `${s.ema.value >= 0 ? '+' : ''}${s.ema.value.toFixed(3)} (running EMA of ${s.ema.count} rewards; a round compares each rating with the mean of its other ratings)` : 'none yet (0 until the first rating)',
    ),
    statusRow('turns', `${s.turns.total} (${s.turns.unrated} unrated)${s.capture.paused ? '  capture PAUSED' : ''}`),
    statusRow('training', `${s.training.state}${s.training.runId !== null ? ` (run ${s.training.runId})` : ''}`),
  ];
  return lines.join('\n');
}

/** After a settings change: says on stderr when a running `rein serve-model` serves with the old values. */
export function restartNotice(ctx: CommandContext, settings: Settings): void {
  const line = restartNeeded(ctx.home, settings);
  if (line !== null) ctx.io.stderr(`note: ${line}\n`);
}
