// The migration runner (house style 11, after Signal-Desktop's updateSchema): checks that the list is
// numbered 1..N without gaps, refuses a database written by a newer Rein, and runs every pending migration
// in one immediate transaction that also sets `user_version`, so a crash or a second process opening the
// same fresh file never sees half a schema.
import type { Database } from 'better-sqlite3';
import { ReinError } from '../../common/errors.ts';
import type { Migration } from './migrations/index.ts';

export class SchemaTooNewError extends ReinError {
  readonly dbVersion: number;
  readonly knownVersion: number;
  constructor(path: string, dbVersion: number, knownVersion: number) {
    super(
      'conflict',
      `the database ${path} has schema version ${dbVersion}, newer than this Rein knows (${knownVersion}); ` +
        'update Rein or restore a backup',
      { detail: { path, dbVersion, knownVersion } },
    );
    this.name = 'SchemaTooNewError';
    this.dbVersion = dbVersion;
    this.knownVersion = knownVersion;
  }
}

export class MigrationOrderError extends ReinError {
  constructor(message: string) {
    super('internal', message);
    this.name = 'MigrationOrderError';
  }
}

export function checkOrder(migrations: readonly Migration[]): void {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) {
      throw new MigrationOrderError(`migration ${m.name} has version ${m.version}, expected ${i + 1} (numbered 1..N, no gaps)`);
    }
  });
}

export function userVersion(db: Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/** Brings the schema up to date; returns the versions it applied. */
export function migrate(db: Database, migrations: readonly Migration[]): number[] {
  checkOrder(migrations);
  const latest = migrations.length;
  const run = db.transaction((): number[] => {
    // Read inside the write lock: another process may have migrated since we opened the file.
    const current = userVersion(db);
    if (current > latest) throw new SchemaTooNewError(db.name, current, latest);
    const applied: number[] = [];
    for (const m of migrations.slice(current)) {
      db.exec(m.sql);
      applied.push(m.version);
    }
    if (applied.length > 0) db.pragma(`user_version = ${latest}`);
    return applied;
  });
  if (userVersion(db) === latest) return [];
  return run.immediate();
}
