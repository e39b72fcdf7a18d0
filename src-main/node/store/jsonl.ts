// Export to JSONL and import back. One record per line: a header carrying the schema version, then
// {"type":"turn"}, {"type":"run"}, {"type":"rating"} and {"type":"weakLabel"} records. A rating says whether the user
// gave it (`source: "explicit"`) or confirmed a label Rein read from their reaction (`"implicit"`, with the rule, its
// confidence and the words); a weakLabel record is a label nobody confirmed, so nobody takes it for a rating. Import validates the whole file before
// writing anything, skips turns already present (by source + event id) together with their ratings,
// remaps turn, run and rating ids, and writes everything in one transaction.
import path from 'node:path';
import { z } from 'zod';
import type { Actor } from '../../common/api.ts';
import { ContextMessageSchema, TurnPolicy } from '../../common/api.ts';
import { BadInputError, ReinError } from '../../common/errors.ts';
import { rewardOf } from '../../common/rewards.ts';
import { redact } from '../../common/redact.ts';
import { parseImplicitRater, readSignals } from '../../common/implicit/reader.ts';
import { SIGNAL_KINDS, type SignalKind } from '../../common/implicit/signals.ts';
import type { FieldCipher } from './cipher.ts';
import { decodeLogprobs, decodeTokens, encodeLogprobs, encodeTokens } from './codec.ts';
import { scrubRating, scrubTurn } from './scrub.ts';
import { MIGRATIONS } from './migrations/index.ts';
import { ARENA_BLIND } from './rows.ts';
import type { RatingRow, RunRow, TurnRow } from './rows.ts';
import type { Store } from './store.ts';
import { NotRegularTargetError, writeAll, writeFileAtomic } from '../fs-atomic.ts';
import { readRegularFile } from '../fs-read.ts';

export const EXPORT_FORMAT = 'rein-export';
const SCHEMA_VERSION = MIGRATIONS.length;

const Header = z.strictObject({
  type: z.literal('header'),
  format: z.literal(EXPORT_FORMAT),
  schemaVersion: z.number().int().positive(),
  exportedAt: z.number().int(),
});

const TurnRecord = z.strictObject({
  type: z.literal('turn'),
  id: z.number().int().positive(),
  source: z.string().min(1).max(64),
  session: z.string().max(512).nullable(),
  eventId: z.string().min(1).max(512),
  createdAt: z.number().int(),
  prompt: z.string(),
  context: z.array(ContextMessageSchema),
  response: z.string(),
  model: z.string().nullable(),
  tokens: z.array(z.number().int().nonnegative()).nullable(),
  logprobs: z.array(z.number().max(0)).nullable(),
  adapterVersion: z.number().int().nonnegative().nullable(),
  /** Since schema 2 (migration 0002); a file from schema 1 has none: its μ is of unknown provenance. */
  policy: TurnPolicy.nullable().optional(),
  state: z.enum(['unrated', 'rated', 'ignored', 'expired']),
  truncated: z.boolean(),
});

const RunRecord = z.strictObject({
  type: z.literal('run'),
  id: z.number().int().positive(),
  modelId: z.string().min(1),
  status: z.enum(['queued', 'running', 'succeeded', 'failed', 'cancelled']),
  trigger: z.enum(['auto', 'manual', 'retrain']),
  createdAt: z.number().int(),
  startedAt: z.number().int().nullable(),
  finishedAt: z.number().int().nullable(),
  fromVersion: z.number().int().nonnegative().nullable(),
  config: z.unknown(),
  metrics: z.unknown(),
  error: z.string().nullable(),
  adapterVersion: z.number().int().nonnegative().nullable(),
  samples: z.array(
    z.strictObject({ ratingId: z.number().int().positive(), role: z.enum(['pending', 'replay', 'heldout']), advantage: z.number().nullable() }),
  ),
});

const RatingRecord = z.strictObject({
  type: z.literal('rating'),
  id: z.number().int().positive(),
  turnId: z.number().int().positive(),
  modelId: z.string().min(1),
  kind: z.enum(['good', 'bad', 'scale']),
  value: z.number(),
  scale: z.number().int().min(1).max(5).nullable(),
  correction: z.string().nullable(),
  tags: z.array(z.string()),
  comment: z.string().nullable(),
  rater: z.string().min(1),
  createdAt: z.number().int(),
  undoneAt: z.number().int().nullable(),
  runId: z.number().int().positive().nullable(),
  /** Since weak labels: `implicit` when the rating confirms (or flips) a label read from the user's reaction. */
  source: z.enum(['explicit', 'implicit']).optional(),
  implicit: z
    .strictObject({ rule: z.string().min(1), flipped: z.boolean(), confidence: z.number().min(0).max(1).nullable(), quote: z.string().nullable(), evidence: z.string().nullable() })
    .nullable()
    .optional(),
});

/**
 * A weak label no one confirmed (common/implicit/reader.ts): read at export time from the turn's signals that are not
 * dismissed, for a turn without a live rating. It is no rating: import reads it and stores nothing (the signals it
 * was read from are not exported).
 */
const WeakLabelRecord = z.strictObject({
  type: z.literal('weakLabel'),
  turnId: z.number().int().positive(),
  source: z.literal('implicit'),
  value: z.enum(['good', 'bad']),
  rule: z.string().min(1),
  confidence: z.number().min(0).max(1),
  /** The words (or event) that fired the rule, and the whole signal they came from. */
  quote: z.string(),
  evidence: z.string(),
  signal: z.enum(SIGNAL_KINDS as [SignalKind, ...SignalKind[]]),
});

const Record_ = z.discriminatedUnion('type', [TurnRecord, RunRecord, RatingRecord, WeakLabelRecord]);
type TurnRecord = z.infer<typeof TurnRecord>;
type RunRecord = z.infer<typeof RunRecord>;
type RatingRecord = z.infer<typeof RatingRecord>;
type WeakLabelRecord = z.infer<typeof WeakLabelRecord>;

/**
 * Every string of a stored JSON value redacted, keys included. An export redacts all its text again (issue #19): a
 * row stored before a pattern was added, or written by another tool, leaves the machine redacted by today's list. A
 * Map, then fromEntries, so that no key can set a prototype.
 */
function redactDeep(v: unknown): unknown {
  if (typeof v === 'string') return redact(v);
  if (Array.isArray(v)) return v.map(redactDeep);
  if (v !== null && typeof v === 'object') {
    const out = new Map<string, unknown>();
    for (const [k, x] of Object.entries(v)) out.set(redact(k), redactDeep(x));
    return Object.fromEntries(out);
  }
  return v;
}

export function exportJsonl(store: Store, file: string, actor: Actor): { path: string; turns: number; ratings: number } {
  // Written beside the target and renamed into place, so a failed export never leaves half a file.
  let turns = 0;
  let ratings = 0;
  try {
    writeExport(file);
  } catch (e) {
    // A folder that does not exist, a read-only disk, a path that is a folder: the user's to fix, named with the path.
    if (e instanceof NotRegularTargetError) throw new BadInputError(`exportData: ${e.message}`, 'path', { what: e.what });
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('E')) throw new BadInputError(`exportData: cannot write ${file}: ${writeFailure(code, file, e as Error)}`, 'path', { code });
    throw e;
  }
  store.write(() => store.audit(actor, 'exportData', file, { turns, ratings }));
  return { path: file, turns, ratings };

  function writeExport(file: string): void {
    writeFileAtomic(
      file,
      (fd) => {
        let buf: string[] = [];
        let size = 0;
        const line = (rec: unknown): void => {
          // Encryption on: every record but the header leaves sealed with the current key (importJsonl opens it).
          const json = JSON.stringify(rec);
          const sealed = store.cipher !== null && (rec as { type?: unknown }).type !== 'header';
          const s = (sealed ? JSON.stringify({ type: 'sealed', data: store.cipher!.seal(json).toString('base64') }) : json) + '\n';
          buf.push(s);
          size += s.length;
          if (size > 1 << 20) flush();
        };
        const flush = (): void => {
          writeAll(fd, Buffer.from(buf.join(''), 'utf8'));
          buf = [];
          size = 0;
        };
        // One read transaction gives a consistent snapshot while other processes keep writing.
        store.db.transaction(() => {
          line({ type: 'header', format: EXPORT_FORMAT, schemaVersion: SCHEMA_VERSION, exportedAt: store.now() });
          // An undecided arena answer leaves without its version or model name (ARENA_BLIND), as on every other route.
          for (const t of store.stmt<TurnRow & { blind: number }>(`SELECT *, ${ARENA_BLIND} FROM turns ORDER BY id`).iterate()) {
            const rec: TurnRecord = {
              type: 'turn',
              id: t.id,
              source: t.source,
              session: t.session === null ? null : redact(t.session),
              eventId: redact(t.event_id),
              createdAt: t.created_at,
              prompt: redact(t.prompt),
              context: redactDeep(JSON.parse(t.context)) as TurnRecord['context'],
              response: redact(t.response),
              model: t.model === null || t.blind === 1 ? null : redact(t.model),
              tokens: decodeTokens(t.tokens),
              logprobs: decodeLogprobs(t.logprobs),
              adapterVersion: t.blind === 1 ? null : t.adapter_version,
              policy: t.policy === null ? null : TurnPolicy.parse(JSON.parse(t.policy)),
              state: t.state,
              truncated: t.truncated === 1,
            };
            line(rec);
            turns++;
          }
          const samples = store.stmt<{ rating_id: number; role: RunRecord['samples'][number]['role']; advantage: number | null }>(
            'SELECT rating_id, role, advantage FROM run_samples WHERE run_id = ? ORDER BY rating_id',
          );
          for (const r of store.stmt<Omit<RunRow, 'samples'>>('SELECT * FROM runs ORDER BY id').iterate()) {
            const rec: RunRecord = {
              type: 'run',
              id: r.id,
              modelId: r.model_id,
              status: r.status,
              trigger: r.trigger,
              createdAt: r.created_at,
              startedAt: r.started_at,
              finishedAt: r.finished_at,
              fromVersion: r.from_version,
              config: JSON.parse(r.config) as unknown,
              metrics: r.metrics === null ? null : (JSON.parse(r.metrics) as unknown),
              error: r.error,
              adapterVersion: r.adapter_version,
              samples: samples.all(r.id).map((s) => ({ ratingId: s.rating_id, role: s.role, advantage: s.advantage })),
            };
            line(rec);
          }
          for (const r of store.stmt<RatingRow>('SELECT * FROM ratings ORDER BY id').iterate()) {
            const implicit = implicitOf(store, r);
            const rec: RatingRecord = {
              type: 'rating',
              id: r.id,
              turnId: r.turn_id,
              modelId: r.model_id,
              kind: r.kind,
              value: r.value,
              scale: r.scale,
              correction: r.correction === null ? null : redact(r.correction),
              tags: (JSON.parse(r.tags) as string[]).map((tag) => redact(tag)),
              comment: r.comment === null ? null : redact(r.comment),
              rater: redact(r.rater),
              createdAt: r.created_at,
              undoneAt: r.undone_at,
              runId: r.run_id,
              source: implicit === null ? 'explicit' : 'implicit',
              implicit,
            };
            line(rec);
            ratings++;
          }
          // Unconfirmed weak labels, as the reader reads them now (the card offers those at or above its threshold).
          for (const { turn_id: turnId } of store.stmt<{ turn_id: number }>('SELECT DISTINCT turn_id FROM signals WHERE dismissed_at IS NULL ORDER BY turn_id').iterate()) {
            if (store.liveRating(turnId) !== null) continue;
            const signals = store.signals.ofTurn(turnId);
            const label = readSignals(signals);
            const from = signals.find((x) => x.id === label?.signalId);
            if (label === null || from === undefined) continue;
            const rec: WeakLabelRecord = { type: 'weakLabel', turnId, source: 'implicit', value: label.value, rule: label.rule, confidence: label.confidence, quote: redact(label.quote), evidence: redact(from.evidence), signal: from.kind };
            line(rec);
          }
        })();
        flush();
      },
      // fsync: a full disk or a quota can fail only at the flush (delayed allocation, network filesystems); it must
      // fail before the rename, so no short file takes the export's name (full-disk.test.ts).
      { mode: 0o600, fsync: true },
    );
  }
}

/**
 * What an export says of a rating made by confirming a weak label (rater implicit:<rule>): the rule, whether the user
 * flipped it, and the confidence, quote and signal text of the label as the turn's signals still read; null for a
 * rating the user gave themselves.
 */
function implicitOf(store: Store, r: RatingRow): RatingRecord['implicit'] {
  const rater = parseImplicitRater(r.rater);
  if (rater === null) return null;
  const signals = store.signals.ofTurn(r.turn_id);
  const label = readSignals(signals, 0);
  const same = label !== null && label.rule === rater.rule ? label : null;
  const from = signals.find((x) => x.id === same?.signalId);
  return { ...rater, confidence: same?.confidence ?? null, quote: same === null ? null : redact(same.quote), evidence: from === undefined ? null : redact(from.evidence) };
}

/** Why a file could not be written, in words; the system's own message (it names a temporary file) otherwise. */
function writeFailure(code: string, file: string, e: Error): string {
  const dir = path.dirname(file);
  switch (code) {
    case 'ENOENT':
      return `the folder ${dir} does not exist (ENOENT)`;
    case 'ENOTDIR':
      return `part of the path is a file, not a folder (ENOTDIR)`;
    case 'EACCES':
    case 'EPERM':
      return `no permission to write in ${dir} (${code})`;
    case 'EISDIR':
      return `${file} is a folder (EISDIR)`;
    case 'EROFS':
      return `the disk is read-only (EROFS)`;
    case 'ENOSPC':
      return `the disk is full (ENOSPC)`;
    case 'EDQUOT':
      return `the disk quota is used up (EDQUOT)`;
    case 'EFBIG':
      return `the file would be larger than this system allows (EFBIG)`;
    default:
      return e.message;
  }
}

export interface ImportResult {
  turns: number;
  ratings: number;
  skipped: number;
  /** Lines that are not a valid record (not JSON, a field of the wrong type, a rating of a turn the file lacks): left
   *  out, and counted, while every good line is imported (issue #19). */
  bad: number;
  /** The first BAD_LINES_SHOWN of them, with why. */
  badLines: { line: number; reason: string }[];
  turnIds: number[];
  ratingIds: number[];
}

/** V8 strings stop near 2^29 characters; an export this large would need a streaming reader. */
export const IMPORT_MAX_BYTES = 500 * 1024 * 1024;

const BAD_LINES_SHOWN = 20;

interface BadLines {
  count: number;
  shown: { line: number; reason: string }[];
}

function parseFile(file: string, cipher: FieldCipher | null): { turns: TurnRecord[]; runs: RunRecord[]; ratings: RatingRecord[]; bad: BadLines } {
  let text: string;
  try {
    text = readRegularFile(file, IMPORT_MAX_BYTES);
  } catch (e) {
    throw new BadInputError(`importData: cannot read ${file}: ${(e as Error).message}`, 'path');
  }
  const turns: TurnRecord[] = [];
  const runs: RunRecord[] = [];
  const ratings: RatingRecord[] = [];
  let header = false;
  const bad: BadLines = { count: 0, shown: [] };
  const badLine = (line: number, reason: string): void => {
    bad.count++;
    if (bad.shown.length < BAD_LINES_SHOWN) bad.shown.push({ line, reason: reason.slice(0, 300) });
  };
  const lineOf = new Map<object, number>();
  const lines = text.split('\n');
  lines.forEach((raw, i) => {
    const lineNo = i + 1;
    if (raw.trim().length === 0) return;
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch (e) {
      if (!header) throw new BadInputError(`importData: line ${lineNo} is not JSON (${(e as Error).message})`, 'path', { line: lineNo });
      return badLine(lineNo, `not JSON (${(e as Error).message})`);
    }
    const why = (err: z.ZodError): string => {
      const issue = err.issues[0]!;
      return `${issue.path.map(String).join('.') || 'record'}: ${issue.message}`;
    };
    if (!header) {
      const h = Header.safeParse(json);
      if (!h.success) {
        const issue = h.error.issues[0]!;
        const field = issue.path.map(String).join('.');
        throw new BadInputError(`importData: line ${lineNo}: ${why(h.error)}`, field || undefined, { line: lineNo });
      }
      const v = h.data!.schemaVersion;
      if (v > SCHEMA_VERSION) {
        throw new ReinError('bad_input', `importData: ${file} was written by a newer Rein (schema ${v}, this one knows ${SCHEMA_VERSION})`, {
          field: 'schemaVersion',
        });
      }
      header = true;
      return;
    }
    if ((json as { type?: unknown } | null)?.type === 'sealed') {
      const data = (json as { data?: unknown }).data;
      if (cipher === null) return badLine(lineNo, 'sealed (an encrypted export) and encryption is off here: enable it with the keyring that wrote the file');
      try {
        json = JSON.parse(cipher.open(Buffer.from(typeof data === 'string' ? data : '', 'base64')));
      } catch (e) {
        return badLine(lineNo, `sealed, and it does not open: ${(e as Error).message}`);
      }
    }
    const r = Record_.safeParse(json);
    if (!r.success) return badLine(lineNo, why(r.error));
    const rec = r.data;
    lineOf.set(rec, lineNo);
    if (rec.type === 'turn') turns.push(rec);
    else if (rec.type === 'run') runs.push(rec);
    else if (rec.type === 'weakLabel') return;
    else {
      const expected = rewardOf(rec.kind === 'scale' ? (rec.scale ?? 0) : rec.kind).reward;
      if (expected !== rec.value) return badLine(lineNo, `value: ${rec.value} does not match ${rec.kind} ${rec.scale ?? ''}`.trim());
      ratings.push(rec);
    }
  });
  if (!header) throw new BadInputError(`importData: ${file} has no ${EXPORT_FORMAT} header line`, 'path');
  const turnIds = new Set(turns.map((t) => t.id));
  const runIds = new Set(runs.map((r) => r.id));
  const liveTurns = new Set<number>();
  const kept: RatingRecord[] = [];
  for (const r of ratings) {
    const lineNo = lineOf.get(r)!;
    if (!turnIds.has(r.turnId)) badLine(lineNo, `turnId: rating ${r.id} refers to turn ${r.turnId}, which is not in the file`);
    else if (r.runId !== null && !runIds.has(r.runId)) badLine(lineNo, `runId: rating ${r.id} refers to run ${r.runId}, which is not in the file`);
    else if (r.undoneAt === null && liveTurns.has(r.turnId)) badLine(lineNo, `undoneAt: turn ${r.turnId} has two live ratings`);
    else {
      if (r.undoneAt === null) liveTurns.add(r.turnId);
      kept.push(r);
    }
  }
  bad.shown.sort((a, b) => a.line - b.line);
  return { turns, runs, ratings: kept, bad };
}

/** Imports an export; text is capped and redacted again (both are no-ops on Rein's own exports). */
export function importJsonl(store: Store, file: string, actor: Actor, maxTextChars: number): ImportResult {
  const { turns, runs, ratings, bad } = parseFile(file, store.cipher);
  return store.write(() => {
    const turnMap = new Map<number, number>();
    const runMap = new Map<number, number>();
    const ratingMap = new Map<number, number>();
    const result: ImportResult = { turns: 0, ratings: 0, skipped: 0, bad: bad.count, badLines: bad.shown, turnIds: [], ratingIds: [] };
    const insertTurn = store.stmt<{ id: number }>(
      `INSERT INTO turns (source, session, event_id, created_at, prompt, context, response, model, tokens, logprobs,
         adapter_version, policy, state, truncated)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source, event_id) DO NOTHING RETURNING id`,
    );
    for (const t of turns) {
      // Each record is redacted as a captured turn would be, under its own time budget (store/scrub.ts).
      const text = scrubTurn({ ...t, policy: t.policy === undefined || t.tokens === null ? null : t.policy }, maxTextChars);
      // 'rated' is restored below from the live rating itself, so a turn is never rated without one.
      const state = t.state === 'rated' ? 'unrated' : t.state;
      const row = insertTurn.get(
        t.source,
        text.session,
        text.eventId,
        t.createdAt,
        store.seal(text.prompt),
        store.seal(JSON.stringify(text.context)),
        store.seal(text.response),
        text.model,
        t.tokens === null ? null : encodeTokens(t.tokens),
        t.logprobs === null ? null : encodeLogprobs(t.logprobs),
        t.adapterVersion,
        text.policy === null ? null : JSON.stringify(text.policy),
        state,
        t.truncated || text.cut ? 1 : 0,
      );
      if (row === undefined) {
        result.skipped++;
        continue;
      }
      turnMap.set(t.id, row.id);
      result.turns++;
      result.turnIds.push(row.id);
    }
    const runById = new Map(runs.map((r) => [r.id, r]));
    const insertRun = store.stmt<{ id: number }>(
      `INSERT INTO runs (model_id, status, trigger, created_at, started_at, finished_at, from_version, config, metrics, error,
         adapter_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    );
    // A run is imported with the first of its ratings that is imported; runs none of whose ratings are new
    // (the same file imported twice) are not duplicated.
    const runFor = (oldId: number): number => {
      const have = runMap.get(oldId);
      if (have !== undefined) return have;
      const r = runById.get(oldId)!;
      const id = insertRun.get(
        r.modelId,
        r.status,
        r.trigger,
        r.createdAt,
        r.startedAt,
        r.finishedAt,
        r.fromVersion,
        JSON.stringify(r.config ?? {}),
        r.metrics === null || r.metrics === undefined ? null : JSON.stringify(r.metrics),
        r.error,
        r.adapterVersion,
      )!.id;
      runMap.set(oldId, id);
      return id;
    };
    const insertRating = store.stmt<{ id: number }>(
      `INSERT INTO ratings (turn_id, model_id, kind, value, scale, correction, tags, comment, rater, created_at, undone_at, run_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    );
    const now = store.now();
    for (const r of ratings) {
      const turnId = turnMap.get(r.turnId);
      if (turnId === undefined) {
        result.skipped++;
        continue;
      }
      const runId = r.runId === null ? null : runFor(r.runId);
      const text = scrubRating(r);
      const id = insertRating.get(
        turnId,
        r.modelId,
        r.kind,
        r.value,
        r.scale,
        store.sealNullable(text.correction),
        JSON.stringify(text.tags),
        store.sealNullable(text.comment),
        text.rater,
        r.createdAt,
        r.undoneAt,
        runId,
      )!.id;
      ratingMap.set(r.id, id);
      if (r.undoneAt === null) {
        // An imported live rating moves its model's baseline like a new one (and can be undone exactly).
        store.emaApply(r.modelId, id, r.value, now);
        store.stmt(`UPDATE turns SET state = 'rated' WHERE id = ?`).run(turnId);
      }
      result.ratings++;
      result.ratingIds.push(id);
    }
    const insertSample = store.stmt('INSERT INTO run_samples (run_id, rating_id, role, advantage) VALUES (?, ?, ?, ?)');
    for (const r of runs) {
      for (const s of r.samples) {
        const ratingId = ratingMap.get(s.ratingId);
        if (ratingId === undefined) continue;
        insertSample.run(runFor(r.id), ratingId, s.role, s.advantage);
      }
    }
    store.audit(actor, 'importData', file, { turns: result.turns, ratings: result.ratings, runs: runMap.size, skipped: result.skipped });
    return result;
  });
}
