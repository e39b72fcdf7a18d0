// Opening the one Database of a process (house style 10): WAL so readers never block the writer, a busy
// timeout so concurrent writers (app, CLI, hooks) queue instead of failing, foreign keys on (they are off by
// default in SQLite), and synchronous=NORMAL, which in WAL mode is durable across application crashes.
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { MIGRATIONS } from './migrations/index.ts';
import { migrate } from './migrate.ts';

export const BUSY_TIMEOUT_MS = 5000;

export function openDatabase(file: string): Database.Database {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const db = new Database(file, { timeout: BUSY_TIMEOUT_MS });
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    migrate(db, MIGRATIONS);
  } catch (e) {
    db.close();
    throw e;
  }
  return db;
}
