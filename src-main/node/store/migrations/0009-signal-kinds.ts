// Migration 9: two more kinds of signal, `revert` (a file the answer's turn edited was put back as it was before the
// edit) and `contradiction` (the answer said the tests pass or the build succeeds, and a run of them failed). Frozen:
// never edit it once released and never import live code from here.
//
// SQLite cannot change a CHECK constraint in place, so the table is rebuilt the way its documentation gives
// (https://www.sqlite.org/lang_altertable.html#otheralter): a new table with the new CHECK, every row copied with its
// id, the old one dropped, the new one renamed, and its indexes made again. Nothing references `signals`, so the drop
// cascades nowhere; the runner holds the whole migration in one transaction. The columns and indexes are migration 7's.
export const version = 9;
export const name = 'signal-kinds';

export const sql = `
CREATE TABLE signals_new (
  id            INTEGER PRIMARY KEY,
  turn_id       INTEGER NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
  kind          TEXT NOT NULL CHECK (kind IN ('followup', 'reask', 'interrupt', 'revert', 'contradiction')),
  from_turn_id  INTEGER REFERENCES turns (id) ON DELETE CASCADE,
  evidence      NOT NULL,
  score         REAL CHECK (score IS NULL OR (score >= 0 AND score <= 1)),
  detail        TEXT NOT NULL DEFAULT '{}',
  created_at    INTEGER NOT NULL,
  dismissed_at  INTEGER,
  UNIQUE (turn_id, kind)
);
INSERT INTO signals_new (id, turn_id, kind, from_turn_id, evidence, score, detail, created_at, dismissed_at)
  SELECT id, turn_id, kind, from_turn_id, evidence, score, detail, created_at, dismissed_at FROM signals;
DROP TABLE signals;
ALTER TABLE signals_new RENAME TO signals;
CREATE INDEX signals_from_turn ON signals (from_turn_id) WHERE from_turn_id IS NOT NULL;
CREATE INDEX signals_live_turn ON signals (turn_id) WHERE dismissed_at IS NULL;
`;
