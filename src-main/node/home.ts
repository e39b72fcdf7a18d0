// The Rein home (default ~/.rein, or $REIN_HOME): the database, the capture token, the running core's
// address, its lock, adapters, models, backups and logs.
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, lstatSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { ReinError } from '../common/errors.ts';

export interface ReinHome {
  dir: string;
  dbPath: string;
  /** The capture/API token: >= 32 random bytes, hex, mode 0600. */
  tokenPath: string;
  /** Written by a running core: {pid, port, url, startedAt}. */
  serverInfoPath: string;
  lockPath: string;
  adaptersDir: string;
  modelsDir: string;
  backupsDir: string;
  logsDir: string;
  /** Captures the server could not store yet because another process held the write lock (core/spool.ts). */
  captureSpoolPath: string;
}

export function resolveHome(env: NodeJS.ProcessEnv = process.env): ReinHome {
  const dir = path.resolve(env.REIN_HOME && env.REIN_HOME.length > 0 ? env.REIN_HOME : path.join(homedir(), '.rein'));
  return {
    dir,
    dbPath: path.join(dir, 'rein.db'),
    tokenPath: path.join(dir, 'token'),
    serverInfoPath: path.join(dir, 'server.json'),
    lockPath: path.join(dir, 'core.lock'),
    adaptersDir: path.join(dir, 'adapters'),
    modelsDir: path.join(dir, 'models'),
    backupsDir: path.join(dir, 'backups'),
    logsDir: path.join(dir, 'logs'),
    // Beside the Codex hook's own client-side spool (integrations/codex/hook-entry.mjs: spool/codex.jsonl).
    captureSpoolPath: path.join(dir, 'spool', 'captures.jsonl'),
  };
}

export function ensureHome(home: ReinHome): ReinHome {
  for (const d of [home.dir, home.adaptersDir, home.modelsDir, home.backupsDir, home.logsDir]) {
    mkdirSync(d, { recursive: true, mode: 0o700 });
  }
  return home;
}

/**
 * The home folder 0700 and the token and database 0600: checked on every start, and repaired with a warning when a
 * copy, an unpack or a umask left them readable by others (issue #19). Returns the warnings it gave.
 */
export function secureHome(home: ReinHome, warn: (line: string) => void): string[] {
  const given: string[] = [];
  const fix = (file: string, want: number) => {
    let st;
    try {
      st = lstatSync(file);
    } catch {
      return;
    }
    // A symlink is not followed: the token reader refuses one, and chmod would change the file it points at.
    if (st.isSymbolicLink() || (st.mode & 0o077) === 0) return;
    chmodSync(file, want);
    const line = `rein: warning: ${file} was open to other users (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}); set to ${want.toString(8).padStart(4, '0')}`;
    given.push(line);
    warn(line);
  };
  fix(home.dir, 0o700);
  fix(home.tokenPath, 0o600);
  for (const f of [home.dbPath, `${home.dbPath}-wal`, `${home.dbPath}-shm`]) fix(f, 0o600);
  return given;
}

/** Read the token, creating it (0600, 32 random bytes as 64 hex chars) on first use. */
export function readOrCreateToken(home: ReinHome): string {
  ensureHome(home);
  try {
    const st = lstatSync(home.tokenPath);
    if (st.isSymbolicLink()) throw new ReinError('forbidden', `refusing to read the token through a symlink: ${home.tokenPath}`);
    if ((st.mode & 0o077) !== 0) chmodSync(home.tokenPath, 0o600);
    const token = readFileSync(home.tokenPath, 'utf8').trim();
    if (/^[0-9a-f]{64,}$/.test(token)) return token;
    throw new ReinError('internal', `the token file ${home.tokenPath} is corrupt; delete it to make a new one`);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const token = randomBytes(32).toString('hex');
  let fd: number;
  try {
    fd = openSync(home.tokenPath, 'wx', 0o600);
  } catch (e) {
    // Another process created it first: use theirs.
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return readOrCreateToken(home);
    throw e;
  }
  try {
    writeSync(fd, token + '\n');
  } finally {
    closeSync(fd);
  }
  if ((statSync(home.tokenPath).mode & 0o777) !== 0o600) chmodSync(home.tokenPath, 0o600);
  return token;
}
