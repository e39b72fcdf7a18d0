// Opening the one Database of a process (house style 10): WAL so readers never block the writer, a busy
// timeout so concurrent writers (app, CLI, hooks) queue instead of failing, foreign keys on (they are off by
// default in SQLite), and synchronous=NORMAL, which in WAL mode is durable across application crashes.
import Database from 'better-sqlite3';
import { chmodSync, closeSync, constants, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { MIGRATIONS } from './migrations/index.ts';
import { migrate } from './migrate.ts';

export const BUSY_TIMEOUT_MS = 5000;

/** SQLITE_BUSY or one of its extended codes: another connection holds the lock this statement needed. */
export function isBusyError(e: unknown): boolean {
  return e instanceof Database.SqliteError && e.code.startsWith('SQLITE_BUSY');
}

export function openDatabase(file: string): Database.Database {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  // The turns are the user's prompts and answers: owner-only even when REIN_HOME already exists as 0755 (mkdir's mode
  // then does nothing). SQLite creates the -wal and -shm files with the database file's mode (os_unix.c
  // findCreateFileMode), so creating the file 0600 first covers all three.
  closeSync(openSync(file, constants.O_RDWR | constants.O_CREAT, 0o600));
  chmodSync(file, 0o600);
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
