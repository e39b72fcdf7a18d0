// What a table module of the store gets: the one Database's cached statements, its write transaction, its clock and
// the audit log (store.ts owns them). Only node/store prepares SQL (eslint-rules/store-sql.js).
import type { Statement } from 'better-sqlite3';
import type { Actor } from '../../common/api.ts';

export interface Sql {
  /** A statement prepared once per SQL text. */
  stmt<R = unknown>(sql: string): Statement<unknown[], R>;
  /** Runs `fn` in one IMMEDIATE transaction (nested calls become savepoints). */
  write<T>(fn: () => T): T;
  now(): number;
  audit(actor: Actor, action: string, target: string | null, detail?: unknown): void;
}
