import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from './db.ts';
import { checkOrder, migrate, MigrationOrderError, SchemaTooNewError, userVersion } from './migrate.ts';
import { MIGRATIONS } from './migrations/index.ts';
import * as m0001 from './migrations/0001-init.ts';
import * as m0002 from './migrations/0002-turn-policy.ts';
import * as m0003 from './migrations/0003-arena.ts';
import { ARENA_Q } from './arena.ts';
import * as m0004 from './migrations/0004-reward-models.ts';
import * as m0005 from './migrations/0005-chats.ts';
import * as m0006 from './migrations/0006-parked-ratings.ts';
import { CHATS_Q } from './chats.ts';
import * as m0007 from './migrations/0007-signals.ts';
import { SIGNALS_Q } from './signals.ts';
import * as m0008 from './migrations/0008-prompt-ids.ts';
import * as m0009 from './migrations/0009-signal-kinds.ts';
import { PROMPT_IDS_Q } from './prompt-ids.ts';
import { Q } from './store.ts';

const dirs: string[] = [];
function tmpFile(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'rein-db-'));
  dirs.push(dir);
  return path.join(dir, 'rein.db');
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function plan(db: Database.Database, sql: string, ...args: unknown[]): string {
  return db
    .prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .all(...args)
    .map((r) => (r as { detail: string }).detail)
    .join(' | ');
}

describe('migration runner', () => {
  it('opens with WAL, foreign keys, a busy timeout and the latest user_version', () => {
    const db = openDatabase(tmpFile());
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(db.pragma('busy_timeout', { simple: true })).toBe(5000);
    expect(db.pragma('synchronous', { simple: true })).toBe(1); // NORMAL
    expect(userVersion(db)).toBe(MIGRATIONS.length);
    expect(migrate(db, MIGRATIONS)).toEqual([]);
    db.close();
  });

  it('refuses a database from the future, naming both versions', () => {
    const file = tmpFile();
    const raw = new Database(file);
    raw.pragma('user_version = 99');
    raw.close();
    let err: unknown;
    try {
      openDatabase(file);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SchemaTooNewError);
    expect((err as SchemaTooNewError).message).toMatch(new RegExp(`schema version 99, newer than this Rein knows \\(${MIGRATIONS.length}\\)`));
  });

  it('checks the numbering', () => {
    expect(() => checkOrder([{ version: 2, name: 'x', sql: '' }])).toThrow(MigrationOrderError);
    expect(() => checkOrder([m0001, m0001])).toThrow(/expected 2/);
  });

  it('runs pending migrations in one transaction: a failing one leaves nothing behind', () => {
    const db = new Database(tmpFile());
    const broken = [m0001, { version: 2, name: 'broken', sql: 'CREATE TABLE later (a); THIS IS NOT SQL' }];
    expect(() => migrate(db, broken)).toThrow();
    expect(userVersion(db)).toBe(0);
    expect(db.prepare(`SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'`).get()).toEqual({ n: 0 });
    expect(migrate(db, MIGRATIONS)).toEqual(MIGRATIONS.map((m) => m.version));
    db.close();
  });
});

describe('migration 0001-init', () => {
  function fresh(): Database.Database {
    const db = new Database(tmpFile());
    db.pragma('foreign_keys = ON');
    expect(migrate(db, [m0001])).toEqual([1]);
    return db;
  }
  const insTurn = (db: Database.Database, source: string, eventId: string, session: string | null, at: number): number =>
    Number(
      db
        .prepare(`INSERT INTO turns (source, session, event_id, created_at, prompt, response) VALUES (?, ?, ?, ?, 'p', 'r')`)
        .run(source, session, eventId, at).lastInsertRowid,
    );
  const insRating = (db: Database.Database, turnId: number, at: number): number =>
    Number(
      db
        .prepare(`INSERT INTO ratings (turn_id, model_id, kind, value, rater, created_at) VALUES (?, 'm', 'good', 1, 'user', ?)`)
        .run(turnId, at).lastInsertRowid,
    );

  it('keeps turns unique per source and event id, and cascades deletes to ratings and samples', () => {
    const db = fresh();
    const t = insTurn(db, 'api', 'e1', 's', 1);
    expect(() => insTurn(db, 'api', 'e1', 's', 2)).toThrow(/UNIQUE/);
    insTurn(db, 'codex', 'e1', 's', 2);
    const r = insRating(db, t, 3);
    const run = Number(db.prepare(`INSERT INTO runs (model_id, status, trigger, created_at) VALUES ('m', 'succeeded', 'auto', 4)`).run().lastInsertRowid);
    db.prepare(`INSERT INTO run_samples (run_id, rating_id, role) VALUES (?, ?, 'pending')`).run(run, r);
    db.prepare('UPDATE ratings SET run_id = ? WHERE id = ?').run(run, r);
    expect(() => insRating(db, 999, 5)).toThrow(/FOREIGN KEY/);
    db.prepare('DELETE FROM turns WHERE id = ?').run(t);
    expect(db.prepare('SELECT count(*) AS n FROM ratings').get()).toEqual({ n: 0 });
    expect(db.prepare('SELECT count(*) AS n FROM run_samples').get()).toEqual({ n: 0 });
    db.close();
  });

  it('checks states, kinds, statuses and one active adapter per model', () => {
    const db = fresh();
    const t = insTurn(db, 'api', 'e1', null, 1);
    expect(() => db.prepare(`UPDATE turns SET state = 'weird' WHERE id = ?`).run(t)).toThrow(/CHECK/);
    expect(() =>
      db.prepare(`INSERT INTO ratings (turn_id, model_id, kind, value, scale, rater, created_at) VALUES (?, 'm', 'scale', 0, 9, 'u', 1)`).run(t),
    ).toThrow(/CHECK/);
    const ad = db.prepare(`INSERT INTO adapters (model_id, version, status, path, created_at) VALUES ('m', ?, ?, 'p', 1)`);
    ad.run(1, 'active');
    ad.run(2, 'inactive');
    expect(() => ad.run(3, 'active')).toThrow(/UNIQUE/);
    expect(() => ad.run(2, 'inactive')).toThrow(/UNIQUE/);
    expect(() => ad.run(0, 'inactive')).toThrow(/CHECK/);
    expect(() => db.prepare(`INSERT INTO ema_events (model_id, at, reason) VALUES ('m', 1, 'guess')`).run()).toThrow(/CHECK/);
    db.close();
  });

  it('serves the real queries from indexes (EXPLAIN QUERY PLAN)', () => {
    const db = fresh();
    migrate(db, MIGRATIONS);
    for (let i = 0; i < 50; i++) {
      const t = insTurn(db, 'api', `e${i}`, `s${i % 5}`, i);
      if (i % 2 === 0) insRating(db, t, i);
    }
    // No ANALYZE: the app never runs it, so these are the plans users get.
    const cases: [string, string, unknown[]][] = [
      ['newest rateable turn of a session', Q.newestRateableSession, ['s1', 0]],
      ['newest rateable turn', Q.newestRateableGlobal, [0]],
      ['pending ratings of a model', Q.pendingCount, ['m']],
      ['newest live rating (undo)', Q.newestLiveRating, []],
      ['ratings by time', Q.ratingsByTime, [50, 0]],
      ['live rating of a turn', Q.liveRatingOfTurn, [1]],
    ];
    const plans = Object.fromEntries(cases.map(([name, sql, args]) => [name, plan(db, sql, ...args)]));
    expect(plans['newest rateable turn of a session']).toMatch(/SEARCH turns USING (COVERING )?INDEX turns_session_state_created \(session=\? AND state=\? AND created_at>\?\)/);
    expect(plans['newest rateable turn']).toMatch(/SEARCH turns USING (COVERING )?INDEX turns_state_created \(state=\? AND created_at>\?\)/);
    expect(plans['pending ratings of a model']).toMatch(/USING (COVERING )?INDEX ratings_model_pending \(model_id=\? AND run_id=\?\)/);
    expect(plans['newest live rating (undo)']).toMatch(/SCAN ratings USING INDEX ratings_live_created/);
    expect(plans['ratings by time']).toMatch(/SCAN r USING INDEX ratings_live_created/);
    expect(plans['live rating of a turn']).toMatch(/INDEX ratings_turn \(turn_id=\?\)/);
    for (const p of Object.values(plans)) expect(p).not.toMatch(/TEMP B-TREE/);
    const sessionUndo = plan(db, Q.newestLiveRatingSession, 's1');
    expect(sessionUndo).toMatch(/INDEX/);
    expect(plan(db, `SELECT id FROM ema_events WHERE rating_id = ? AND reason = 'rating' ORDER BY id DESC LIMIT 1`, 1)).toMatch(
      /INDEX ema_events_rating \(rating_id=\?\)/,
    );
    expect(plan(db, `SELECT * FROM adapters WHERE model_id = ? AND status = 'active'`, 'm')).toMatch(/INDEX adapters_one_active/);
    db.close();
  });
});

describe('migration 0002-turn-policy', () => {
  it('adds turns.policy, NULL on the rows it finds (their μ is of unknown provenance), and keeps every row', () => {
    const db = new Database(tmpFile());
    db.pragma('foreign_keys = ON');
    expect(migrate(db, [m0001])).toEqual([1]);
    db.prepare(`INSERT INTO turns (source, event_id, created_at, prompt, response, tokens, logprobs) VALUES ('proxy', 'e', 1, 'p', 'r', x'01000000', x'00000000')`).run();
    expect(migrate(db, [m0001, m0002])).toEqual([2]);
    expect(db.prepare('SELECT source, prompt, response, hex(tokens) AS tokens, policy FROM turns').all()).toEqual([{ source: 'proxy', prompt: 'p', response: 'r', tokens: '01000000', policy: null }]);
    db.prepare(`UPDATE turns SET policy = '{"modelId":"m","temperature":0.7,"topP":0.9}'`).run();
    expect(JSON.parse((db.prepare('SELECT policy FROM turns').get() as { policy: string }).policy)).toEqual({ modelId: 'm', temperature: 0.7, topP: 0.9 });
    db.close();
  });
});

describe('migration 0003-arena', () => {
  it('adds arena_matches beside the rows it finds; a vote comes with its time; the statistics read the voted matches from their index', () => {
    const db = new Database(tmpFile());
    db.pragma('foreign_keys = ON');
    expect(migrate(db, [m0001, m0002])).toEqual([1, 2]);
    const turn = (e: string) => Number(db.prepare(`INSERT INTO turns (source, event_id, created_at, prompt, response) VALUES ('arena', ?, 1, 'p', 'r')`).run(e).lastInsertRowid);
    const [a, b] = [turn('a'), turn('b')];
    expect(migrate(db, [m0001, m0002, m0003])).toEqual([3]);
    expect(db.prepare('SELECT count(*) AS n FROM turns').get()).toEqual({ n: 2 });
    const ins = db.prepare('INSERT INTO arena_matches (model_id, prompt, turn_a, turn_b, version_a, version_b, created_at, vote, voted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)');
    ins.run('m', 'p', a, b, 1, 0, 5, null, null);
    ins.run('m', 'p', a, b, 0, 1, 6, 'a', 7);
    expect(() => ins.run('m', 'p', a, b, 1, 0, 5, 'a', null)).toThrow(/CHECK/);
    expect(() => ins.run('m', 'p', a, b, 1, 0, 5, 'win', 1)).toThrow(/CHECK/);
    expect(db.prepare(ARENA_Q.voted).all('m')).toEqual([{ version_a: 0, version_b: 1, vote: 'a', voted_at: 7 }]);
    expect(plan(db, ARENA_Q.voted, 'm')).toMatch(/USING INDEX arena_matches_model_voted \(model_id=\?\)/);
    expect(plan(db, ARENA_Q.voted, 'm')).not.toMatch(/TEMP B-TREE/);
    // A deleted turn takes its matches with it.
    db.prepare('DELETE FROM turns WHERE id = ?').run(a);
    expect(db.prepare('SELECT count(*) AS n FROM arena_matches').get()).toEqual({ n: 0 });
    db.close();
  });
});

describe('migration 0004-reward-models', () => {
  it('adds the reward-model tables, keeps every row, and deletes a turn\'s predictions with the turn', () => {
    const db = new Database(tmpFile());
    db.pragma('foreign_keys = ON');
    expect(migrate(db, [m0001, m0002, m0003])).toEqual([1, 2, 3]);
    db.prepare(`INSERT INTO turns (source, event_id, created_at, prompt, response) VALUES ('api', 'e', 1, 'p', 'r')`).run();
    expect(migrate(db, [m0001, m0002, m0003, m0004])).toEqual([4]);
    expect(db.prepare('SELECT count(*) AS n FROM turns').get()).toEqual({ n: 1 });
    db.prepare(`INSERT INTO reward_models (model_id, version, base_model, created_at, ratings, head) VALUES ('m', 1, '/m', 1, 10, '{}')`).run();
    db.prepare('INSERT INTO reward_predictions (turn_id, reward_model_id, p, asked, created_at) VALUES (1, 1, 0.9, 0, 1)').run();
    expect(() => db.prepare(`INSERT INTO reward_models (model_id, version, base_model, created_at, ratings, head) VALUES ('m', 1, '/m', 1, 10, '{}')`).run()).toThrow(/UNIQUE/);
    expect(() => db.prepare('INSERT INTO reward_predictions (turn_id, reward_model_id, p, asked, created_at) VALUES (1, 1, 0.5, 2, 1)').run()).toThrow(/CHECK/);
    expect(plan(db, 'SELECT * FROM reward_models WHERE model_id = ? ORDER BY version DESC LIMIT 1', 'm')).toMatch(/sqlite_autoindex_reward_models_1/);
    expect(plan(db, 'SELECT count(*) FROM reward_predictions WHERE reward_model_id = ? AND asked = 0', 1)).toMatch(/reward_predictions_model/);
    db.prepare('DELETE FROM turns').run();
    expect(db.prepare('SELECT count(*) AS n FROM reward_predictions').get()).toEqual({ n: 0 });
    db.close();
  });
});

describe('migration 0005-chats', () => {
  it('adds chats beside the rows it finds, one per id, and lists them newest first from its index', () => {
    const db = new Database(tmpFile());
    db.pragma('foreign_keys = ON');
    expect(migrate(db, [m0001, m0002, m0003, m0004])).toEqual([1, 2, 3, 4]);
    db.prepare(`INSERT INTO turns (source, event_id, created_at, prompt, response) VALUES ('chat', 'e', 1, 'p', 'r')`).run();
    expect(migrate(db, [m0001, m0002, m0003, m0004, m0005])).toEqual([5]);
    expect(db.prepare('SELECT count(*) AS n FROM turns').get()).toEqual({ n: 1 });
    const insert = db.prepare('INSERT INTO chats (id, title, system, version, messages, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
    insert.run('s1', 'How?', 'Be brief.', null, '[]', 1, 1);
    insert.run('s2', 'Why?', '', 0, '[]', 2, 3);
    expect(() => insert.run('s1', 'again', '', null, '[]', 4, 4)).toThrow(/UNIQUE/);
    expect(() => insert.run('s3', 'neg', '', -1, '[]', 4, 4)).toThrow(/CHECK/);
    expect(db.prepare(CHATS_Q.list).all(10).map((r) => (r as { id: string }).id)).toEqual(['s2', 's1']);
    expect(plan(db, CHATS_Q.list, 10)).toMatch(/chats_updated/);
    db.close();
  });
});

describe('migration 0006-parked-ratings', () => {
  it('adds the parked reason to every rating as NULL, keeps the rows, and counts pending and parked ratings from indexes', () => {
    const db = new Database(tmpFile());
    db.pragma('foreign_keys = ON');
    expect(migrate(db, [m0001, m0002, m0003, m0004, m0005])).toEqual([1, 2, 3, 4, 5]);
    db.prepare(`INSERT INTO turns (source, event_id, created_at, prompt, response) VALUES ('api', 'e', 1, 'p', 'r')`).run();
    const rate = db.prepare(`INSERT INTO ratings (turn_id, model_id, kind, value, rater, created_at) VALUES (1, 'm', 'good', 1, 'me', ?)`);
    rate.run(1);
    rate.run(2);
    expect(migrate(db, [m0001, m0002, m0003, m0004, m0005, m0006])).toEqual([6]);
    expect(db.prepare('SELECT id, parked, parked_at FROM ratings ORDER BY id').all()).toEqual([
      { id: 1, parked: null, parked_at: null },
      { id: 2, parked: null, parked_at: null },
    ]);
    expect(db.prepare(Q.pendingCount).get('m')).toEqual({ n: 2 });
    db.prepare(`UPDATE ratings SET parked = 'too long', parked_at = 3 WHERE id = 2`).run();
    expect(db.prepare(Q.pendingCount).get('m')).toEqual({ n: 1 });
    expect(db.prepare(Q.parkedCount).get('m')).toEqual({ n: 1 });
    for (const q of [Q.pendingCount, Q.parkedCount]) expect(plan(db, q, 'm')).toMatch(/USING (COVERING )?INDEX ratings_model_pending \(model_id=\? AND run_id=\?\)/);
    db.close();
  });
});

describe('migration 0007-signals', () => {
  it('adds signals beside the turns it finds, one of each kind per answer, gone with either turn, read from its indexes', () => {
    const db = new Database(tmpFile());
    db.pragma('foreign_keys = ON');
    expect(migrate(db, [m0001, m0002, m0003, m0004, m0005, m0006])).toEqual([1, 2, 3, 4, 5, 6]);
    const turn = db.prepare(`INSERT INTO turns (source, session, event_id, created_at, prompt, response) VALUES ('claude-code', 's', ?, ?, ?, 'r')`);
    turn.run('s:p1', 1, 'fix the test');
    turn.run('s:p2', 2, 'no, the test still fails');
    turn.run('s:agent:x', 3, 'a subagent task');
    turn.run('s:p3', 2, 'stored after p2, in the same millisecond');
    expect(migrate(db, [m0001, m0002, m0003, m0004, m0005, m0006, m0007])).toEqual([7]);
    expect(db.prepare('SELECT count(*) AS n FROM turns').get()).toEqual({ n: 4 });
    const insert = db.prepare('INSERT INTO signals (turn_id, kind, from_turn_id, evidence, score, detail, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
    insert.run(1, 'followup', 2, 'no, the test still fails', null, '{}', 5);
    insert.run(1, 'reask', 2, 'no, the test still fails', 0.7, '{}', 5);
    expect(() => insert.run(1, 'followup', 2, 'again', null, '{}', 6)).toThrow(/UNIQUE/);
    expect(() => insert.run(1, 'praise', 2, 'x', null, '{}', 6)).toThrow(/CHECK/);
    expect(() => insert.run(1, 'interrupt', null, 'x', 1.5, '{}', 6)).toThrow(/CHECK/);
    expect(plan(db, SIGNALS_Q.ofTurn, 1)).toMatch(/sqlite_autoindex_signals_1/);
    expect(plan(db, SIGNALS_Q.suggested)).toMatch(/signals_live_turn/);
    expect(plan(db, SIGNALS_Q.previousInSession, 's', 'claude-code', 2, 2, 2)).toMatch(/turns_session_created/);
    expect(plan(db, SIGNALS_Q.previousInSession, 's', 'claude-code', 2, 2, 2)).not.toMatch(/TEMP B-TREE/);
    // The previous answer of the session is the user's, never the subagent's that came after it; within one
    // millisecond, the one stored before.
    expect(db.prepare(SIGNALS_Q.previousInSession).get('s', 'claude-code', 10, 10, 5)).toMatchObject({ id: 4 });
    expect(db.prepare(SIGNALS_Q.previousInSession).get('s', 'claude-code', 2, 2, 4)).toMatchObject({ id: 2 });
    expect(db.prepare(SIGNALS_Q.previousInSession).get('s', 'claude-code', 2, 2, 2)).toMatchObject({ id: 1 });
    expect(db.prepare(SIGNALS_Q.previousInSession).get('s', 'claude-code', 1, 1, 2)).toMatchObject({ id: 1 });
    expect(db.prepare(SIGNALS_Q.previousInSession).get('s', 'claude-code', 1, 1, 1)).toBeUndefined();
    expect(plan(db, 'DELETE FROM turns WHERE id = ?', 2)).not.toMatch(/SCAN signals/);
    // Deleting the later turn (the evidence) or the answer takes the signal with it.
    db.prepare('DELETE FROM turns WHERE id = 2').run();
    expect(db.prepare('SELECT count(*) AS n FROM signals').get()).toEqual({ n: 0 });
    db.close();
  });
});

describe('migration 0008-prompt-ids', () => {
  it('adds the prompt-id tables beside the turns it finds, gone with the turn, read from their indexes', () => {
    const db = new Database(tmpFile());
    db.pragma('foreign_keys = ON');
    const before = [m0001, m0002, m0003, m0004, m0005, m0006, m0007];
    expect(migrate(db, before)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    db.prepare(`INSERT INTO turns (source, event_id, created_at, prompt, response) VALUES ('claude-code', 'e1', 1, 'p', 'r')`).run();
    expect(migrate(db, [...before, m0008])).toEqual([8]);
    expect(db.prepare('SELECT count(*) AS n FROM turns').get()).toEqual({ n: 1 });
    const hash = Buffer.alloc(32, 7);
    db.prepare('INSERT INTO prompt_chunks (hash, ids) VALUES (?, ?)').run(hash, Buffer.alloc(8));
    db.prepare('INSERT INTO turn_prompts (turn_id, length, chunk, tail) VALUES (1, 3, 2, ?)').run(Buffer.alloc(4));
    db.prepare('INSERT INTO turn_prompt_chunks (turn_id, pos, hash) VALUES (1, 0, ?)').run(hash);
    // A listed chunk must exist; a short hash or a partial id is refused.
    expect(() => db.prepare('INSERT INTO turn_prompt_chunks (turn_id, pos, hash) VALUES (1, 1, ?)').run(Buffer.alloc(32, 9))).toThrow(/FOREIGN KEY/);
    expect(() => db.prepare('INSERT INTO prompt_chunks (hash, ids) VALUES (?, ?)').run(Buffer.alloc(31), Buffer.alloc(4))).toThrow(/CHECK/);
    expect(() => db.prepare('INSERT INTO prompt_chunks (hash, ids) VALUES (?, ?)').run(Buffer.alloc(32, 1), Buffer.alloc(3))).toThrow(/CHECK/);
    expect(plan(db, PROMPT_IDS_Q.chunksOf, 1)).toMatch(/SEARCH p USING PRIMARY KEY \(turn_id=\?\)/);
    expect(plan(db, PROMPT_IDS_Q.orphan, hash, hash)).toMatch(/turn_prompt_chunks_hash/);
    db.prepare('DELETE FROM turns WHERE id = 1').run();
    expect(db.prepare('SELECT (SELECT count(*) FROM turn_prompts) + (SELECT count(*) FROM turn_prompt_chunks) AS n').get()).toEqual({ n: 0 });
    db.close();
  });
});

describe('migration 0009-signal-kinds', () => {
  it('takes revert and contradiction signals, keeps every signal it finds with its id, and reads them from the same indexes', () => {
    const db = new Database(tmpFile());
    db.pragma('foreign_keys = ON');
    const before = [m0001, m0002, m0003, m0004, m0005, m0006, m0007, m0008];
    expect(migrate(db, before)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const turn = db.prepare(`INSERT INTO turns (source, session, event_id, created_at, prompt, response) VALUES ('claude-code', 's', ?, ?, ?, 'r')`);
    turn.run('s:p1', 1, 'fix the test');
    turn.run('s:p2', 2, 'no, the test still fails');
    const insert = db.prepare('INSERT INTO signals (turn_id, kind, from_turn_id, evidence, score, detail, created_at, dismissed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    insert.run(1, 'followup', 2, 'no, the test still fails', null, '{"gapMs":1}', 5, 9);
    insert.run(1, 'reask', 2, Buffer.from('sealed'), 0.7, '{}', 5, null);
    expect(() => insert.run(1, 'revert', null, 'x', null, '{}', 6, null)).toThrow(/CHECK/);
    const rows = db.prepare('SELECT * FROM signals ORDER BY id').all();
    expect(migrate(db, [...before, m0009])).toEqual([9]);
    expect(db.prepare('SELECT * FROM signals ORDER BY id').all()).toEqual(rows);
    insert.run(1, 'revert', null, "you reverted the agent's edit of src/a.ts within 4 min", null, '{}', 6, null);
    insert.run(1, 'contradiction', 2, 'the answer said "All tests pass", but `npm test` then failed: FAIL a.test.ts', null, '{}', 6, null);
    expect(() => insert.run(1, 'revert', null, 'again', null, '{}', 7, null)).toThrow(/UNIQUE/);
    expect(() => insert.run(1, 'praise', 2, 'x', null, '{}', 6, null)).toThrow(/CHECK/);
    expect(() => insert.run(2, 'interrupt', null, 'x', 1.5, '{}', 6, null)).toThrow(/CHECK/);
    expect(() => insert.run(99, 'revert', null, 'x', null, '{}', 6, null)).toThrow(/FOREIGN KEY/);
    expect(plan(db, SIGNALS_Q.ofTurn, 1)).toMatch(/USING INDEX sqlite_autoindex_signals/);
    expect(plan(db, SIGNALS_Q.suggested)).toMatch(/signals_live_turn/);
    expect(plan(db, 'DELETE FROM turns WHERE id = ?', 2)).not.toMatch(/SCAN signals/);
    // Deleting the later turn takes the signals it is the evidence of; the answer takes the rest.
    db.prepare('DELETE FROM turns WHERE id = 2').run();
    expect(db.prepare('SELECT kind FROM signals ORDER BY id').all()).toEqual([{ kind: 'revert' }]);
    db.prepare('DELETE FROM turns WHERE id = 1').run();
    expect(db.prepare('SELECT count(*) AS n FROM signals').get()).toEqual({ n: 0 });
    db.close();
  });
});
