// Rein's own chat conversations (migration 0005): what the Chat screen shows, kept so a reload or a restart reopens
// it. Title, system prompt and messages are sealed like a turn's text when encryption is on (store.ts seal).
import type { Actor } from '../../common/api.ts';
import type { ChatMessage, ChatSummary } from '../../common/chat/conversation.ts';
import { chatTitle } from '../../common/chat/conversation.ts';
import { NotFoundError } from '../../common/errors.ts';
import type { Sql } from './sql.ts';

/** The queries whose plans migrate.test.ts checks. */
export const CHATS_Q = {
  list: 'SELECT id, title, messages, version, created_at, updated_at FROM chats ORDER BY updated_at DESC, id LIMIT ?',
} as const;

interface ChatRow {
  id: string;
  title: unknown;
  system: unknown;
  version: number | null;
  messages: unknown;
  created_at: number;
  updated_at: number;
}

export interface StoredChat extends ChatSummary {
  system: string;
  messages: ChatMessage[];
}

/** What the store lends this module: its statements and clock, and its sealing of text. */
export interface ChatsSql extends Sql {
  seal(text: string): string | Buffer;
  openText(v: unknown): string;
}

export class Chats {
  private readonly sql: ChatsSql;

  constructor(sql: ChatsSql) {
    this.sql = sql;
  }

  private out(r: ChatRow): StoredChat {
    const messages = JSON.parse(this.sql.openText(r.messages)) as ChatMessage[];
    return {
      id: r.id,
      title: this.sql.openText(r.title),
      system: this.sql.openText(r.system),
      version: r.version,
      messages,
      count: messages.length,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
    };
  }

  /** Creates or replaces a conversation; its title is its first question. */
  save(c: { id: string; system: string; version: number | null; messages: ChatMessage[] }, actor: Actor): StoredChat {
    return this.sql.write(() => {
      const now = this.sql.now();
      const row = this.sql
        .stmt<ChatRow>(
          `INSERT INTO chats (id, title, system, version, messages, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (id) DO UPDATE SET title = excluded.title, system = excluded.system, version = excluded.version,
             messages = excluded.messages, updated_at = excluded.updated_at
           RETURNING *`,
        )
        .get(c.id, this.sql.seal(chatTitle(c.messages)), this.sql.seal(c.system), c.version, this.sql.seal(JSON.stringify(c.messages)), now, now)!;
      this.sql.audit(actor, 'saveChat', `chat:${c.id}`, { messages: c.messages.length });
      return this.out(row);
    });
  }

  get(id: string): StoredChat {
    const r = this.sql.stmt<ChatRow>('SELECT * FROM chats WHERE id = ?').get(id);
    if (r === undefined) throw new NotFoundError(`conversation ${id} does not exist`, { field: 'id' });
    return this.out(r);
  }

  list(limit: number): ChatSummary[] {
    return this.sql
      .stmt<ChatRow>(CHATS_Q.list)
      .all(limit)
      .map((r) => {
        const { messages: _m, system: _s, ...summary } = this.out({ ...r, system: '' });
        return summary;
      });
  }

  delete(id: string, actor: Actor): boolean {
    return this.sql.write(() => {
      const n = this.sql.stmt('DELETE FROM chats WHERE id = ?').run(id).changes;
      if (n > 0) this.sql.audit(actor, 'deleteChat', `chat:${id}`);
      return n > 0;
    });
  }

  /** Every row's sealed text, for store.resealAll. */
  resealAll(seal: (t: string) => string | Buffer): number {
    const rows = this.sql.stmt<ChatRow>('SELECT * FROM chats').all();
    const up = this.sql.stmt('UPDATE chats SET title = ?, system = ?, messages = ? WHERE id = ?');
    for (const r of rows) up.run(seal(this.sql.openText(r.title)), seal(this.sql.openText(r.system)), seal(this.sql.openText(r.messages)), r.id);
    return rows.length;
  }
}
