// Which capture failures a hook may still answer 2xx (issue #21 item 4). A hook's 2xx tells the agent, and the Codex
// hook's own spool (codex/hook-entry.mjs), that the turn needs no retry, so it is never sent for a turn that was
// not stored, except when a retry could not store it either.
import { ReinError } from '../../../common/errors.ts';

/**
 * The core refused the turn for good: capture is paused or the agent is not in capture.agents (the user's choice,
 * which a later retry must not override), or the turn is invalid. Anything else (the database busy past the spool,
 * a disk error) is answered non-2xx.
 */
export function refusedForGood(e: unknown): boolean {
  return e instanceof ReinError && (e.code === 'conflict' || e.code === 'bad_input');
}
