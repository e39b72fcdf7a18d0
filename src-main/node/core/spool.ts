// The capture server's spool (issue #21 item 4). better-sqlite3 waits for a lock on the calling thread, and the
// server has one: a capture that waited out the 5 s busy timeout behind another process's write froze every
// request, then failed. Here a capture waits CAPTURE_WAIT_MS at most; if the write lock is still held, the turn
// (already validated, redacted and capped by the core) is appended to a durable file and stored from there, in
// arrival order, as soon as the database is free. While the spool holds turns, new ones queue behind them.
// Replays are idempotent: a turn is unique per (source, eventId) (store.captureTurn: ON CONFLICT DO NOTHING), so a
// crash between a batch's commit and the file's rewrite stores nothing twice on the next start.
// Only the process that holds core.lock (the one `rein serve` or app core) may own a spool on a home.
import { closeSync, constants, fstatSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ACTORS, ContextMessageSchema } from '../../common/api.ts';
import type { Actor, CaptureResult } from '../../common/api.ts';
import type { TurnSummary } from '../../common/domain.ts';
import { ReinError } from '../../common/errors.ts';
import { writeAll, writeFileAtomic } from '../fs-atomic.ts';
import { EncryptionError, type FieldCipher } from '../store/cipher.ts';
import { BUSY_TIMEOUT_MS, isBusyError } from '../store/db.ts';
import type { NewTurn, Store } from '../store/store.ts';

/** The most a capture on the request path waits for another connection's write lock before it is spooled. */
export const CAPTURE_WAIT_MS = 100;
/** The wait of each replay attempt: a retry must not stall the server either. */
const REPLAY_WAIT_MS = 10;
const RETRY_MS = 200;
/** Turns stored per replay transaction, so that a long spool is replayed without one long stall. */
const REPLAY_BATCH = 500;
/** Beyond this the spool refuses (a 503, which the agent's own spool, where it has one, retries). */
export const SPOOL_MAX_BYTES = 64 * 1024 * 1024;

const base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/);
/** One spooled turn: a NewTurn with its byte columns as base64, and who captured it. */
const SpoolLine = z.strictObject({
  v: z.literal(1),
  actor: z.enum(ACTORS),
  turn: z.strictObject({
    source: z.string().min(1),
    session: z.string().nullable(),
    eventId: z.string().min(1),
    createdAt: z.number().int(),
    prompt: z.string(),
    context: z.array(ContextMessageSchema),
    response: z.string(),
    model: z.string().nullable(),
    tokens: base64.nullable(),
    logprobs: base64.nullable(),
    /** Absent in lines spooled before prompt ids were stored. */
    promptIds: z.array(z.number().int().nonnegative()).nullable().optional(),
    adapterVersion: z.number().int().nonnegative().nullable(),
    policy: z.string().nullable(),
    truncated: z.boolean(),
  }),
});

/** One line of the spool file, newline included; sealed whole when encryption at rest is on (store/cipher.ts). */
export function spoolLine(turn: NewTurn, actor: Actor, cipher: FieldCipher | null = null): string {
  const line: z.infer<typeof SpoolLine> = {
    v: 1,
    actor,
    turn: { ...turn, tokens: turn.tokens?.toString('base64') ?? null, logprobs: turn.logprobs?.toString('base64') ?? null },
  };
  const json = JSON.stringify(line);
  return (cipher === null ? json : JSON.stringify({ sealed: cipher.seal(json).toString('base64') })) + '\n';
}

function decode(line: string, cipher: FieldCipher | null): { turn: NewTurn; actor: Actor } {
  let json = JSON.parse(line) as unknown;
  const sealed = (json as { sealed?: unknown } | null)?.sealed;
  if (typeof sealed === 'string') {
    if (cipher === null) throw new EncryptionError('a spooled capture is sealed and no key is loaded');
    json = JSON.parse(cipher.open(Buffer.from(sealed, 'base64')));
  }
  const { actor, turn } = SpoolLine.parse(json);
  const bytes = (b: string | null) => (b === null ? null : Buffer.from(b, 'base64'));
  return { actor, turn: { ...turn, tokens: bytes(turn.tokens), logprobs: bytes(turn.logprobs), promptIds: turn.promptIds ?? null } };
}

/** A spool file's text, or null when there is none. */
function readSpool(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new ReinError('internal', `cannot read the capture spool ${file}: ${(e as Error).message}`, { cause: e });
  }
}

/**
 * Rewrites a spool file's sealed lines in the clear (`rein encryption disable`, which holds the core lock, so no
 * spool object owns the file). A line that does not open is kept as it is; the next start sets it aside. Returns the
 * lines opened.
 */
export function unsealSpoolFile(file: string, cipher: FieldCipher): number {
  const text = readSpool(file);
  if (text === null) return 0;
  let opened = 0;
  const lines = text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      try {
        if (typeof (JSON.parse(l) as { sealed?: unknown } | null)?.sealed !== 'string') return l + '\n';
        const { turn, actor } = decode(l, cipher);
        opened++;
        return spoolLine(turn, actor, null);
      } catch {
        return l + '\n';
      }
    });
  if (opened > 0) writeFileAtomic(file, (fd) => writeAll(fd, Buffer.from(lines.join(''), 'utf8')), { mode: 0o600, fsync: true });
  return opened;
}

export interface CaptureSpoolOptions {
  store: Store;
  /** The spool file (home/spool/captures.jsonl). */
  file: string;
  /** Called for each turn stored from the spool, in order (the core emits turnCaptured for a created one). */
  stored: (r: { turn: TurnSummary; created: boolean }) => void;
  log?: (line: string) => void;
}

export class CaptureSpool {
  readonly file: string;
  private readonly store: Store;
  private readonly stored: CaptureSpoolOptions['stored'];
  private readonly log: (line: string) => void;
  /** The file's lines, in order; only this object writes the file. */
  private lines: string[] = [];
  private bytes = 0;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(opts: CaptureSpoolOptions) {
    this.store = opts.store;
    this.file = opts.file;
    this.stored = opts.stored;
    this.log = opts.log ?? ((line) => process.stderr.write(line + '\n'));
    this.load();
    if (this.lines.length > 0) {
      this.log(`rein: ${this.lines.length} captured turns wait in the spool ${this.file}; storing them`);
      this.schedule();
    }
  }

  /** Turns waiting in the spool. */
  get pending(): number {
    return this.lines.length;
  }

  /** Stores the turn now if the write lock comes within CAPTURE_WAIT_MS (and nothing waits before it), else spools it. */
  capture(turn: NewTurn, actor: Actor): CaptureResult {
    if (this.lines.length > 0) this.replayQuietly();
    if (this.lines.length === 0) {
      try {
        return this.store.withBusyTimeout(CAPTURE_WAIT_MS, () => this.store.captureTurn(turn, actor));
      } catch (e) {
        if (!isBusyError(e)) throw e;
      }
    }
    this.append(spoolLine(turn, actor, this.store.cipher), turn);
    this.schedule();
    return { turn: null, created: false, spooled: true };
  }

  /**
   * Stores the oldest REPLAY_BATCH spooled turns in one transaction, waiting at most `waitMs` for the write lock.
   * Returns how many turns are still waiting; on SQLITE_BUSY nothing changes.
   */
  replay(waitMs = REPLAY_WAIT_MS): number {
    if (this.lines.length === 0) return 0;
    const batch = this.lines.slice(0, REPLAY_BATCH);
    let results: { turn: TurnSummary; created: boolean }[];
    try {
      results = this.store.withBusyTimeout(waitMs, () =>
        this.store.write(() =>
          batch.map((line) => {
            const { turn, actor } = decode(line, this.store.cipher);
            return this.store.captureTurn(turn, actor);
          }),
        ),
      );
    } catch (e) {
      if (isBusyError(e)) return this.lines.length;
      throw e;
    }
    const rest = this.lines.slice(batch.length);
    // Committed: now drop the batch from the file. A crash before this line replays it, and stores nothing twice.
    this.rewrite(rest);
    for (const r of results) this.stored(r);
    return this.lines.length;
  }

  /** Stops the retries and replays what it can, waiting the normal busy timeout; the rest stays for the next start. */
  close(): void {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    try {
      while (this.lines.length > 0) {
        const before = this.lines.length;
        // Unchanged: still busy after the full wait.
        if (this.replay(BUSY_TIMEOUT_MS) === before) break;
      }
    } catch (e) {
      this.log(`rein: could not store the capture spool on close: ${(e as Error).message}`);
    }
    if (this.lines.length > 0) this.log(`rein: ${this.lines.length} captured turns stay in the spool ${this.file} until the next start`);
  }

  private replayQuietly(): void {
    try {
      this.replay();
    } catch (e) {
      this.log(`rein: replaying the capture spool failed; it is kept and retried: ${(e as Error).message}`);
    }
  }

  private schedule(): void {
    if (this.timer !== null || this.closed || this.lines.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.replayQuietly();
      this.schedule();
    }, RETRY_MS);
    // The server keeps the process alive; a spool alone must not.
    this.timer.unref();
  }

  /** Appends one line, fsynced before the capture is answered; a failed write is cut back off, so no torn line stays. */
  private append(line: string, turn: NewTurn): void {
    const size = Buffer.byteLength(line);
    if (this.bytes + size > SPOOL_MAX_BYTES) {
      throw new ReinError('busy', `the database is busy and the capture spool ${this.file} is full; turn ${turn.source}/${turn.eventId} was not stored`);
    }
    try {
      mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
      const fd = openSync(this.file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
      try {
        const at = fstatSync(fd).size;
        try {
          writeAll(fd, Buffer.from(line, 'utf8'));
          fsyncSync(fd);
        } catch (e) {
          ftruncateSync(fd, at);
          throw e;
        }
      } finally {
        closeSync(fd);
      }
    } catch (e) {
      throw new ReinError('busy', `the database is busy and the capture spool ${this.file} could not be written (${(e as Error).message}); turn ${turn.source}/${turn.eventId} was not stored`, { cause: e });
    }
    this.lines.push(line);
    this.bytes += size;
  }

  private rewrite(lines: string[]): void {
    if (lines.length === 0) rmSync(this.file, { force: true });
    else writeFileAtomic(this.file, (fd) => writeAll(fd, Buffer.from(lines.join(''), 'utf8')), { mode: 0o600, fsync: true });
    this.lines = lines;
    this.bytes = lines.reduce((n, l) => n + Buffer.byteLength(l), 0);
  }

  /** Reads the spool a previous run left. A line that does not decode (torn by a crash) is set aside, never dropped. */
  private load(): void {
    const text = readSpool(this.file);
    if (text === null) return;
    const good: string[] = [];
    const bad: string[] = [];
    for (const l of text.split('\n')) {
      if (l === '') continue;
      try {
        decode(l, this.store.cipher);
        good.push(l + '\n');
      } catch {
        bad.push(l + '\n');
      }
    }
    if (bad.length > 0) {
      const aside = `${this.file}.rejected`;
      const fd = openSync(aside, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
      try {
        writeAll(fd, Buffer.from(bad.join(''), 'utf8'));
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      this.log(`rein: ${bad.length} lines of the capture spool do not decode; moved to ${aside}`);
    }
    if (bad.length > 0 || !text.endsWith('\n')) this.rewrite(good);
    else {
      this.lines = good;
      this.bytes = Buffer.byteLength(text);
    }
  }
}
