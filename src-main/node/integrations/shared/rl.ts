// Runs a parsed `/rl` command against the core and words the one-line answer the agent shows in place of a model
// reply ("Rated 👍 · 12 pending · next training at 32"). Every number comes from the core's `status`.
import type { Actor } from '../../../common/api.ts';
import type { Status } from '../../../common/domain.ts';
import { ReinError } from '../../../common/errors.ts';
import { RL_ADMIN_KINDS, RL_USAGE } from '../../../common/rl-command.ts';
import type { RlCommand, RlParse, RlRateValue } from '../../../common/rl-command.ts';
import type { Core } from '../../core/types.ts';
import type { HookLog } from './log.ts';
import { RecentMap } from './text.ts';

export interface RlContext {
  /** The agent session whose newest unrated turn a rating goes to. */
  session?: string;
  /** A specific turn (OpenClaw maps a replied-to or reacted-to message to one). */
  turnId?: number;
  rater: string;
  actor: Actor;
  /** train / rollback / reset; false answers with a refusal and runs nothing. */
  allowAdmin: boolean;
}

export function ratingLabel(value: RlRateValue | 'good' | 'bad' | number): string {
  if (value === 'good') return '👍';
  if (value === 'bad') return '👎';
  return `${value}/5`;
}

export function progressLine(s: Status): string {
  const parts = [`${s.pending} pending`];
  if (s.training.state === 'running') parts.push('training now');
  else if (s.pending >= s.threshold) parts.push(`training due (threshold ${s.threshold})`);
  else parts.push(`next training at ${s.threshold}`);
  return parts.join(' · ');
}

export function statusLine(s: Status): string {
  const r = s.ratings;
  const adapter = s.activeAdapter ? `adapter v${s.activeAdapter.version}` : 'base model (no adapter yet)';
  return [
    'Rein',
    progressLine(s),
    `${r.total} ratings (${r.good} 👍 · ${r.bad} 👎 · ${r.scaled} scored)`,
    `${s.turns.unrated} unrated turns`,
    adapter,
  ].join(' · ');
}

/** Execute the command and return the reply text. Never throws: failures become a reply and a log line. */
export async function runRl(core: Core, parsed: RlParse, ctx: RlContext, log: HookLog): Promise<string> {
  if (!parsed.ok) return parsed.error;
  const cmd = parsed.command;
  if (RL_ADMIN_KINDS.has(cmd.kind) && !ctx.allowAdmin) {
    log('warn', 'refused an /rl admin command', { kind: cmd.kind, rater: ctx.rater });
    return `/rl ${cmd.kind} is not allowed for ${ctx.rater} here: the owner has to allowlist admin commands.`;
  }
  try {
    return await execute(core, cmd, ctx);
  } catch (e) {
    if (e instanceof ReinError) {
      if (e.code === 'not_found' && (cmd.kind === 'rate' || cmd.kind === 'fix')) {
        return `Nothing to rate${ctx.session ? ' in this session' : ''} yet: every captured turn is rated or expired.`;
      }
      log('warn', `/rl ${cmd.kind} failed`, { code: e.code, message: e.message });
      return `Rein: ${e.message}`;
    }
    log('error', `/rl ${cmd.kind} failed`, { message: (e as Error).message });
    return `Rein could not do that: ${(e as Error).message}`;
  }
}

async function execute(core: Core, cmd: RlCommand, ctx: RlContext): Promise<string> {
  const target = { ...(ctx.turnId !== undefined ? { turnId: ctx.turnId } : {}), ...(ctx.session ? { session: ctx.session } : {}) };
  switch (cmd.kind) {
    case 'rate': {
      const r = await core.call(
        'rate',
        { ...target, value: cmd.value, rater: ctx.rater, ...(cmd.comment ? { comment: cmd.comment } : {}) },
        ctx.actor,
      );
      return `Rated ${ratingLabel(cmd.value)} · ${progressLine(r.status)}`;
    }
    case 'fix': {
      // docs/learning.md: a correction makes the corrected text a desirable example and the original an undesirable one.
      const r = await core.call('rate', { ...target, value: 'bad', correction: cmd.correction, rater: ctx.rater }, ctx.actor);
      return `Saved your correction (👎 + fix) · ${progressLine(r.status)}`;
    }
    case 'undo': {
      const r = await core.call('undo', ctx.session ? { session: ctx.session } : {}, ctx.actor);
      if (r.undone === null) return `Nothing to undo · ${progressLine(r.status)}`;
      const label = r.undone.kind === 'scale' ? `${r.undone.scale}/5` : ratingLabel(r.undone.kind);
      return `Undid ${label} · ${progressLine(r.status)}`;
    }
    case 'status':
      return statusLine(await core.call('status', {}, ctx.actor));
    case 'help':
      return RL_USAGE;
    case 'train': {
      const r = await core.call('startTraining', {}, ctx.actor);
      return `Training started (run ${r.runId})`;
    }
    case 'rollback': {
      const r = await core.call('rollback', cmd.version === undefined ? {} : { version: cmd.version }, ctx.actor);
      return r.active ? `Rolled back to adapter v${r.active.version}` : 'Rolled back to the base model';
    }
    case 'reset': {
      const r = await core.call('reset', { confirm: true }, ctx.actor);
      return `Reset: deleted ${r.ratings} ratings, ${r.runs} runs and ${r.adapters} adapters`;
    }
  }
}

/** The most sessions remembered per working directory for the one-shot fallback. */
const SESSIONS_PER_CWD = 20;

/**
 * Where a rating typed as `/rl …` goes. Normally the newest unrated turn of the session it was typed in. But a
 * one-shot run (`claude -p "/rl good"` after `claude -p "…"`, `codex exec "/rl bad"` after `codex exec "…"`) is a
 * new session with nothing in it (verified with Claude Code 2.1 and Codex 0.169 in e2e/agents): then the rating
 * goes to the newest unrated turn captured in the same working directory. A Stop or notify hook names that turn
 * itself. On the local model no such hook runs: the proxy (`rein serve-model`, another process) stores the turn
 * under the agent's session id, and the prompt hook, which still runs, is what tells the directory of that session.
 */
export class RlTargets {
  private readonly sessionsWithTurns: RecentMap<true>;
  private readonly newestByCwd: RecentMap<number>;
  private readonly sessionsByCwd: RecentMap<string[]>;
  constructor(now?: () => number) {
    this.sessionsWithTurns = new RecentMap<true>(2_000, 6 * 3600_000, now);
    this.newestByCwd = new RecentMap<number>(2_000, 6 * 3600_000, now);
    this.sessionsByCwd = new RecentMap<string[]>(2_000, 6 * 3600_000, now);
  }
  captured(session: string, cwd: string | undefined, turnId: number): void {
    this.sessionsWithTurns.set(session, true);
    if (cwd !== undefined && cwd !== '') this.newestByCwd.set(cwd, turnId);
  }
  /** A prompt (not an `/rl`) was typed in `session`, running in `cwd`. */
  prompted(session: string, cwd: string | undefined): void {
    if (cwd === undefined || cwd === '') return;
    const seen = (this.sessionsByCwd.get(cwd) ?? []).filter((s) => s !== session);
    this.sessionsByCwd.set(cwd, [...seen, session].slice(-SESSIONS_PER_CWD));
  }
  async target(core: Core, session: string, cwd: string | undefined, parsed: RlParse): Promise<{ session: string } | { turnId: number }> {
    const rates = parsed.ok && (parsed.command.kind === 'rate' || parsed.command.kind === 'fix');
    if (!rates || cwd === undefined || this.sessionsWithTurns.get(session) !== undefined) return { session };
    const turnId = this.newestByCwd.get(cwd);
    if (turnId !== undefined) {
      const turn = await core.call('getTurn', { turnId }, 'hook').catch(() => null);
      if (turn !== null && turn.state === 'unrated') return { turnId };
    }
    // Turns the proxy stored: the session's own first, else the newest of the directory's other sessions.
    if ((await newestUnrated(core, session)) !== null) return { session };
    let best: number | null = null;
    for (const other of this.sessionsByCwd.get(cwd) ?? []) {
      if (other === session) continue;
      const id = await newestUnrated(core, other);
      if (id !== null && (best === null || id > best)) best = id;
    }
    return best === null ? { session } : { turnId: best };
  }
}

async function newestUnrated(core: Core, session: string): Promise<number | null> {
  const page = await core.call('listTurns', { session, state: 'unrated', limit: 1 }, 'hook').catch(() => null);
  return page?.items[0]?.id ?? null;
}
