// The store: every read and write of rein.db. One instance (one Database) per Core, statements prepared
// once and cached by their SQL text, and every write in one synchronous IMMEDIATE transaction together with
// its audit row. IMMEDIATE matters with several processes: a deferred transaction that reads and then
// writes can fail with SQLITE_BUSY_SNAPSHOT when another process committed in between, which busy_timeout
// cannot wait out; taking the write lock first makes the busy handler queue the writers instead.
import type { Database, Statement } from 'better-sqlite3';
import type { Actor } from '../../common/api.ts';
import type { AdapterView, ContextMessage, EmaPoint, Page, RatingView, Turn, TurnState, TurnSummary } from '../../common/domain.ts';
import { BadInputError, ConflictError, NotFoundError } from '../../common/errors.ts';
import { emaNext, rewardOf, type RatingValue } from '../../common/rewards.ts';
import { CHAT_SOURCES } from '../../common/chat/arena.ts';
import { Adapters } from './adapters.ts';
import { EncryptionError, type FieldCipher, isSealed, SEALED_COLUMNS, sealedKey } from './cipher.ts';
import { BUSY_TIMEOUT_MS, openDatabase } from './db.ts';
import { Arena } from './arena.ts';
import { Chats } from './chats.ts';
import { Rounds } from './rounds.ts';
import { Runs } from './runs.ts';
import { RewardModels } from './reward.ts';
import { Signals } from './signals.ts';
import { PromptIds } from './prompt-ids.ts';
import type { Sql } from './sql.ts';
import {
  ratingView,
  turnSummary,
  turnView,
  ARENA_BLIND,
  TURN_SUMMARY_COLUMNS,
  type RatingRow,
  type TurnRow,
  type TurnSummaryRow,
} from './rows.ts';

/** A turn ready to store: already validated, redacted and capped by the core. */
export interface NewTurn {
  source: string;
  session: string | null;
  eventId: string;
  createdAt: number;
  prompt: string;
  context: ContextMessage[];
  response: string;
  model: string | null;
  tokens: Buffer | null;
  logprobs: Buffer | null;
  /** The ids the model server consumed before it sampled `tokens` (CaptureTurnInput.promptIds), or null. */
  promptIds?: number[] | null;
  adapterVersion: number | null;
  /** JSON of CaptureTurnInput.policy, or null. */
  policy: string | null;
  truncated: boolean;
}

export interface NewRating {
  value: RatingValue;
  correction: string | null;
  tags: string[];
  comment: string | null;
  rater: string;
}

export interface TurnQuery {
  limit: number;
  offset: number;
  source?: string;
  session?: string;
  state?: TurnState;
  search?: string;
  since?: number;
  until?: number;
  rateInbox?: boolean;
}

export interface RatingQuery {
  limit: number;
  offset: number;
  kind?: RatingView['kind'];
  source?: string;
  trained?: boolean;
  search?: string;
  /** Ratings carrying this tag. */
  tag?: string;
  includeUndone: boolean;
  since?: number;
  until?: number;
}

export interface RemovedRating {
  rating: RatingView;
  /** The turn went back to unrated. */
  turnId: number;
}

interface EmaEventRow {
  id: number;
  reason: EmaPoint['reason'];
  reward: number | null;
  value_after: number | null;
  rating_id: number | null;
  live: number | null;
}

/** The hot queries, named so that the migration test can check each one's plan uses an index. */
export const Q = {
  // An arena answer is rated by its vote (a tie leaves both unrated on purpose): "rate the newest" never picks one.
  newestRateableGlobal: `SELECT id FROM turns WHERE state = 'unrated' AND created_at >= ? AND source != 'arena' ORDER BY created_at DESC, id DESC LIMIT 1`,
  newestRateableSession: `SELECT id FROM turns WHERE session = ? AND state = 'unrated' AND created_at >= ? AND source != 'arena' ORDER BY created_at DESC, id DESC LIMIT 1`,
  newestLiveRating: 'SELECT * FROM ratings WHERE undone_at IS NULL ORDER BY created_at DESC, id DESC LIMIT 1',
  pendingCount: 'SELECT count(*) AS n FROM ratings WHERE model_id = ? AND run_id IS NULL AND undone_at IS NULL AND parked IS NULL',
  parkedCount: 'SELECT count(*) AS n FROM ratings WHERE model_id = ? AND run_id IS NULL AND undone_at IS NULL AND parked IS NOT NULL',
  liveRatingOfTurn: 'SELECT * FROM ratings WHERE turn_id = ? AND undone_at IS NULL ORDER BY id DESC LIMIT 1',
  ratingsByTime: `SELECT r.* FROM ratings r JOIN turns t ON t.id = r.turn_id WHERE r.undone_at IS NULL ORDER BY r.created_at DESC, r.id DESC LIMIT ? OFFSET ?`,
  newestLiveRatingSession: `SELECT r.* FROM ratings r JOIN turns t ON t.id = r.turn_id WHERE r.undone_at IS NULL AND t.session = ? ORDER BY r.created_at DESC, r.id DESC LIMIT 1`,
} as const;

class Filter {
  readonly where: string[] = [];
  readonly args: unknown[] = [];
  add(clause: string, ...args: unknown[]): void {
    this.where.push(clause);
    this.args.push(...args);
  }
}

/**
 * Not an answer of Rein's own Chat or Arena (CHAT_SOURCES): those are rated on their own screens, so the Rate screen's
 * inbox and its count leave them out. The sources are constants, not user input, so they are written into the SQL.
 */
const NOT_APP_SOURCE = `source NOT IN (${CHAT_SOURCES.map((s) => `'${s}'`).join(', ')})`;

/** The sealed columns of each table (cipher.ts SEALED_COLUMNS), and how many rows one re-seal transaction takes. */
const TURN_SEALED = ['prompt', 'context', 'response'] as const;
const RATING_SEALED = ['correction', 'comment'] as const;
const RESEAL_BATCH = 256;

const likeEscape = (s: string): string => s.replace(/[\\%_]/g, (c) => `\\${c}`);

export class Store implements Sql {
  readonly db: Database;
  readonly now: () => number;
  private readonly cache = new Map<string, Statement>();
  /** Training rounds and what each did with the ratings it drew (store/runs.ts). */
  readonly runs: Runs;
  /** Adapter versions, and which one is active (store/adapters.ts). */
  readonly adapters: Adapters;
  /** What a training round reads from ratings and turns (store/rounds.ts). */
  readonly rounds: Rounds;
  /** Arena matches and the per-version statistics (store/arena.ts). */
  readonly arena: Arena;
  /** The reward model's versions and predictions (store/reward.ts). */
  readonly rewardModels: RewardModels;
  /** Rein's own chat conversations (store/chats.ts). */
  readonly chats: Chats;
  /** What the user did after each answer, the evidence of weak labels (store/signals.ts). */
  readonly signals: Signals;
  /** The exact prompt ids of turns, their shared chunks stored once (store/prompt-ids.ts). */
  readonly promptIds: PromptIds;

  /** Encryption at rest (cipher.ts): null when it is off; fields sealed earlier still need it to open. */
  cipher: FieldCipher | null;

  constructor(file: string, now: () => number = Date.now, cipher: FieldCipher | null = null) {
    this.db = openDatabase(file);
    this.now = now;
    this.cipher = cipher;
    // SQL that reads a sealed column's text (previews, search, lengths) goes through rein_text.
    this.db.function('rein_text', { deterministic: true }, (v: unknown) => (isSealed(v) ? this.openField(v) : v));
    this.runs = new Runs(this);
    this.adapters = new Adapters(this);
    this.rounds = new Rounds(this);
    this.arena = new Arena(this);
    this.rewardModels = new RewardModels(this);
    this.chats = new Chats(this);
    this.signals = new Signals(this);
    this.promptIds = new PromptIds(this);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  /** A statement prepared once per SQL text. Rows it reads from turns and ratings come with their sealed text opened. */
  stmt<R = unknown>(sql: string): Statement<unknown[], R> {
    let s = this.cache.get(sql);
    if (s === undefined) {
      s = this.db.prepare(sql);
      if (s.reader && /\b(turns|ratings)\b/.test(sql)) s = this.opening(s);
      this.cache.set(sql, s);
    }
    return s as Statement<unknown[], R>;
  }

  /** The text to store in a sealed column: an AES-GCM blob when encryption is on, else the text. */
  seal(text: string): string | Buffer {
    return this.cipher === null ? text : this.cipher.seal(text);
  }

  sealBytes(b: Buffer): Buffer {
    return this.cipher === null ? b : this.cipher.seal(b.toString('base64'));
  }

  openBytes(b: Buffer): Buffer {
    return isSealed(b) ? Buffer.from(this.openField(b), 'base64') : b;
  }

  sealNullable(text: string | null): string | Buffer | null {
    return text === null ? null : this.seal(text);
  }

  /** A sealed column's value as text (plain text passes through). */
  openText(v: unknown): string {
    return isSealed(v) ? this.openField(v) : (v as string);
  }

  private openField(v: Buffer): string {
    if (this.cipher === null) throw new EncryptionError('rein.db holds encrypted text and no key is loaded: set REIN_PASSPHRASE or REIN_PASSPHRASE_FILE');
    return this.cipher.open(v);
  }

  private openRow<T>(row: T): T {
    if (row !== null && typeof row === 'object') {
      const r = row as Record<string, unknown>;
      for (const c of SEALED_COLUMNS) {
        const v = r[c];
        if (isSealed(v)) r[c] = this.openField(v);
      }
    }
    return row;
  }

  /** The statement with get/all/iterate opening sealed columns by name (cipher.ts SEALED_COLUMNS). */
  private opening(s: Statement): Statement {
    const open = <T>(row: T): T => this.openRow(row);
    return new Proxy(s, {
      get(target, prop) {
        if (prop === 'get') return (...a: unknown[]) => open(target.get(...a));
        if (prop === 'all') return (...a: unknown[]) => target.all(...a).map(open);
        if (prop === 'iterate') {
          return function* (...a: unknown[]) {
            for (const r of target.iterate(...a)) yield open(r);
          };
        }
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...x: unknown[]) => unknown).bind(target) : v;
      },
    });
  }

  /**
   * Brings every turn's and rating's text into the form of `next` (sealed with its current key; null: plain text), in
   * transactions of RESEAL_BATCH rows, skipping rows already in that form, so a run killed part-way keeps what it
   * committed and a second run finishes the rest (store/encryption.ts journals the operation). `this.cipher` must open
   * every row meanwhile (for a rotation, `next` itself: it keeps the old keys). Then the file is rewritten (VACUUM) and
   * the WAL emptied, so no page of the old form stays in rein.db or rein.db-wal. Returns the rows now in that form.
   */
  resealAll(next: FieldCipher | null): { turns: number; ratings: number } {
    const inForm = (v: unknown): boolean => v === null || (next === null ? !isSealed(v) : isSealed(v) && sealedKey(v) === next.current);
    const plain = (v: unknown): string | null => (v === null ? null : isSealed(v) ? this.openField(v) : (v as string));
    const seal = (v: unknown): string | Buffer | null => {
      if (inForm(v)) return v as string | Buffer | null;
      const t = plain(v);
      return t === null || next === null ? t : next.seal(t);
    };
    const pass = (table: 'turns' | 'ratings', cols: readonly string[]): number => {
      const select = this.db.prepare(`SELECT id, ${cols.join(', ')} FROM ${table} WHERE id > ? ORDER BY id LIMIT ${RESEAL_BATCH}`);
      const update = this.db.prepare(`UPDATE ${table} SET ${cols.map((c) => `${c} = ?`).join(', ')} WHERE id = ?`);
      let n = 0;
      for (let after = 0, more = true; more; ) {
        more = this.write(() => {
          const rows = select.all(after) as Record<string, unknown>[];
          for (const r of rows) if (!cols.every((c) => inForm(r[c]))) update.run(...cols.map((c) => seal(r[c])), r.id);
          n += rows.length;
          if (rows.length > 0) after = rows.at(-1)!.id as number;
          return rows.length === RESEAL_BATCH;
        });
      }
      return n;
    };
    const turns = pass('turns', TURN_SEALED);
    const ratings = pass('ratings', RATING_SEALED);
    // Saved Chat conversations (store/chats.ts): few rows, re-sealed whole in one transaction; a run killed before it
    // re-seals them again (idempotent: each row is opened with this.cipher and sealed with next).
    this.write(() => this.chats.resealAll((t) => (next === null ? t : next.seal(t))));
    // The signals' evidence (store/signals.ts), the same way.
    this.write(() => this.signals.resealAll((t) => (next === null ? t : next.seal(t))));
    // The prompt ids (store/prompt-ids.ts), bytes sealed as base64 text.
    this.write(() => this.promptIds.resealAll((b) => {
      const plain = this.openBytes(b);
      return next === null ? plain : next.seal(plain.toString('base64'));
    }));
    this.cipher = next;
    this.db.exec('VACUUM');
    this.db.pragma('wal_checkpoint(TRUNCATE)');
    return { turns, ratings };
  }

  /** How many turns hold sealed text and how many plain (rein encryption status). */
  sealedCounts(): { sealed: number; plain: number } {
    const r = this.db.prepare(`SELECT sum(typeof(response) = 'blob') AS sealed, sum(typeof(response) = 'text') AS plain FROM turns`).get() as { sealed: number | null; plain: number | null };
    return { sealed: r.sealed ?? 0, plain: r.plain ?? 0 };
  }

  /** Rows (turns and ratings) whose every text field is in the form of key `key` (null: plain), of all rows; no key needed. */
  formCounts(key: number | null): { done: number; total: number } {
    const id = Buffer.alloc(4);
    if (key !== null) id.writeUInt32BE(key);
    const inForm = (c: string): string => (key === null ? `typeof(${c}) <> 'blob'` : `(${c} IS NULL OR (typeof(${c}) = 'blob' AND substr(${c}, 5, 4) = :id))`);
    const count = (table: string, cols: readonly string[]) =>
      this.db.prepare(`SELECT count(*) AS total, coalesce(sum(${cols.map(inForm).join(' AND ')}), 0) AS done FROM ${table}`).get(key === null ? {} : { id }) as { total: number; done: number };
    const t = count('turns', TURN_SEALED);
    const r = count('ratings', RATING_SEALED);
    return { done: t.done + r.done, total: t.total + r.total };
  }

  /** Runs `fn` in one IMMEDIATE transaction (nested calls become savepoints). */
  write<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  /**
   * Runs `fn` waiting at most `ms` (not BUSY_TIMEOUT_MS) for a lock another connection holds. The busy handler
   * sleeps on this thread, so the capture server's request path waits briefly and spools instead (core/spool.ts).
   */
  withBusyTimeout<T>(ms: number, fn: () => T): T {
    this.db.pragma(`busy_timeout = ${Math.max(0, Math.floor(ms))}`);
    try {
      return fn();
    } finally {
      this.db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  }

  audit(actor: Actor, action: string, target: string | null, detail: unknown = {}): void {
    this.stmt('INSERT INTO audit (at, actor, action, target, detail) VALUES (?, ?, ?, ?, ?)').run(
      this.now(),
      actor,
      action,
      target,
      JSON.stringify(detail),
    );
  }

  // Settings: raw JSON values by key; the core validates them against common/config.ts.

  readSettingsRaw(): Map<string, unknown> {
    const rows = this.stmt<{ key: string; value: string }>('SELECT key, value FROM settings').all();
    return new Map(rows.map((r) => [r.key, JSON.parse(r.value) as unknown]));
  }

  writeSettings(values: Record<string, unknown>, actor: Actor): void {
    this.write(() => {
      const put = this.stmt(
        `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
      );
      for (const [k, v] of Object.entries(values)) put.run(k, JSON.stringify(v), this.now());
      this.audit(actor, 'setSettings', null, values);
    });
  }

  // Turns.

  captureTurn(t: NewTurn, actor: Actor): { turn: TurnSummary; created: boolean } {
    return this.write(() => {
      const inserted = this.stmt<{ id: number }>(
        `INSERT INTO turns (source, session, event_id, created_at, prompt, context, response, model, tokens, logprobs,
           adapter_version, policy, truncated)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (source, event_id) DO NOTHING RETURNING id`,
      ).get(
        t.source,
        t.session,
        t.eventId,
        t.createdAt,
        this.seal(t.prompt),
        this.seal(JSON.stringify(t.context)),
        this.seal(t.response),
        t.model,
        t.tokens,
        t.logprobs,
        t.adapterVersion,
        t.policy,
        t.truncated ? 1 : 0,
      );
      if (inserted !== undefined) {
        if (t.promptIds != null) this.promptIds.put(inserted.id, t.promptIds);
        this.audit(actor, 'captureTurn', `turn:${inserted.id}`, { source: t.source, eventId: t.eventId, truncated: t.truncated });
        return { turn: this.mustTurnSummary(inserted.id), created: true };
      }
      const existing = this.stmt<{ id: number }>('SELECT id FROM turns WHERE source = ? AND event_id = ?').get(t.source, t.eventId);
      if (existing === undefined) throw new Error(`turn ${t.source}/${t.eventId} neither inserted nor found`);
      return { turn: this.mustTurnSummary(existing.id), created: false };
    });
  }

  liveRating(turnId: number): RatingView | null {
    const r = this.stmt<RatingRow>(Q.liveRatingOfTurn).get(turnId);
    return r === undefined ? null : this.ratingOut(r);
  }

  turnSummary(id: number): TurnSummary | null {
    const r = this.stmt<TurnSummaryRow>(`SELECT ${TURN_SUMMARY_COLUMNS} FROM turns WHERE id = ?`).get(id);
    return r === undefined ? null : turnSummary(r, this.liveRating(id));
  }

  mustTurnSummary(id: number): TurnSummary {
    const t = this.turnSummary(id);
    if (t === null) throw new NotFoundError(`turn ${id} does not exist`, { turnId: id });
    return t;
  }

  getTurn(id: number): Turn {
    const r = this.stmt<TurnRow & { blind: number }>(`SELECT *, ${ARENA_BLIND} FROM turns WHERE id = ?`).get(id);
    if (r === undefined) throw new NotFoundError(`turn ${id} does not exist`, { turnId: id });
    return { ...turnView(r, this.liveRating(id)), rewardPrediction: this.rewardModels.latestPrediction(id) };
  }

  listTurns(q: TurnQuery): Page<TurnSummary> {
    const f = new Filter();
    const { where, args } = f;
    if (q.source !== undefined) f.add('source = ?', q.source);
    if (q.session !== undefined) f.add('session = ?', q.session);
    if (q.state !== undefined) f.add('state = ?', q.state);
    if (q.since !== undefined) f.add('created_at >= ?', q.since);
    if (q.until !== undefined) f.add('created_at < ?', q.until);
    if (q.rateInbox === true) f.add(NOT_APP_SOURCE);
    if (q.search !== undefined && q.search.length > 0) {
      const like = `%${likeEscape(q.search)}%`;
      f.add(`(rein_text(prompt) LIKE ? ESCAPE '\\' OR rein_text(response) LIKE ? ESCAPE '\\')`, like, like);
    }
    const w = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
    const total = this.stmt<{ n: number }>(`SELECT count(*) AS n FROM turns ${w}`).get(...args)!.n;
    const rows = this.stmt<TurnSummaryRow>(
      `SELECT ${TURN_SUMMARY_COLUMNS} FROM turns ${w} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
    ).all(...args, q.limit, q.offset);
    return { items: rows.map((r) => turnSummary(r, this.liveRating(r.id))), total };
  }

  /** Marks a turn ignored (a dismissed popup); a rated turn keeps its rating. */
  ignoreTurn(id: number, actor: Actor): { turn: TurnSummary; changed: boolean } {
    return this.write(() => {
      const changed = this.stmt(`UPDATE turns SET state = 'ignored' WHERE id = ? AND state IN ('unrated', 'expired')`).run(id).changes > 0;
      const turn = this.mustTurnSummary(id);
      if (changed) this.audit(actor, 'ignoreTurn', `turn:${id}`);
      return { turn, changed };
    });
  }

  deleteTurn(id: number, actor: Actor): { deleted: boolean; modelIds: string[] } {
    return this.write(() => {
      const live = this.stmt<RatingRow>('SELECT * FROM ratings WHERE turn_id = ? AND undone_at IS NULL').all(id);
      for (const r of live) this.emaRemove(r, 'delete');
      const chunks = this.promptIds.hashesOf(id);
      const deleted = this.stmt('DELETE FROM turns WHERE id = ?').run(id).changes > 0;
      this.promptIds.dropOrphans(chunks);
      if (deleted) this.audit(actor, 'deleteTurn', `turn:${id}`, { ratings: live.map((r) => r.id) });
      return { deleted, modelIds: [...new Set(live.map((r) => r.model_id))] };
    });
  }

  /** Marks unrated turns older than `cutoff` expired; returns how many. */
  expireTurns(cutoff: number): number {
    return this.stmt(`UPDATE turns SET state = 'expired' WHERE state = 'unrated' AND created_at < ?`).run(cutoff).changes;
  }

  /** The newest rateable turn: unrated (not ignored, not expired) and created at or after `cutoff`. */
  newestRateable(session: string | null, cutoff: number): number | null {
    const r =
      session === null
        ? this.stmt<{ id: number }>(
            Q.newestRateableGlobal,
          ).get(cutoff)
        : this.stmt<{ id: number }>(
            Q.newestRateableSession,
          ).get(session, cutoff);
    return r?.id ?? null;
  }

  // Ratings and the reward baseline (an EMA of rewards).

  /**
   * Rates a turn: `pick` runs inside the write transaction and returns the turn id (so choosing "the newest
   * rateable turn" and rating it cannot race with another process). A live rating of the turn is replaced.
   */
  rate(pick: () => number, modelId: string, r: NewRating, actor: Actor): { rating: RatingView; replaced: RatingView[] } {
    const { kind, reward, scale } = rewardOf(r.value);
    return this.write(() => {
      const turnId = pick();
      if (this.stmt('SELECT 1 FROM turns WHERE id = ?').get(turnId) === undefined) {
        throw new NotFoundError(`turn ${turnId} does not exist`, { turnId });
      }
      const now = this.now();
      const replaced: RatingView[] = [];
      let prev: RatingRow | undefined;
      for (const old of this.stmt<RatingRow>('SELECT * FROM ratings WHERE turn_id = ? AND undone_at IS NULL ORDER BY id').all(turnId)) {
        this.stmt('UPDATE ratings SET undone_at = ? WHERE id = ?').run(now, old.id);
        this.emaRemove(old, 'undo');
        replaced.push(this.ratingOut({ ...old, undone_at: now }));
        prev = old;
      }
      // Changing Good to Bad is not a request to throw away the correction, tags or comment written earlier: what
      // the new rating leaves out is carried over from the one it replaces.
      const correction = r.correction ?? prev?.correction ?? null;
      const tags = r.tags.length > 0 || prev === undefined ? JSON.stringify(r.tags) : prev.tags;
      const comment = r.comment ?? prev?.comment ?? null;
      const row = this.insertRating({ turn_id: turnId, model_id: modelId, kind, value: reward, scale, correction, tags, comment, rater: r.rater }, now);
      this.audit(actor, 'rate', `rating:${row.id}`, { turnId, kind, value: reward, replaced: replaced.map((x) => x.id) });
      return { rating: this.ratingOut(row), replaced };
    });
  }

  /**
   * A reward from an environment (the gym, node/gym/): a rating whose value is the reward itself rather than a Good,
   * Bad or 1-5 choice, so a discounted return like 0.81 trains as 0.81. Its kind follows the sign (good above 0, bad
   * below, a neutral 3 of 5 at 0) so lists and the popup show it as a person's rating would be; the round reads the
   * value (data.ts). Other ratings of the turn are replaced, as rate() does.
   */
  rateReward(turnId: number, modelId: string, reward: number, rater: string, actor: Actor): RatingView {
    if (!Number.isFinite(reward)) throw new BadInputError(`a reward must be a finite number, got ${reward}`, 'reward');
    return this.write(() => {
      if (this.stmt('SELECT 1 FROM turns WHERE id = ?').get(turnId) === undefined) throw new NotFoundError(`turn ${turnId} does not exist`, { turnId });
      const now = this.now();
      for (const old of this.stmt<RatingRow>('SELECT * FROM ratings WHERE turn_id = ? AND undone_at IS NULL ORDER BY id').all(turnId)) {
        this.stmt('UPDATE ratings SET undone_at = ? WHERE id = ?').run(now, old.id);
        this.emaRemove(old, 'undo');
      }
      const kind = reward > 0 ? 'good' : reward < 0 ? 'bad' : 'scale';
      const row = this.insertRating({ turn_id: turnId, model_id: modelId, kind, value: reward, scale: kind === 'scale' ? 3 : null, correction: null, tags: '[]', comment: null, rater }, now);
      this.audit(actor, 'rate', `rating:${row.id}`, { turnId, kind, value: reward });
      return this.ratingOut(row);
    });
  }

  private insertRating(
    r: Pick<RatingRow, 'turn_id' | 'model_id' | 'kind' | 'value' | 'scale' | 'correction' | 'tags' | 'comment' | 'rater'>,
    now: number,
  ): RatingRow {
    const row = this.stmt<RatingRow>(
      `INSERT INTO ratings (turn_id, model_id, kind, value, scale, correction, tags, comment, rater, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    ).get(r.turn_id, r.model_id, r.kind, r.value, r.scale, this.sealNullable(r.correction), r.tags, this.sealNullable(r.comment), r.rater, now)!;
    this.emaApply(r.model_id, row.id, r.value, now);
    this.stmt(`UPDATE turns SET state = 'rated' WHERE id = ?`).run(r.turn_id);
    return row;
  }

  /**
   * Undoes the newest live rating (of a turn, of a session, or of any). When that rating had replaced another
   * (rate() marks the replaced one undone at the new one's created_at), the earlier rating is live again, so undo
   * after Bad→Good gives Bad back instead of no rating. It is revived before the baseline replay, which then counts
   * it as the live rating it is again (emaRemove replays live ratings only).
   */
  undo(scope: { session?: string | null; turnId?: number | null }, actor: Actor): { undone: RatingView; restored: RatingView | null } | null {
    return this.write(() => {
      const row =
        scope.turnId != null
          ? this.stmt<RatingRow>(Q.liveRatingOfTurn).get(scope.turnId)
          : scope.session != null
            ? this.stmt<RatingRow>(Q.newestLiveRatingSession).get(scope.session)
            : this.stmt<RatingRow>(Q.newestLiveRating).get();
      if (row === undefined) return null;
      const now = this.now();
      this.stmt('UPDATE ratings SET undone_at = ? WHERE id = ?').run(now, row.id);
      const prev = this.stmt<RatingRow>(
        'SELECT * FROM ratings WHERE turn_id = ? AND id < ? AND undone_at = ? ORDER BY id DESC LIMIT 1',
      ).get(row.turn_id, row.id, row.created_at);
      if (prev !== undefined) this.stmt('UPDATE ratings SET undone_at = NULL WHERE id = ?').run(prev.id);
      this.emaRemove(row, 'undo');
      if (prev === undefined) this.unrateIfNoLiveRating(row.turn_id);
      this.audit(actor, 'undo', `rating:${row.id}`, { turnId: row.turn_id, restored: prev?.id ?? null });
      return { undone: this.ratingOut({ ...row, undone_at: now }), restored: prev === undefined ? null : this.ratingOut({ ...prev, undone_at: null }) };
    });
  }

  deleteRating(id: number, actor: Actor): RatingView | null {
    return this.write(() => {
      const row = this.stmt<RatingRow>('SELECT * FROM ratings WHERE id = ?').get(id);
      if (row === undefined) return null;
      if (row.undone_at === null) this.emaRemove(row, 'delete');
      this.stmt('DELETE FROM ratings WHERE id = ?').run(id);
      this.unrateIfNoLiveRating(row.turn_id);
      this.audit(actor, 'deleteRating', `rating:${id}`, { turnId: row.turn_id, live: row.undone_at === null });
      return this.ratingOut(row);
    });
  }

  private unrateIfNoLiveRating(turnId: number): void {
    this.stmt(
      `UPDATE turns SET state = 'unrated' WHERE id = ? AND state = 'rated'
       AND NOT EXISTS (SELECT 1 FROM ratings WHERE turn_id = ? AND undone_at IS NULL)`,
    ).run(turnId, turnId);
  }

  listRatings(q: RatingQuery): Page<RatingView> {
    const f = new Filter();
    const { where, args } = f;
    if (!q.includeUndone) where.push('r.undone_at IS NULL');
    if (q.kind !== undefined) f.add('r.kind = ?', q.kind);
    if (q.source !== undefined) f.add('t.source = ?', q.source);
    if (q.trained !== undefined) where.push(q.trained ? 'r.run_id IS NOT NULL' : 'r.run_id IS NULL');
    if (q.search !== undefined && q.search.length > 0) {
      const like = `%${likeEscape(q.search)}%`;
      f.add(`(rein_text(t.prompt) LIKE ? ESCAPE '\\' OR rein_text(t.response) LIKE ? ESCAPE '\\' OR rein_text(r.comment) LIKE ? ESCAPE '\\')`, like, like, like);
    }
    if (q.tag !== undefined) f.add('EXISTS (SELECT 1 FROM json_each(r.tags) WHERE json_each.value = ?)', q.tag);
    if (q.since !== undefined) f.add('r.created_at >= ?', q.since);
    if (q.until !== undefined) f.add('r.created_at < ?', q.until);
    const w = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
    const from = 'FROM ratings r JOIN turns t ON t.id = r.turn_id';
    const total = this.stmt<{ n: number }>(`SELECT count(*) AS n ${from} ${w}`).get(...args)!.n;
    const rows = this.stmt<RatingRow>(`SELECT r.* ${from} ${w} ORDER BY r.created_at DESC, r.id DESC LIMIT ? OFFSET ?`).all(
      ...args,
      q.limit,
      q.offset,
    );
    return { items: rows.map((r) => this.ratingOut(r)), total };
  }

  /** The tags on live ratings with how many carry each, most used first (the history's tag filter). */
  listTags(limit = 200): { tag: string; count: number }[] {
    return this.stmt<{ tag: string; count: number }>(
      `SELECT j.value AS tag, count(*) AS count FROM ratings r, json_each(r.tags) j WHERE r.undone_at IS NULL
       GROUP BY j.value ORDER BY count DESC, tag LIMIT ?`,
    ).all(limit);
  }

  ratingsById(ids: readonly number[]): RatingView[] {
    const get = this.stmt<RatingRow>('SELECT * FROM ratings WHERE id = ?');
    return ids.flatMap((id) => {
      const r = get.get(id);
      return r === undefined ? [] : [this.ratingOut(r)];
    });
  }

  emaValue(modelId: string): number | null {
    return this.stmt<{ value: number | null }>('SELECT value FROM ema WHERE model_id = ?').get(modelId)?.value ?? null;
  }

  private emaSet(modelId: string, value: number | null, reason: EmaPoint['reason'], ratingId: number | null, reward: number | null, at: number): void {
    this.stmt(
      `INSERT INTO ema_events (model_id, at, reason, rating_id, reward, value_before, value_after) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ).run(modelId, at, reason, ratingId, reward, this.emaValue(modelId), value);
    this.stmt(
      `INSERT INTO ema (model_id, value, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (model_id) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
    ).run(modelId, value, at);
  }

  /** One EMA step for a new live rating (decay 0.99, starting at 0: common/rewards.ts). */
  emaApply(modelId: string, ratingId: number, reward: number, at: number): void {
    this.emaSet(modelId, emaNext(this.emaValue(modelId), reward), 'rating', ratingId, reward, at);
  }

  /**
   * The reward baseline replayed from the model's ema events, in the order they happened: each live rating's
   * `before` is the EMA as it stood just before it (ReinforceClaw: its advantage is r − before; the first rating
   * ever meets 0), a rollback sets the EMA to the value stored with the version it made active, and ratings undone,
   * deleted or in `skip` are left out as if never made. `rewards` replaces a rating's stored default reward (the
   * reward mapper's, so the baseline follows the rewards the round trains on). `value` is the EMA after the last
   * event, or null when no live rating or rollback has set it. Without `rewards` and `skip`, `value` is the stored
   * EMA (emaValue); undo and delete store the replay without the removed rating.
   */
  emaTrace(modelId: string, o: { rewards?: ReadonlyMap<number, number>; skip?: Iterable<number> } = {}): { before: Map<number, number>; value: number | null } {
    const skip = new Set(o.skip ?? []);
    const events = this.stmt<EmaEventRow>(
      `SELECT e.id, e.reason, e.reward, e.value_after, e.rating_id,
              (r.id IS NOT NULL AND r.undone_at IS NULL) AS live
       FROM ema_events e LEFT JOIN ratings r ON r.id = e.rating_id
       WHERE e.model_id = ? ORDER BY e.id`,
    ).all(modelId);
    const before = new Map<number, number>();
    let v: number | null = null;
    for (const e of events) {
      if (e.reason === 'rating') {
        if (e.live !== 1 || e.rating_id === null || e.reward === null || skip.has(e.rating_id)) continue;
        before.set(e.rating_id, v ?? 0);
        v = emaNext(v, o.rewards?.get(e.rating_id) ?? e.reward);
      } else if (e.reason === 'rollback') {
        v = e.value_after;
      }
    }
    return { before, value: v };
  }

  /** Takes a rating out of its model's baseline exactly: the EMA as if the rating had never been made (emaTrace). */
  private emaRemove(rating: RatingRow, reason: 'undo' | 'delete'): void {
    const ev = this.stmt<{ id: number }>(
      `SELECT id FROM ema_events WHERE rating_id = ? AND reason = 'rating' ORDER BY id DESC LIMIT 1`,
    ).get(rating.id);
    if (ev === undefined) return; // e.g. imported already undone: it never moved the baseline.
    this.emaSet(rating.model_id, this.emaTrace(rating.model_id, { skip: [rating.id] }).value, reason, rating.id, null, this.now());
  }

  emaHistory(modelId: string, limit: number): EmaPoint[] {
    const rows = this.stmt<{ at: number; value_after: number | null; reason: EmaPoint['reason']; rating_id: number | null }>(
      `SELECT at, value_after, reason, rating_id FROM ema_events WHERE model_id = ? ORDER BY id DESC LIMIT ?`,
    ).all(modelId, limit);
    return rows
      .reverse()
      .filter((r) => r.value_after !== null)
      .map((r) => ({ at: r.at, value: r.value_after!, reason: r.reason, ratingId: r.rating_id }));
  }

  /** A rating as the verbs return it: its row and its latest round (ratingView). */
  private ratingOut(r: RatingRow): RatingView {
    return ratingView(r, r.run_id !== null ? { runId: r.run_id, role: 'trained', outcome: 'accepted' } : this.lastRound(r.id));
  }

  /**
   * The latest round that drew or scored a pending rating (run_samples; round.ts writes a row for each rating it drew
   * into a step or held out). Drawn and still pending means its version was not accepted.
   */
  private lastRound(ratingId: number): RatingView['lastRound'] {
    const s = this.stmt<{ run_id: number; role: string; status: string | null }>(
      `SELECT s.run_id, s.role, a.status FROM run_samples s LEFT JOIN adapters a ON a.run_id = s.run_id WHERE s.rating_id = ? ORDER BY s.run_id DESC LIMIT 1`,
    ).get(ratingId);
    if (s === undefined) return null;
    const heldout = s.role === 'heldout';
    return { runId: s.run_id, role: heldout ? 'heldout' : 'trained', outcome: s.status === 'rejected' || (!heldout && s.status === null) ? 'rejected' : 'accepted' };
  }

  /** Marks a rating trained by round `runId` (its version went live). A rating already trained keeps its round. */
  markTrained(ratingId: number, runId: number): void {
    this.stmt('UPDATE ratings SET run_id = ? WHERE id = ? AND run_id IS NULL').run(runId, ratingId);
  }

  /**
   * The directory or GGUF file registered for a model id (`rein model add`, useModel), or null. Ollama models are
   * registered as `ollama:<name>:<tag>` → the blob their manifest pointed to when added.
   */
  modelPath(modelId: string): string | null {
    return this.stmt<{ path: string | null }>('SELECT path FROM models WHERE id = ?').get(modelId)?.path ?? null;
  }

  /** Rein's own list of models (the models table of migration 0001: id, name, path, family = the format). */
  registeredModels(): { id: string; name: string; path: string; format: string; createdAt: number }[] {
    return this.stmt<{ id: string; name: string | null; path: string | null; family: string | null; created_at: number }>(
      'SELECT id, name, path, family, created_at FROM models WHERE path IS NOT NULL ORDER BY created_at, id',
    )
      .all()
      .map((r) => ({ id: r.id, name: r.name ?? r.id, path: r.path!, format: r.family ?? 'hf', createdAt: r.created_at }));
  }

  /** Adds a model to Rein's list, or points an id already there at its current file (an Ollama tag pulled again). */
  registerModel(m: { id: string; name: string; path: string; format: 'hf' | 'gguf' }, actor: Actor): void {
    this.write(() => {
      this.stmt(
        `INSERT INTO models (id, name, path, family, created_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, path = excluded.path, family = excluded.family`,
      ).run(m.id, m.name, m.path, m.format, this.now());
      this.audit(actor, 'addModel', `model:${m.id}`, { path: m.path, format: m.format });
    });
  }

  /** Takes a model off Rein's list; its files, ratings and versions stay. */
  forgetModel(id: string, actor: Actor): boolean {
    return this.write(() => {
      const removed = this.stmt('DELETE FROM models WHERE id = ?').run(id).changes > 0;
      if (removed) this.audit(actor, 'removeModel', `model:${id}`);
      return removed;
    });
  }

  // Status counts.

  counts(modelId: string): {
    ratings: { good: number; bad: number; scaled: number; total: number };
    pending: number;
    parked: number;
    turns: { total: number; unrated: number; toRate: number };
    runningRunId: number | null;
  } {
    const byKind = this.stmt<{ kind: RatingView['kind']; n: number }>(
      'SELECT kind, count(*) AS n FROM ratings WHERE model_id = ? AND undone_at IS NULL GROUP BY kind',
    ).all(modelId);
    const n = (k: RatingView['kind']): number => byKind.find((r) => r.kind === k)?.n ?? 0;
    const pending = this.stmt<{ n: number }>(
      Q.pendingCount,
    ).get(modelId)!.n;
    const total = this.stmt<{ n: number }>('SELECT count(*) AS n FROM turns').get()!.n;
    const unrated = this.stmt<{ n: number }>(`SELECT count(*) AS n FROM turns WHERE state = 'unrated'`).get()!.n;
    const toRate = this.stmt<{ n: number }>(`SELECT count(*) AS n FROM turns WHERE state = 'unrated' AND ${NOT_APP_SOURCE}`).get()!.n;
    const running = this.stmt<{ id: number }>(
      `SELECT id FROM runs WHERE model_id = ? AND status = 'running' ORDER BY id DESC LIMIT 1`,
    ).get(modelId);
    return {
      ratings: { good: n('good'), bad: n('bad'), scaled: n('scale'), total: n('good') + n('bad') + n('scale') },
      pending,
      parked: this.stmt<{ n: number }>(Q.parkedCount).get(modelId)!.n,
      turns: { total, unrated, toRate },
      runningRunId: running?.id ?? null,
    };
  }

  // Runs and adapters (written by the trainer; the verbs read them, roll back and reset).

  /**
   * Makes `version` active (0 = the base model, no adapter). The default is the newest inactive version
   * below the active one: rejected, candidate and already rolled-back versions are never picked implicitly.
   * The chosen version's stored EMA is restored; the rolled-back run's ratings are not requeued.
   */
  rollback(
    modelId: string,
    version: number | undefined,
    actor: Actor,
  ): { active: AdapterView | null; previous: AdapterView | null } {
    return this.write(() => {
      const current = this.adapters.active(modelId);
      let target = version;
      if (target === undefined) {
        if (current === null) throw new ConflictError(`no adapter of ${modelId} is active, so there is nothing to roll back`);
        target = this.adapters.previousInactive(modelId, current.version)?.version ?? 0;
      }
      let chosen: AdapterView | null = null;
      if (target !== 0) {
        chosen = this.adapters.byVersion(modelId, target);
        if (chosen === null) throw new NotFoundError(`adapter version ${target} of ${modelId} does not exist`, { modelId, version: target });
        if (chosen.status === 'rejected' || chosen.status === 'candidate') {
          throw new ConflictError(`adapter version ${target} of ${modelId} is ${chosen.status} and cannot be made active`, {
            modelId,
            version: target,
            status: chosen.status,
          });
        }
        if (current !== null && chosen.id === current.id) return { active: current, previous: current };
      } else if (current === null) {
        return { active: null, previous: null };
      }
      this.adapters.activate(modelId, chosen?.id ?? null, 'rolled_back');
      // The base model (version 0) has no stored baseline, so its rollback leaves the EMA as it is.
      if (chosen !== null && chosen.emaValue !== null) this.emaSet(modelId, chosen.emaValue, 'rollback', null, null, this.now());
      this.audit(actor, 'rollback', `model:${modelId}`, { from: current?.version ?? 0, to: target });
      const active = this.adapters.active(modelId);
      return { active, previous: current === null ? null : { ...current, status: 'rolled_back' } };
    });
  }

  /** Deletes a model's ratings, runs, adapter rows and baseline; its turns stay, back to unrated. */
  /**
   * What reset(modelId) would delete, counted by the same conditions: every rating of the model (undone ones too;
   * `undone` says how many of them), its runs and its adapter versions. The confirmation shows these numbers.
   */
  planReset(modelId: string): { ratings: number; undone: number; runs: number; adapters: number } {
    const r = this.stmt<{ n: number; undone: number }>('SELECT count(*) AS n, count(undone_at) AS undone FROM ratings WHERE model_id = ?').get(modelId)!;
    const runs = this.stmt<{ n: number }>('SELECT count(*) AS n FROM runs WHERE model_id = ?').get(modelId)!.n;
    const adapters = this.stmt<{ n: number }>('SELECT count(*) AS n FROM adapters WHERE model_id = ?').get(modelId)!.n;
    return { ratings: r.n, undone: r.undone, runs, adapters };
  }

  reset(modelId: string, actor: Actor): { ratings: number; runs: number; adapters: AdapterView[]; turnIds: number[] } {
    return this.write(() => {
      const turnIds = this.stmt<{ turn_id: number }>('SELECT DISTINCT turn_id FROM ratings WHERE model_id = ?').all(modelId);
      const ratings = this.stmt('DELETE FROM ratings WHERE model_id = ?').run(modelId).changes;
      for (const t of turnIds) this.unrateIfNoLiveRating(t.turn_id);
      const adapters = this.adapters.list(modelId);
      this.stmt('DELETE FROM adapters WHERE model_id = ?').run(modelId);
      // The reward model learned from the ratings reset deletes; its predictions go with it (ON DELETE CASCADE).
      this.stmt('DELETE FROM reward_models WHERE model_id = ?').run(modelId);
      const runs = this.stmt('DELETE FROM runs WHERE model_id = ?').run(modelId).changes;
      this.stmt('DELETE FROM ema_events WHERE model_id = ?').run(modelId);
      this.stmt('DELETE FROM ema WHERE model_id = ?').run(modelId);
      // The votes name versions that no longer exist; a new v1 must not inherit the old one's record.
      this.stmt('DELETE FROM arena_matches WHERE model_id = ?').run(modelId);
      this.audit(actor, 'reset', `model:${modelId}`, { ratings, runs, adapters: adapters.length });
      return { ratings, runs, adapters, turnIds: turnIds.map((t) => t.turn_id) };
    });
  }

  auditLog(limit = 100): { at: number; actor: string; action: string; target: string | null; detail: unknown }[] {
    return this.stmt<{ at: number; actor: string; action: string; target: string | null; detail: string }>(
      'SELECT at, actor, action, target, detail FROM audit ORDER BY id DESC LIMIT ?',
    )
      .all(limit)
      .map((r) => ({ ...r, detail: JSON.parse(r.detail) as unknown }));
  }
}
