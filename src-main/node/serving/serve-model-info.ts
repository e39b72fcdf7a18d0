// serve-model.json in the Rein home: a running `rein serve-model` and the settings it started with. The model server
// reads them once, at start (embedded.ts loads the model and sizes its context then), so a change made afterwards
// (`rein settings set`, `rein model use`, `rein setup --local-model`) waits for a restart: the CLI reads this file to
// say so. Written atomically with mode 0600, removed on exit; a file whose pid is gone counts as absent.
import { chmodSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { Settings } from '../../common/config.ts';
import type { ReinHome } from '../home.ts';
import { pidAlive } from '../pid.ts';

/** The settings a serve stack reads when it starts: another model, upstream or context means starting it again. */
export const SERVE_STACK_KEYS = ['model.active', 'proxy.upstream', 'proxy.upstreamKind', 'proxy.baseModelName', 'serving.modelGguf', 'serving.contextSize'] as const;
/** What `rein serve-model` reads at start: the stack's settings and the port it listens on. */
const SERVE_MODEL_KEYS = [...SERVE_STACK_KEYS, 'proxy.port'] as const;
type ServeModelKey = (typeof SERVE_MODEL_KEYS)[number];

const ServeModelInfo = z.object({
  pid: z.number().int().positive(),
  url: z.string(),
  startedAt: z.number().int().positive(),
  settings: z.record(z.string(), z.unknown()),
});
export type ServeModelInfo = z.infer<typeof ServeModelInfo>;

const infoPath = (home: ReinHome): string => path.join(home.dir, 'serve-model.json');

export function servedSettings(s: Settings): Record<ServeModelKey, unknown> {
  return Object.fromEntries(SERVE_MODEL_KEYS.map((k) => [k, s[k]])) as Record<ServeModelKey, unknown>;
}

export function writeServeModelInfo(home: ReinHome, info: ServeModelInfo): void {
  const file = infoPath(home);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(info, null, 2) + '\n', { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

/** The running serve-model (its settings leave out those a flag replaced), or null when none is recorded, the file is unreadable, or its pid is gone. */
export function readServeModelInfo(home: ReinHome): ServeModelInfo | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(infoPath(home), 'utf8'));
  } catch {
    return null;
  }
  const r = ServeModelInfo.safeParse(parsed);
  return r.success && pidAlive(r.data.pid) ? r.data : null;
}

/** Remove serve-model.json if it still describes this process. */
export function removeServeModelInfo(home: ReinHome, pid: number = process.pid): void {
  try {
    const info = JSON.parse(readFileSync(infoPath(home), 'utf8')) as { pid?: unknown };
    if (info.pid === pid) unlinkSync(infoPath(home));
  } catch {
    // Already gone or replaced by another serve-model: nothing of ours to remove.
  }
}

/**
 * The line that says a running serve-model still serves with older settings, naming each one that changed and its
 * two values; null when none runs or it runs with these settings.
 */
export function restartNeeded(home: ReinHome, now: Settings): string | null {
  const info = readServeModelInfo(home);
  if (info === null) return null;
  const want = servedSettings(now);
  const changed = SERVE_MODEL_KEYS.filter((k) => Object.hasOwn(info.settings, k) && JSON.stringify(info.settings[k]) !== JSON.stringify(want[k]));
  if (changed.length === 0) return null;
  const what = changed.map((k) => `${k} ${JSON.stringify(info.settings[k])} → ${JSON.stringify(want[k])}`).join(', ');
  return `rein serve-model (pid ${info.pid}, ${info.url}) read its settings when it started: restart it (stop it, then run rein serve-model again) for ${what} to take effect.`;
}
