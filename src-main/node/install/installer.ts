// The installer framework behind `rein setup <agent>` and `rein uninstall <agent>`.
// - An integration computes the new contents of each file it touches (its entries are recognisable as ours, so
//   a second install changes nothing and an uninstall removes only ours).
// - Before writing, each file's prior bytes go to a timestamped backup in the Rein home (0600: they may hold tokens).
// - The Rein home remembers, per file, the bytes before Rein first touched it and the hash of what Rein wrote.
//   Uninstall restores those original bytes exactly when the file still holds what Rein wrote; when the user (or
//   the agent) changed it since, only Rein's entries are taken out of the current text.
// - An install is all or nothing across its files, even when killed: before its first file changes, a journal in the
//   Rein home lists every file it will touch with its bytes before (the backup copies) and the install record
//   before; it is removed once the install is recorded. A journal left by a killed install is rolled back
//   (recoverInterrupted) before the next setup or uninstall reads any file.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ReinError } from '../../common/errors.ts';
import type { ReinHome } from '../home.ts';
import { readState, refuseSymlink, sha256, writeAtomic } from './fs-safe.ts';

export type AgentName = 'claude' | 'codex' | 'openclaw';
export const AGENTS: AgentName[] = ['claude', 'codex', 'openclaw'];

export interface InstallEnv {
  /** The user's home ($HOME), where agent configs live. */
  userHome: string;
  env: Record<string, string | undefined>;
  rein: ReinHome;
  port: number;
  token: string;
  /** argv prefix that runs `rein hook …` quickly: [absolute node 24, absolute hook entry]. */
  hookCommand: string[];
  /** Absolute path of resources/openclaw-plugin. */
  pluginDir: string;
  options: {
    claudeTokenFromEnv?: boolean;
    /**
     * Run the agent on the local model: point it at Rein's capture proxy (`rein serve-model`, proxy.ts), which
     * stores its turns with their tokens and μ, so its hooks keep only `/rl` (the proxy captures, once).
     */
    localModel?: { proxyPort: number; model: string };
  };
}

export interface FileEdit {
  path: string;
  /** New contents; null deletes the file. */
  after: string | null;
  /** Mode for a new file, or to force (e.g. 0600 when the file holds the token). Default: keep, else 0644. */
  mode?: number;
  summary: string;
}

export interface Detection {
  installed: boolean;
  evidence: string[];
}

export interface Integration {
  agent: AgentName;
  detect(env: InstallEnv): Detection;
  /** Edits that install Rein, computed from the files' current text (null when absent). */
  plan(env: InstallEnv, read: (file: string) => string | null): FileEdit[];
  /** Edits that take Rein's entries out of the current text, leaving the user's. */
  unplan(env: InstallEnv, read: (file: string) => string | null): FileEdit[];
  /** Steps after the files are written (Codex hook trust); may return further edits. */
  afterInstall?(env: InstallEnv, read: (file: string) => string | null, say: (line: string) => void): Promise<FileEdit[]>;
  notes(env: InstallEnv): string[];
}

export interface Change {
  path: string;
  before: Buffer | null;
  after: Buffer | null;
  mode: number;
  summary: string;
}

interface FileRecord {
  existed: boolean;
  mode: number | null;
  /** Copy of the original bytes, in the backup dir. */
  backup: string | null;
  written: string | null;
}
interface StateFile {
  version: 1;
  agents: Partial<Record<AgentName, { installedAt: number; files: Record<string, FileRecord> }>>;
}

export function statePath(rein: ReinHome): string {
  return path.join(rein.dir, 'integrations.json');
}

function journalPath(rein: ReinHome): string {
  return path.join(rein.dir, 'install-journal.json');
}

/** What a killed install rolls back: each file's bytes before it (a backup copy, or absent) and the record before. */
interface Journal {
  agent: AgentName;
  /** integrations.json before the install, or null when there was none. */
  state: string | null;
  files: { path: string; existed: boolean; copy: string | null; mode: number | null }[];
}

function writeJournal(rein: ReinHome, j: Journal): void {
  writeAtomic(journalPath(rein), JSON.stringify(j, null, 2) + '\n', 0o600);
}

/**
 * Rolls back an install that was killed before it was recorded: every file it listed gets its bytes and mode from
 * before, and the install record too, so no agent is left with some files new and some old. Returns the agent, or
 * null when no install was interrupted.
 */
export function recoverInterrupted(rein: ReinHome): AgentName | null {
  const st = readState(journalPath(rein));
  if (st.bytes === null) return null;
  let j: Journal;
  try {
    j = JSON.parse(st.bytes.toString('utf8')) as Journal;
    if (!Array.isArray(j.files)) throw new Error('no file list');
  } catch (e) {
    throw new ReinError('internal', `${journalPath(rein)} is corrupt (${(e as Error).message}); move it away to start over`);
  }
  for (const f of j.files) {
    if (f.existed && f.copy === null) throw new ReinError('internal', `the backup of ${f.path} is missing`, { detail: { path: f.path } });
    writeAtomic(f.path, f.existed ? readFileSync(f.copy!) : null, f.mode ?? 0o644);
  }
  writeAtomic(statePath(rein), j.state, 0o600);
  rmSync(journalPath(rein), { force: true });
  return j.agent;
}

function loadState(rein: ReinHome): StateFile {
  const st = readState(statePath(rein));
  if (st.bytes === null) return { version: 1, agents: {} };
  try {
    const v = JSON.parse(st.bytes.toString('utf8')) as StateFile;
    if (v.version !== 1 || typeof v.agents !== 'object') throw new Error('unknown shape');
    return v;
  } catch (e) {
    throw new ReinError('internal', `${statePath(rein)} is corrupt (${(e as Error).message}); move it away to start over`);
  }
}

function saveState(rein: ReinHome, s: StateFile): void {
  writeAtomic(statePath(rein), JSON.stringify(s, null, 2) + '\n', 0o600);
}

const reader = (file: string): string | null => {
  const b = readState(file).bytes;
  return b === null ? null : b.toString('utf8');
};

/** Turn edits into changes, dropping the ones that change nothing. */
export function toChanges(edits: FileEdit[]): Change[] {
  const out: Change[] = [];
  for (const e of edits) {
    refuseSymlink(e.path);
    const cur = readState(e.path);
    const after = e.after === null ? null : Buffer.from(e.after, 'utf8');
    const mode = e.mode ?? cur.mode ?? 0o644;
    // A file its owner made read-only is a file they do not want changed: refuse before anything is written.
    if (cur.bytes !== null && cur.mode !== null && (cur.mode & 0o200) === 0 && !(cur.bytes.equals(after ?? Buffer.alloc(0)) && cur.mode === mode)) {
      throw new ReinError('conflict', `${e.path} is read-only (mode ${cur.mode.toString(8)}); Rein will not replace it. Make it writable (chmod u+w) and run setup again, or make the change by hand`);
    }
    const same = cur.bytes === null ? after === null : after !== null && cur.bytes.equals(after);
    if (same && (after === null || cur.mode === mode)) continue;
    out.push({ path: e.path, before: cur.bytes, after, mode, summary: e.summary });
  }
  return out;
}

function stamp(): string {
  return new Date().toISOString().replace(/[:.]/g, '-');
}

function backup(rein: ReinHome, agent: AgentName, what: string, changes: Change[]): { dir: string; copies: Map<string, string> } {
  const dir = path.join(rein.backupsDir, `${agent}-${what}-${stamp()}-${process.pid}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const copies = new Map<string, string>();
  const manifest: unknown[] = [];
  changes.forEach((c, i) => {
    let copy: string | null = null;
    if (c.before !== null) {
      copy = path.join(dir, `${i}-${path.basename(c.path)}`);
      writeFileSync(copy, c.before, { mode: 0o600, flag: 'wx' });
      copies.set(c.path, copy);
    }
    manifest.push({ path: c.path, existed: c.before !== null, copy, sha256: sha256(c.before) });
  });
  writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ agent, what, at: Date.now(), files: manifest }, null, 2), { mode: 0o600 });
  return { dir, copies };
}

export interface RunResult {
  changes: Change[];
  backupDir: string | null;
  dryRun: boolean;
}

export async function install(integration: Integration, env: InstallEnv, opts: { dryRun: boolean; say: (line: string) => void }): Promise<RunResult> {
  if (!opts.dryRun) recoverInterrupted(env.rein);
  const changes = toChanges(integration.plan(env, reader));
  if (opts.dryRun) return { changes, backupDir: null, dryRun: true };
  const journal: Journal = { agent: integration.agent, state: readState(statePath(env.rein)).bytes?.toString('utf8') ?? null, files: [] };
  const state = loadState(env.rein);
  const rec = state.agents[integration.agent] ?? { installedAt: Date.now(), files: {} };
  let backupDir: string | null = null;
  const apply = (cs: Change[]) => {
    if (cs.length === 0) return;
    const b = backup(env.rein, integration.agent, 'install', cs);
    backupDir ??= b.dir;
    // A file a first batch already changed keeps the bytes from before the whole install.
    for (const c of cs) {
      if (journal.files.some((f) => f.path === c.path)) continue;
      journal.files.push({ path: c.path, existed: c.before !== null, copy: b.copies.get(c.path) ?? null, mode: readState(c.path).mode });
    }
    writeJournal(env.rein, journal);
    // All or nothing: when one write fails, the files already written go back to their bytes and modes before it,
    // so no agent config is left changed with no install record to undo it.
    const done: { c: Change; mode: number | null }[] = [];
    try {
      for (const c of cs) {
        const mode = readState(c.path).mode;
        const prev = rec.files[c.path];
        // A file Rein already wrote keeps its first original; otherwise the current bytes are the original.
        if (!(prev && prev.written === sha256(c.before))) {
          rec.files[c.path] = { existed: c.before !== null, mode, backup: b.copies.get(c.path) ?? null, written: null };
        }
        writeAtomic(c.path, c.after, c.mode);
        done.push({ c, mode });
        rec.files[c.path]!.written = sha256(c.after);
      }
    } catch (e) {
      for (const { c, mode } of done.reverse()) writeAtomic(c.path, c.before, mode ?? 0o644);
      throw e;
    }
    rec.installedAt = Date.now();
    state.agents[integration.agent] = rec;
    saveState(env.rein, state);
  };
  apply(changes);
  if (integration.afterInstall) {
    const more = toChanges(await integration.afterInstall(env, reader, opts.say));
    apply(more);
    changes.push(...more);
  }
  rmSync(journalPath(env.rein), { force: true });
  return { changes, backupDir, dryRun: false };
}

export function uninstall(integration: Integration, env: InstallEnv, opts: { dryRun: boolean }): RunResult {
  if (!opts.dryRun) recoverInterrupted(env.rein);
  const state = loadState(env.rein);
  const rec = state.agents[integration.agent];
  const restore: FileEdit[] = [];
  const handled = new Set<string>();
  for (const [file, r] of Object.entries(rec?.files ?? {})) {
    const cur = readState(file);
    if (r.written !== null && sha256(cur.bytes) === r.written) {
      const original = r.backup === null ? null : readFileSync(r.backup).toString('utf8');
      if (r.existed && original === null) throw new ReinError('internal', `the backup of ${file} is missing`);
      restore.push({ path: file, after: r.existed ? original : null, mode: r.mode ?? 0o644, summary: 'restore the original bytes' });
      handled.add(file);
    }
  }
  // Files changed since install (or with no record): take out only Rein's entries.
  for (const e of integration.unplan(env, reader)) if (!handled.has(e.path)) restore.push(e);
  // Restoring original bytes must be byte-exact, so compare bytes, not text.
  const changes: Change[] = [];
  for (const e of restore) {
    refuseSymlink(e.path);
    const cur = readState(e.path);
    const r = rec?.files[e.path];
    const after = e.after === null ? null : handled.has(e.path) && r?.backup ? readFileSync(r.backup) : Buffer.from(e.after, 'utf8');
    const mode = e.mode ?? cur.mode ?? 0o644;
    if ((cur.bytes === null && after === null) || (cur.bytes !== null && after !== null && cur.bytes.equals(after) && cur.mode === mode)) continue;
    changes.push({ path: e.path, before: cur.bytes, after, mode, summary: e.summary });
  }
  if (opts.dryRun) return { changes, backupDir: null, dryRun: true };
  let backupDir: string | null = null;
  if (changes.length > 0) {
    backupDir = backup(env.rein, integration.agent, 'uninstall', changes).dir;
    for (const c of changes) writeAtomic(c.path, c.after, c.mode);
  }
  delete state.agents[integration.agent];
  saveState(env.rein, state);
  return { changes, backupDir, dryRun: false };
}

/** A unified-style summary of a change for `--dry-run`. */
export function describeChange(c: Change): string {
  const verb = c.before === null ? 'create' : c.after === null ? 'delete' : 'modify';
  return `${verb} ${c.path} (${c.summary}${c.after !== null ? `, mode ${c.mode.toString(8).padStart(4, '0')}` : ''})`;
}
