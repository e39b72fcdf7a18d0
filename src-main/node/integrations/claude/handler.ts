// The Claude Code `type:"http"` hooks (shared/SPECS.md, notes/REAL_CLIENTS.md). Stop and SubagentStop capture a
// turn; UserPromptSubmit and UserPromptExpansion answer `/rl …` with a block decision so no model request is made.
// The reply is a 2xx JSON object (`{}` lets Claude go on) except for a turn that was not stored: that error is raised,
// and the server answers non-2xx, which Claude Code reports as a non-blocking hook error (issue #21 item 4).
import { CLAUDE_SOURCE } from '../../../common/sources.ts';
import { z } from 'zod';
import type { ContextMessage } from '../../../common/domain.ts';
import { parseRl, parseRlArgs } from '../../../common/rl-command.ts';
import type { RlParse } from '../../../common/rl-command.ts';
import type { Core } from '../../core/types.ts';
import type { HookLog } from '../shared/log.ts';
import { refusedForGood } from '../shared/capture.ts';
import { RlTargets, runRl } from '../shared/rl.ts';
import { RecentMap, stableHash } from '../shared/text.ts';
import { interruptedTurn, parseTranscriptTurn, readTranscriptLines } from './transcript.ts';
import type { TranscriptTurn } from './transcript.ts';

const Common = {
  session_id: z.string().min(1).max(512),
  transcript_path: z.string().max(4096).optional(),
  cwd: z.string().max(4096).optional(),
  prompt_id: z.string().min(1).max(512).optional(),
  agent_id: z.string().min(1).max(512).optional(),
};

const StopPayload = z.looseObject({
  ...Common,
  hook_event_name: z.literal('Stop'),
  last_assistant_message: z.string().nullable().optional(),
  stop_hook_active: z.boolean().optional(),
});
const SubagentStopPayload = z.looseObject({
  ...Common,
  hook_event_name: z.literal('SubagentStop'),
  agent_transcript_path: z.string().max(4096).optional(),
  agent_type: z.string().max(256).optional(),
  last_assistant_message: z.string().nullable().optional(),
});
const PromptPayload = z.looseObject({ ...Common, hook_event_name: z.literal('UserPromptSubmit'), prompt: z.string() });
const ExpansionPayload = z.looseObject({
  ...Common,
  hook_event_name: z.literal('UserPromptExpansion'),
  command_name: z.string().max(256).optional(),
  command_args: z.string().optional(),
  prompt: z.string().optional(),
});
export const ClaudeHookPayload = z.discriminatedUnion('hook_event_name', [
  StopPayload,
  SubagentStopPayload,
  PromptPayload,
  ExpansionPayload,
]);

export type HookAnswer = Record<string, unknown>;

export interface ClaudeHooksOptions {
  log: HookLog;
  /** Reads a transcript's lines; tests pass fixtures through the real reader. */
  readTranscript?: (file: string) => string[];
  now?: () => number;
  /**
   * How long Stop waits for the transcript to catch up with the hook (default 500 ms). Claude Code appends its
   * transcript asynchronously, so at Stop the last lines (the turn's tool calls, its answer) may not be on disk yet;
   * the wait ends as soon as the transcript's last answer is the hook's `last_assistant_message`.
   */
  transcriptWaitMs?: number;
}

export interface ClaudeHooks {
  handle(body: unknown): Promise<HookAnswer>;
}

export function createClaudeHooks(core: Core, opts: ClaudeHooksOptions): ClaudeHooks {
  const log = opts.log;
  const readTranscript = opts.readTranscript ?? readTranscriptLines;
  const now = opts.now ?? Date.now;
  const transcriptWaitMs = opts.transcriptWaitMs ?? 500;
  // prompt_id (or session) → the human prompt seen by UserPromptSubmit, for the Stop that follows.
  const prompts = new RecentMap<string>(2_000, 6 * 3600_000, now);
  // An `/rl` is seen by UserPromptExpansion and then UserPromptSubmit; the second gets the first's answer.
  // Keyed by prompt_id when the client sends one; otherwise by the text for a few seconds only, so typing the
  // same `/rl good` again a minute later rates the next turn.
  const rlById = new RecentMap<Promise<string>>(500, 120_000, now);
  const rlByText = new RecentMap<Promise<string>>(500, 5_000, now);
  const targets = new RlTargets(now);

  function rl(session: string, promptId: string | undefined, text: string, parsed: RlParse, cwd: string | undefined): Promise<HookAnswer> {
    const seen = promptId === undefined ? rlByText : rlById;
    const key = promptId === undefined ? `${session}\0${text.trim()}` : `${session}\0${promptId}`;
    let reply = seen.get(key);
    if (reply === undefined) {
      reply = targets.target(core, session, cwd, parsed).then((target) => runRl(core, parsed, { ...target, rater: 'claude-code /rl', actor: 'hook', allowAdmin: true }, log));
      seen.set(key, reply);
    }
    return reply.then((reason) => ({ decision: 'block', reason }));
  }

  function transcriptTurn(file: string | undefined, subagent: boolean): TranscriptTurn | null {
    if (file === undefined || file === '') return null;
    try {
      return parseTranscriptTurn(readTranscript(file), { subagent });
    } catch (e) {
      log('warn', 'could not read the Claude transcript', { file, message: (e as Error).message });
      return null;
    }
  }

  async function capture(p: z.infer<typeof StopPayload> | z.infer<typeof SubagentStopPayload>): Promise<HookAnswer> {
    const subagent = p.hook_event_name === 'SubagentStop';
    const file = subagent ? ((p as z.infer<typeof SubagentStopPayload>).agent_transcript_path ?? p.transcript_path) : p.transcript_path;
    let fromTranscript = transcriptTurn(file, subagent);
    const want = p.last_assistant_message?.trim();
    if (want && fromTranscript !== null && fromTranscript.answer?.trim() !== want) {
      const until = Date.now() + transcriptWaitMs;
      while (Date.now() < until && fromTranscript?.answer?.trim() !== want) {
        await new Promise((r) => setTimeout(r, 20));
        fromTranscript = transcriptTurn(file, subagent) ?? fromTranscript;
      }
      if (fromTranscript?.answer?.trim() !== want) log('info', 'the Claude transcript had not caught up with Stop; the turn keeps the context it had', { waitedMs: transcriptWaitMs });
    }
    const remembered = subagent ? undefined : prompts.get(promptKey(p.session_id, p.prompt_id));
    const prompt = remembered ?? fromTranscript?.prompt ?? null;
    const response = p.last_assistant_message ?? fromTranscript?.answer ?? null;
    if (prompt === null || prompt.trim() === '') {
      log('warn', 'Claude turn not captured: no prompt in the hook state or the transcript', { event: p.hook_event_name, session: p.session_id });
      return {};
    }
    if (response === null || response.trim() === '') {
      log('info', 'Claude turn not captured: the turn has no assistant text', { event: p.hook_event_name, session: p.session_id });
      return {};
    }
    // Stop may be retried (and fires again after a stop-hook continuation): one prompt → one turn.
    const id = subagent
      ? `agent:${p.agent_id ?? stableHash(prompt, response)}`
      : (p.prompt_id ?? `h:${stableHash(prompt, response)}`);
    const context: ContextMessage[] = fromTranscript?.context ?? [];
    // The cwd lets the core watch the files this turn's edits changed, for a revert (core/edit-watch.ts); a subagent's
    // edits answer its parent agent, not the user.
    const cwd = !subagent && p.cwd !== undefined && p.cwd !== '' ? { cwd: p.cwd } : {};
    const r = await core.call(
      'captureTurn',
      { source: CLAUDE_SOURCE, session: p.session_id, eventId: `${p.session_id}:${id}`, prompt, response, ...(context.length ? { context } : {}), ...cwd },
      'hook',
    );
    if (r.turn === null) {
      log('info', 'the database is busy: the Claude Code turn is spooled and stored once it is free', { event: p.hook_event_name, session: p.session_id });
      return {};
    }
    if (!subagent) targets.captured(p.session_id, p.cwd, r.turn.id);
    log('info', r.created ? 'captured a Claude Code turn' : 'Claude Code turn already captured', { turnId: r.turn.id, event: p.hook_event_name });
    return {};
  }

  /**
   * The turn before this prompt, when the user interrupted it (Esc): Claude Code runs no Stop for it, and its transcript
   * then ends with the interrupt mark. Stored with the mark as the client's report of the interrupt (core/signals.ts),
   * so the answer the user cut off can be rated and read as a weak label. Never blocks the prompt.
   */
  async function captureInterrupted(session: string, file: string | undefined, current: string): Promise<void> {
    if (file === undefined || file === '') return;
    let cut: ReturnType<typeof interruptedTurn>;
    try {
      cut = interruptedTurn(readTranscript(file), current);
    } catch (e) {
      // At the first prompt of a session Claude Code has not written its transcript yet (2.1.330 creates it after
      // UserPromptSubmit): no earlier turn, so nothing was interrupted, and nothing to warn about.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
      log('warn', 'could not read the Claude transcript for an interrupted turn', { file, message: (e as Error).message });
      return;
    }
    if (cut === null) return;
    try {
      const r = await core.call(
        'captureTurn',
        {
          source: CLAUDE_SOURCE,
          session,
          eventId: `${session}:interrupted:${stableHash(cut.prompt!, cut.answer!)}`,
          prompt: cut.prompt!,
          response: cut.answer!,
          interrupted: cut.mark,
          ...(cut.context.length ? { context: cut.context } : {}),
        },
        'hook',
      );
      if (r.created) log('info', 'captured a Claude Code turn the user interrupted', { turnId: r.turn?.id ?? null });
    } catch (e) {
      log('warn', 'the interrupted Claude Code turn was not stored', { session, message: (e as Error).message });
    }
  }

  /**
   * A new prompt: the files the session's last turn edited are checked for a revert now, while only the user can have
   * touched them (core/edit-watch.ts). Never blocks the prompt.
   */
  async function checkReverts(session: string): Promise<void> {
    try {
      const r = await core.call('sessionPrompted', { source: CLAUDE_SOURCE, session }, 'hook');
      if (r.reverts > 0) log('info', 'the user reverted an edit of the previous Claude Code turn', { reverts: r.reverts });
    } catch (e) {
      log('warn', 'could not check the previous turn\'s edits for a revert', { session, message: (e as Error).message });
    }
  }

  return {
    async handle(body) {
      const parsed = ClaudeHookPayload.safeParse(body);
      if (!parsed.success) {
        const ev = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).hook_event_name : undefined;
        log('warn', 'ignored a Claude hook post that does not match its schema', {
          event: typeof ev === 'string' ? ev.slice(0, 64) : null,
          issue: parsed.error.issues[0] ? `${parsed.error.issues[0].path.join('.')}: ${parsed.error.issues[0].message}` : 'invalid',
        });
        return {};
      }
      const p = parsed.data;
      try {
        switch (p.hook_event_name) {
          case 'UserPromptSubmit': {
            const cmd = parseRl(p.prompt);
            if (cmd !== null) return await rl(p.session_id, p.prompt_id, p.prompt, cmd, p.cwd);
            targets.prompted(p.session_id, p.cwd);
            await captureInterrupted(p.session_id, p.transcript_path, p.prompt);
            await checkReverts(p.session_id);
            prompts.set(promptKey(p.session_id, p.prompt_id), p.prompt);
            if (p.prompt_id !== undefined) prompts.set(promptKey(p.session_id, undefined), p.prompt);
            return {};
          }
          case 'UserPromptExpansion': {
            if (p.command_name !== 'rl') return {};
            const cmd = p.prompt !== undefined ? (parseRl(p.prompt) ?? parseRlArgs(p.command_args ?? '')) : parseRlArgs(p.command_args ?? '');
            const text = p.prompt ?? `/rl ${p.command_args ?? ''}`.trim();
            return await rl(p.session_id, p.prompt_id, text, cmd, p.cwd);
          }
          case 'Stop':
          case 'SubagentStop':
            return await capture(p);
        }
      } catch (e) {
        log('error', 'Claude hook failed', { event: p.hook_event_name, message: (e as Error).message });
        // Never acknowledge a turn that was not stored. An `/rl` still answers 2xx: its failure is in its reason.
        const capturing = p.hook_event_name === 'Stop' || p.hook_event_name === 'SubagentStop';
        if (capturing && !refusedForGood(e)) throw e;
        return {};
      }
    },
  };
}

function promptKey(session: string, promptId: string | undefined): string {
  // Without prompt_id (older clients) the newest prompt of the session is the one its Stop belongs to.
  return promptId === undefined ? `s:${session}` : `p:${session}:${promptId}`;
}
