// `POST /hooks/codex`: what the `rein hook codex-notify` and `rein hook codex-hook` processes forward.
// - notify (docs/config.md "notify"): kebab-case `agent-turn-complete` with `thread-id`, `turn-id`,
//   `input-messages` (string[]; the prompt is the last one) and `last-assistant-message` (nullable).
// - hooks.json (codex-rs/hooks): Stop (`session_id`, `turn_id`, `last_assistant_message`) and
//   UserPromptSubmit (`prompt`, `turn_id`). Stop and notify of one turn share thread/turn ids, so they make one turn.
// The answer is a JSON object: `{}` to go on, or a block decision for `/rl`. A turn that was not stored is never
// answered 2xx: its error is raised, the server answers non-2xx, and the hook entry spools the post and sends it
// again (codex/hook-entry.mjs; issue #21 item 4).
import { CODEX_SOURCE } from '../../../common/sources.ts';
import { z } from 'zod';
import { parseRl } from '../../../common/rl-command.ts';
import type { Core } from '../../core/types.ts';
import type { HookLog } from '../shared/log.ts';
import { refusedForGood } from '../shared/capture.ts';
import { RlTargets, runRl } from '../shared/rl.ts';
import { RecentMap } from '../shared/text.ts';

export const NotifyPayload = z.looseObject({
  type: z.literal('agent-turn-complete'),
  'thread-id': z.string().min(1).max(512),
  'turn-id': z.string().min(1).max(512),
  cwd: z.string().max(4096).optional(),
  client: z.string().max(256).optional(),
  'input-messages': z.array(z.string()).max(10_000),
  'last-assistant-message': z.string().nullable().optional(),
});
const HookCommon = {
  session_id: z.string().min(1).max(512),
  turn_id: z.string().min(1).max(512).optional(),
  transcript_path: z.string().max(4096).nullable().optional(),
  cwd: z.string().max(4096).optional(),
  model: z.string().max(256).optional(),
};
const StopPayload = z.looseObject({ ...HookCommon, hook_event_name: z.literal('Stop'), last_assistant_message: z.string().nullable().optional() });
const PromptPayload = z.looseObject({ ...HookCommon, hook_event_name: z.literal('UserPromptSubmit'), prompt: z.string() });
export const CodexHookPayload = z.discriminatedUnion('hook_event_name', [StopPayload, PromptPayload]);

export interface CodexHooks {
  handle(body: unknown): Promise<Record<string, unknown>>;
}

export function eventIdOf(thread: string, turn: string): string {
  return `${thread}:${turn}`;
}

export function createCodexHooks(core: Core, opts: { log: HookLog; now?: () => number }): CodexHooks {
  const log = opts.log;
  const prompts = new RecentMap<string>(2_000, 6 * 3600_000, opts.now);
  const targets = new RlTargets(opts.now);

  async function store(thread: string, turn: string, prompt: string, response: string, model: string | undefined, cwd: string | undefined, via: string) {
    const r = await core.call(
      'captureTurn',
      { source: CODEX_SOURCE, session: thread, eventId: eventIdOf(thread, turn), prompt, response, ...(model ? { model } : {}) },
      'hook',
    );
    if (r.turn === null) {
      log('info', `the database is busy: the Codex turn is spooled and stored once it is free (${via})`, { thread, turn });
      return;
    }
    targets.captured(thread, cwd, r.turn.id);
    log('info', r.created ? `captured a Codex turn (${via})` : `Codex turn already captured (${via})`, { turnId: r.turn.id });
  }

  return {
    async handle(body) {
      let capturing = false;
      try {
        const n = NotifyPayload.safeParse(body);
        if (n.success) {
          const p = n.data;
          const prompt = p['input-messages'].at(-1);
          const response = p['last-assistant-message'];
          // Never a placeholder: a turn without its prompt or answer is not a turn to rate.
          if (prompt === undefined || prompt.trim() === '' || !response) {
            log('info', 'Codex notify without a prompt or an answer: not captured', { thread: p['thread-id'] });
            return {};
          }
          // A `/rl` typed in Codex is blocked by the prompt hook; one that got through is not a turn either.
          if (parseRl(prompt) !== null) return {};
          capturing = true;
          await store(p['thread-id'], p['turn-id'], prompt, response, undefined, p.cwd, 'notify');
          return {};
        }
        const h = CodexHookPayload.safeParse(body);
        if (!h.success) {
          log('warn', 'ignored a Codex post that is neither a notify payload nor a hook event', {
            issue: `${h.error.issues[0]?.path.join('.')}: ${h.error.issues[0]?.message}`,
          });
          return {};
        }
        const p = h.data;
        if (p.hook_event_name === 'UserPromptSubmit') {
          const cmd = parseRl(p.prompt);
          if (cmd !== null) {
            const target = await targets.target(core, p.session_id, p.cwd, cmd);
            const reason = await runRl(core, cmd, { ...target, rater: 'codex /rl', actor: 'hook', allowAdmin: true }, log);
            return { decision: 'block', reason };
          }
          targets.prompted(p.session_id, p.cwd);
          if (p.turn_id !== undefined) prompts.set(`${p.session_id}\0${p.turn_id}`, p.prompt);
          return {};
        }
        const prompt = p.turn_id === undefined ? undefined : prompts.get(`${p.session_id}\0${p.turn_id}`);
        if (p.turn_id === undefined || prompt === undefined || !p.last_assistant_message) {
          // notify carries the prompt for this turn; it will store it.
          log('info', 'Codex Stop without a known prompt: left to notify', { session: p.session_id });
          return {};
        }
        capturing = true;
        await store(p.session_id, p.turn_id, prompt, p.last_assistant_message, p.model, p.cwd, 'Stop hook');
        return {};
      } catch (e) {
        log('error', 'Codex hook failed', { message: (e as Error).message });
        // Never acknowledge a turn that was not stored; an `/rl` still answers 2xx, its failure is in its reason.
        if (capturing && !refusedForGood(e)) throw e;
        return {};
      }
    },
  };
}
