// server.json in the Rein home: where the running core listens. Written atomically with mode 0600 by `runServe`
// (and the app), read by the CLI and hooks, which also check that its pid is alive.
import { chmodSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { ReinError } from '../../common/errors.ts';
import type { ReinHome } from '../home.ts';
import { pidAlive } from '../pid.ts';

export const ServerInfo = z.object({
  pid: z.number().int().positive(),
  port: z.number().int().min(1).max(65535),
  url: z.string().regex(/^http:\/\/127\.0\.0\.1:\d+\/$/),
  startedAt: z.number().int().positive(),
});
export type ServerInfo = z.infer<typeof ServerInfo>;

export function writeServerInfo(home: ReinHome, info: ServerInfo): void {
  const tmp = `${home.serverInfoPath}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(info, null, 2) + '\n', { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, home.serverInfoPath);
}

/** The running core's address, or null when none is recorded, the file is unreadable, or its pid is gone. */
export function readServerInfo(home: ReinHome): ServerInfo | null {
  let text: string;
  try {
    text = readFileSync(home.serverInfoPath, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new ReinError('internal', `cannot read ${home.serverInfoPath}: ${(e as Error).message}`, { cause: e });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  const r = ServerInfo.safeParse(parsed);
  if (!r.success || !pidAlive(r.data.pid)) return null;
  return r.data;
}

/** Remove server.json if it still describes this process. */
export function removeServerInfo(home: ReinHome, pid: number = process.pid): void {
  try {
    const info = JSON.parse(readFileSync(home.serverInfoPath, 'utf8')) as { pid?: unknown };
    if (info.pid === pid) unlinkSync(home.serverInfoPath);
  } catch {
    // Already gone or replaced by another core: nothing of ours to remove.
  }
}
