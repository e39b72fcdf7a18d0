// `POST /hooks/openclaw`: what the OpenClaw plugin (resources/openclaw-plugin) sends. The plugin pairs a chat's
// message with the agent's reply and decides who may rate (it knows the chat); the core side parses `/rl`, runs
// it and words the answer, with one parser for every agent.
import { OPENCLAW_SOURCE } from '../../../common/sources.ts';
import { z } from 'zod';
import { parseRlArgs } from '../../../common/rl-command.ts';
import type { Core } from '../../core/types.ts';
import type { HookLog } from '../shared/log.ts';
import { ratingLabel, progressLine, runRl } from '../shared/rl.ts';

const key = z.string().min(1).max(512);
export const OpenClawPost = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('turn'),
    sessionKey: key,
    runId: key,
    prompt: z.string().min(1),
    response: z.string().min(1),
    channel: z.string().max(64).optional(),
    senderId: z.string().max(256).optional(),
    model: z.string().max(256).optional(),
  }),
  z.strictObject({
    kind: z.literal('command'),
    sessionKey: key,
    args: z.string().max(1_000_000),
    rater: z.string().min(1).max(128),
    /** The turn the plugin resolved for this sender (their newest); absent = newest unrated of the session. */
    turnId: z.number().int().positive().optional(),
    adminAllowed: z.boolean(),
  }),
  z.strictObject({
    kind: z.literal('rate'),
    turnId: z.number().int().positive(),
    value: z.union([z.literal('good'), z.literal('bad')]),
    rater: z.string().min(1).max(128),
  }),
]);
export type OpenClawPost = z.infer<typeof OpenClawPost>;

export function createOpenClawHooks(core: Core, opts: { log: HookLog }) {
  const log = opts.log;
  return {
    async handle(body: unknown): Promise<Record<string, unknown>> {
      const parsed = OpenClawPost.safeParse(body);
      if (!parsed.success) {
        const i = parsed.error.issues[0];
        log('warn', 'ignored an OpenClaw post that does not match its schema', { issue: `${i?.path.join('.')}: ${i?.message}` });
        return { ok: false, error: 'bad_input' };
      }
      const p = parsed.data;
      try {
        if (p.kind === 'turn') {
          const r = await core.call(
            'captureTurn',
            {
              source: OPENCLAW_SOURCE,
              session: p.sessionKey,
              eventId: `${p.sessionKey}:${p.runId}`,
              prompt: p.prompt,
              response: p.response,
              ...(p.model ? { model: p.model } : {}),
            },
            'plugin',
          );
          // Spooled (the database was busy): stored once it is free, with no id yet.
          return r.turn === null ? { ok: true, turnId: null, created: false, spooled: true } : { ok: true, turnId: r.turn.id, created: r.created };
        }
        if (p.kind === 'command') {
          const text = await runRl(
            core,
            parseRlArgs(p.args),
            { ...(p.turnId !== undefined ? { turnId: p.turnId } : { session: p.sessionKey }), rater: p.rater, actor: 'plugin', allowAdmin: p.adminAllowed },
            log,
          );
          return { ok: true, text };
        }
        const r = await core.call('rate', { turnId: p.turnId, value: p.value, rater: p.rater }, 'plugin');
        return { ok: true, text: `Rated ${ratingLabel(p.value)} · ${progressLine(r.status)}` };
      } catch (e) {
        log('error', 'OpenClaw post failed', { kind: p.kind, message: (e as Error).message });
        return { ok: false, error: (e as Error).message };
      }
    },
  };
}
