// The files an agent turn edited, watched until the session's next turn, to see whether the user put one back as it
// was (a `revert` signal, core/signals.ts). When a turn is stored, each file its Edit and MultiEdit calls changed
// (common/implicit/tools.ts fileEdits) is read once: its SHA-256 now is the content after the edit, and the same file
// with the edits undone gives the SHA-256 before it. No git, no copy of the text: only the two hashes are kept, in
// memory, for REVERT_WINDOW_MS. At the session's next prompt (a hook's UserPromptSubmit, core verb sessionPrompted),
// or when its next turn is stored where no prompt hook came first, each file is hashed again; back at the hash from
// before the edit (and not at the one after) is a revert.
//
// Only files inside the session's working directory are read (symlinks resolved, so a link out of it is not),
// regular files of at most REVERT_MAX_FILE_BYTES, and nothing is read for a turn whose client sent no cwd.
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import type { ContextMessage } from '../../common/domain.ts';
import { fileEdits, REVERT_MAX_FILE_BYTES, REVERT_WINDOW_MS, undoEdits } from '../../common/implicit/tools.ts';
import { readRegularFile } from '../fs-read.ts';

export interface WatchedFile {
  /** The real path that was read. */
  file: string;
  /** The path relative to the session's cwd, as the evidence names it. */
  shown: string;
  before: string;
  after: string;
  tools: string[];
}

export interface WatchedTurn {
  turnId: number;
  /** When the turn was stored (the core's clock). */
  at: number;
  files: WatchedFile[];
}

export interface Revert {
  turnId: number;
  file: WatchedFile;
  gapMs: number;
}

/**
 * At most this many files of one turn are read: each is read whole (up to REVERT_MAX_FILE_BYTES) on the capture's
 * path, and a turn that rewrote a hundred files is a refactor whose partial undo says little about the answer anyway.
 */
export const MAX_WATCHED_FILES = 32;

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** The file's real path when it is a file inside `cwd`, else null. */
function inside(cwd: string, file: string): { real: string; shown: string } | null {
  try {
    const root = realpathSync(cwd);
    const real = realpathSync(path.resolve(root, file));
    const rel = path.relative(root, real);
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return null;
    return { real, shown: rel.split(path.sep).join('/') };
  } catch {
    // Gone, unreadable, or the cwd itself is: nothing to watch.
    return null;
  }
}

function hashOf(file: string): string | null {
  try {
    return sha256(readRegularFile(file, REVERT_MAX_FILE_BYTES));
  } catch {
    // Deleted, replaced by a directory, grown past the cap: not the content from before the edit.
    return null;
  }
}

export class EditWatch {
  /** Watched turns by session key (source and session: two clients' sessions never mix). */
  private readonly bySession = new Map<string, WatchedTurn[]>();
  private readonly maxSessions: number;

  constructor(maxSessions = 1_000) {
    this.maxSessions = maxSessions;
  }

  /** Starts watching the files a stored turn edited; returns what it watches (empty when nothing could be). */
  watch(key: string, turnId: number, at: number, context: readonly ContextMessage[], cwd: string): WatchedFile[] {
    const files: WatchedFile[] = [];
    for (const edits of fileEdits(context).slice(0, MAX_WATCHED_FILES)) {
      const where = inside(cwd, edits.path);
      if (where === null) continue;
      let text: string;
      try {
        text = readRegularFile(where.real, REVERT_MAX_FILE_BYTES);
      } catch {
        continue;
      }
      const before = undoEdits(text, edits);
      if (before === null || before === text) continue;
      files.push({ file: where.real, shown: where.shown, before: sha256(before), after: sha256(text), tools: edits.tools });
    }
    if (files.length === 0) return files;
    const list = this.bySession.get(key) ?? [];
    this.bySession.delete(key);
    this.bySession.set(key, [...list, { turnId, at, files }]);
    // The oldest sessions go first: a capture server up for weeks keeps no more than this many.
    while (this.bySession.size > this.maxSessions) this.bySession.delete(this.bySession.keys().next().value!);
    return files;
  }

  /**
   * The session's next prompt came, or its next turn was stored, at `at`: every file its earlier turns edited is
   * hashed once more, and then no longer watched (a later turn may be the agent undoing its own edit on request).
   * `skip` says which files the new turn's own calls may have put back, which are then not read as the user's doing.
   */
  check(key: string, at: number, skip: (file: WatchedFile) => boolean): Revert[] {
    const list = this.bySession.get(key);
    if (list === undefined) return [];
    this.bySession.delete(key);
    const out: Revert[] = [];
    for (const w of list) {
      const gapMs = at - w.at;
      if (gapMs < 0 || gapMs > REVERT_WINDOW_MS) continue;
      for (const f of w.files) {
        if (skip(f)) continue;
        const now = hashOf(f.file);
        if (now !== null && now === f.before && now !== f.after) {
          out.push({ turnId: w.turnId, file: f, gapMs });
          break;
        }
      }
    }
    return out;
  }
}
