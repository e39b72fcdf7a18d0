// A conversation of Rein's own chat as it is kept (store/chats.ts) and shown: the questions and answers in order, each
// answer with the turn it was stored as (to rate) and the version that gave it.
import { z } from 'zod';

export const ChatMessage = z.strictObject({
  role: z.enum(['user', 'assistant']),
  content: z.string().max(1_000_000),
  /** Answers: the stored turn (null: not stored, `note` says why). */
  turnId: z.number().int().positive().nullable().optional(),
  version: z.number().int().nonnegative().nullable().optional(),
  onPolicy: z.boolean().optional(),
  note: z.string().max(10_000).nullable().optional(),
});
export type ChatMessage = z.infer<typeof ChatMessage>;

/** A conversation in the list: its title (the first question), how many messages, and when. */
export interface ChatSummary {
  /** The session its answers' turns share. */
  id: string;
  title: string;
  /** The version picked to answer: null = the active one, 0 = the base. */
  version: number | null;
  count: number;
  createdAt: number;
  updatedAt: number;
}

const TITLE_CHARS = 80;

/** A conversation's title: its first question on one line, cut at TITLE_CHARS; "New chat" before there is one. */
export function chatTitle(messages: readonly ChatMessage[]): string {
  const first = messages.find((m) => m.role === 'user')?.content.replace(/\s+/g, ' ').trim() ?? '';
  if (first === '') return 'New chat';
  return first.length > TITLE_CHARS ? `${first.slice(0, TITLE_CHARS - 1)}…` : first;
}
