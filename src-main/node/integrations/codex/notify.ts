// The agent-side half of Codex capture lives in hook-entry.mjs (plain JavaScript, so the process Codex starts per
// turn skips type stripping). This module gives the installer and tests its file locations in terms of a ReinHome.
import path from 'node:path';
import type { ReinHome } from '../../home.ts';
import * as entry from './hook-entry.mjs';

export const HOOK_ENTRY = path.join(import.meta.dirname, 'hook-entry.mjs');
export const SPOOL_MAX_BYTES = entry.SPOOL_MAX_BYTES;

export function chainPath(home: ReinHome): string {
  return entry.chainPath(home.dir);
}
export function spoolPath(home: ReinHome): string {
  return entry.spoolPath(home.dir);
}
/** The user's notify command from before Rein, or null. */
export function readChain(home: ReinHome): string[] | null {
  return entry.readChain(home.dir);
}
