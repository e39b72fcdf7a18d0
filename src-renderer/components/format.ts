import { isAppSource } from '../store/turns.ts';

/** A short relative time ("just now", "5 min ago", "3 h ago", then the date). */
export function timeAgo(at: number, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - at) / 1000));
  if (s < 45) return 'just now';
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 24) return `${h} h ago`;
  return new Date(at).toLocaleDateString();
}

/** Where a turn came from, as people name it: an agent, or Rein's own Chat and Arena ("from Chat"), never a raw id. */
const SOURCE_NAMES: Record<string, string> = {
  'claude-code': 'Claude Code',
  codex: 'Codex',
  openclaw: 'OpenClaw',
  proxy: 'OpenAI proxy',
  api: 'API / test turns',
  chat: 'from Chat',
  arena: 'from Arena',
};
export const sourceName = (source: string): string => SOURCE_NAMES[source] ?? source;

/** The session to show beside the source: none for Chat and Arena, whose sessions are generated ids. */
export const shownSession = (t: { source: string; session: string | null }): string | null => (isAppSource(t.source) ? null : t.session);
