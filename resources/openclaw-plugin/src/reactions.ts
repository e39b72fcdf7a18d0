// Reactions reach OpenClaw sessions as system-event text, not as a typed hook (OpenClaw docs, channels/telegram:
// "Telegram reaction added: 👍 by NAME on msg 42"; the scope is set by `reactionNotifications`). Other channels use
// the same sentence with their own name.
export interface Reaction {
  channel: string;
  added: boolean;
  emoji: string;
  by: string;
  messageId: string;
}

const LINE = /([A-Za-z][\w.-]*) reaction (added|removed): (\S+) by (.+?) on msg (\S+?)[.\s]*$/u;

export function parseReaction(text: string): Reaction | null {
  for (const line of text.split('\n')) {
    const m = LINE.exec(line.trim());
    if (m) return { channel: m[1]!.toLowerCase(), added: m[2] === 'added', emoji: m[3]!, by: m[4]!.trim(), messageId: m[5]! };
  }
  return null;
}

/** Every reaction line in a block of text (a prompt can carry several queued system events). */
export function parseReactions(text: string): Reaction[] {
  return text.split('\n').map(parseReaction).filter((r): r is Reaction => r !== null);
}

/** 👍/👎 with an optional skin tone and presentation selector; other emoji are not ratings. */
export function reactionValue(emoji: string): 'good' | 'bad' | null {
  if (/^\u{1F44D}[\u{1F3FB}-\u{1F3FF}]?\u{FE0F}?$/u.test(emoji)) return 'good';
  if (/^\u{1F44E}[\u{1F3FB}-\u{1F3FF}]?\u{FE0F}?$/u.test(emoji)) return 'bad';
  return null;
}
