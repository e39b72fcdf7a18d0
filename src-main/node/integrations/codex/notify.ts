// The agent-side half of Codex capture, run as `rein hook codex-notify '<json>'` (Codex appends the JSON as the
// last argv, with stdio nulled, fire-and-forget: openai/codex docs/config.md "notify"). It must exit fast and
// never lose the user's own notify: the previous command (saved by the installer) is started first with the same
// argument, then the payload is posted to the capture server with a short timeout; when Rein is down it goes
// to a small spool file and is delivered, once, by the next notify that gets through.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { ReinHome } from '../../home.ts';
import { isRecord } from '../shared/text.ts';

export const SPOOL_MAX_BYTES = 2 * 1024 * 1024;
export const POST_TIMEOUT_MS = 800;

export function chainPath(home: ReinHome): string {
  return path.join(home.dir, 'codex-notify-chain.json');
}
export function spoolPath(home: ReinHome): string {
  return path.join(home.dir, 'spool', 'codex.jsonl');
}

/** The user's notify command from before Rein, or null. */
export function readChain(home: ReinHome): string[] | null {
  try {
    const v: unknown = JSON.parse(readFileSync(chainPath(home), 'utf8'));
    if (isRecord(v) && Array.isArray(v.previous) && v.previous.length > 0 && v.previous.every((x) => typeof x === 'string')) {
      return v.previous as string[];
    }
  } catch {
    // none saved
  }
  return null;
}

/** Start the previous notify with the same argument, detached; we do not wait for it. */
export function chainPrevious(previous: string[] | null, arg: string): boolean {
  if (previous === null) return false;
  const [cmd, ...args] = previous;
  const child = spawn(cmd!, [...args, arg], { detached: true, stdio: 'ignore' });
  child.on('error', () => {});
  child.unref();
  return true;
}

export interface ServerTarget {
  url: string;
  token: string;
}

/** The running core's address (server.json) and the token, or null when Rein has never run. */
export function readTarget(home: ReinHome): ServerTarget | null {
  try {
    const info: unknown = JSON.parse(readFileSync(home.serverInfoPath, 'utf8'));
    const token = readFileSync(home.tokenPath, 'utf8').trim();
    if (!isRecord(info) || token === '') return null;
    const url = typeof info.url === 'string' ? info.url : typeof info.port === 'number' ? `http://127.0.0.1:${info.port}` : null;
    return url === null ? null : { url: url.replace(/\/+$/, ''), token };
  } catch {
    return null;
  }
}

export async function postHook(target: ServerTarget, route: string, body: string, timeoutMs = POST_TIMEOUT_MS): Promise<unknown> {
  const res = await fetch(`${target.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${target.token}` },
    body,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`capture server answered ${res.status}: ${text.slice(0, 200)}`);
  return text === '' ? {} : JSON.parse(text);
}

/** Append one payload to the spool (0600); refuses to grow past SPOOL_MAX_BYTES. Returns false when full. */
export function spool(home: ReinHome, body: string): boolean {
  const file = spoolPath(home);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  let size = 0;
  try {
    size = statSync(file).size;
  } catch {
    // new spool
  }
  const line = JSON.stringify({ route: '/hooks/codex', body }) + '\n';
  if (size + line.length > SPOOL_MAX_BYTES) return false;
  const fd = openSync(file, 'a', 0o600);
  try {
    writeSync(fd, line);
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * Deliver the spool. It is first renamed, so two notify processes never send the same lines; lines that fail
 * again go back to the spool. The server dedupes on (source, eventId), so a retry after a lost answer is harmless.
 */
export async function drainSpool(home: ReinHome, target: ServerTarget): Promise<{ sent: number; kept: number }> {
  const file = spoolPath(home);
  const taken = `${file}.${process.pid}.sending`;
  try {
    renameSync(file, taken);
  } catch {
    return { sent: 0, kept: 0 };
  }
  let sent = 0;
  let kept = 0;
  const lines = readFileSync(taken, 'utf8').split('\n').filter((l) => l !== '');
  for (const l of lines) {
    let entry: { route: string; body: string };
    try {
      entry = JSON.parse(l) as { route: string; body: string };
    } catch {
      continue; // a torn line from a crash: drop it rather than loop on it
    }
    try {
      await postHook(target, entry.route, entry.body);
      sent++;
    } catch {
      if (spool(home, entry.body)) kept++;
    }
  }
  rmSync(taken, { force: true });
  return { sent, kept };
}
