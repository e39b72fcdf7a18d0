// Migration 1: the initial schema (ARCHITECTURE §5). Frozen: never edit it once released and never import
// live code from here; a change to the schema is a new numbered file.
//
// Times are Unix milliseconds. JSON columns hold text that JSON.parse reads. Token ids are stored as a
// little-endian Uint32 BLOB and behaviour logprobs as a little-endian Float32 BLOB (4 bytes per token
// instead of ~20 as JSON text; the trainer computes in fp32 anyway).
export const version = 1;
export const name = 'init';

export const sql = `
CREATE TABLE models (
  id          TEXT PRIMARY KEY,
  name        TEXT,
  path        TEXT,
  family      TEXT,
  config      TEXT NOT NULL DEFAULT '{}',
  created_at  INTEGER NOT NULL
);

CREATE TABLE turns (
  id               INTEGER PRIMARY KEY,
  source           TEXT NOT NULL,
  session          TEXT,
  event_id         TEXT NOT NULL,
  created_at       INTEGER NOT NULL,
  prompt           TEXT NOT NULL,
  context          TEXT NOT NULL DEFAULT '[]',
  response         TEXT NOT NULL,
  model            TEXT,
  tokens           BLOB,
  logprobs         BLOB,
  adapter_version  INTEGER,
  state            TEXT NOT NULL DEFAULT 'unrated' CHECK (state IN ('unrated', 'rated', 'ignored', 'expired')),
  truncated        INTEGER NOT NULL DEFAULT 0 CHECK (truncated IN (0, 1)),
  UNIQUE (source, event_id)
);
-- The newest rateable turn of a session, and globally; history lists newest first.
CREATE INDEX turns_session_state_created ON turns (session, state, created_at);
CREATE INDEX turns_state_created ON turns (state, created_at);
CREATE INDEX turns_created ON turns (created_at);

CREATE TABLE runs (
  id               INTEGER PRIMARY KEY,
  model_id         TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  trigger          TEXT NOT NULL CHECK (trigger IN ('auto', 'manual', 'retrain')),
  created_at       INTEGER NOT NULL,
  started_at       INTEGER,
  finished_at      INTEGER,
  from_version     INTEGER,
  config           TEXT NOT NULL DEFAULT '{}',
  metrics          TEXT,
  error            TEXT,
  adapter_version  INTEGER
);
CREATE INDEX runs_model_created ON runs (model_id, created_at);

CREATE TABLE ratings (
  id          INTEGER PRIMARY KEY,
  turn_id     INTEGER NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
  model_id    TEXT NOT NULL,
  kind        TEXT NOT NULL CHECK (kind IN ('good', 'bad', 'scale')),
  value       REAL NOT NULL,
  scale       INTEGER CHECK (scale IS NULL OR scale BETWEEN 1 AND 5),
  correction  TEXT,
  tags        TEXT NOT NULL DEFAULT '[]',
  comment     TEXT,
  rater       TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  undone_at   INTEGER,
  run_id      INTEGER REFERENCES runs (id) ON DELETE SET NULL
);
CREATE INDEX ratings_turn ON ratings (turn_id);
-- Pending for training: live ratings of a model with no run yet.
CREATE INDEX ratings_model_pending ON ratings (model_id, run_id) WHERE undone_at IS NULL;
-- Newest live rating (undo) and ratings by time (history).
CREATE INDEX ratings_live_created ON ratings (created_at) WHERE undone_at IS NULL;
CREATE INDEX ratings_created ON ratings (created_at);
CREATE INDEX ratings_run ON ratings (run_id) WHERE run_id IS NOT NULL;

CREATE TABLE run_samples (
  run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  rating_id  INTEGER NOT NULL REFERENCES ratings (id) ON DELETE CASCADE,
  role       TEXT NOT NULL CHECK (role IN ('pending', 'replay', 'heldout')),
  advantage  REAL,
  PRIMARY KEY (run_id, rating_id)
) WITHOUT ROWID;
CREATE INDEX run_samples_rating ON run_samples (rating_id);

CREATE TABLE adapters (
  id              INTEGER PRIMARY KEY,
  model_id        TEXT NOT NULL,
  version         INTEGER NOT NULL CHECK (version >= 1),
  status          TEXT NOT NULL CHECK (status IN ('candidate', 'active', 'inactive', 'rejected', 'rolled_back')),
  path            TEXT NOT NULL,
  run_id          INTEGER REFERENCES runs (id) ON DELETE SET NULL,
  parent_version  INTEGER,
  created_at      INTEGER NOT NULL,
  ema_value       REAL,
  metrics         TEXT NOT NULL DEFAULT '{}',
  reason          TEXT,
  publish         TEXT NOT NULL DEFAULT '{}',
  UNIQUE (model_id, version)
);
-- At most one active version per model.
CREATE UNIQUE INDEX adapters_one_active ON adapters (model_id) WHERE status = 'active';

CREATE TABLE ema (
  model_id    TEXT PRIMARY KEY,
  value       REAL,
  updated_at  INTEGER NOT NULL
);

-- Every change of a model's baseline. value_before/value_after make undo, delete and rollback exact: an undo
-- replays from the undone event's value_before over the later events whose ratings are still live.
CREATE TABLE ema_events (
  id            INTEGER PRIMARY KEY,
  model_id      TEXT NOT NULL,
  at            INTEGER NOT NULL,
  reason        TEXT NOT NULL CHECK (reason IN ('rating', 'undo', 'rollback', 'reset', 'delete')),
  rating_id     INTEGER REFERENCES ratings (id) ON DELETE SET NULL,
  reward        REAL,
  value_before  REAL,
  value_after   REAL
);
CREATE INDEX ema_events_model ON ema_events (model_id, id);
CREATE INDEX ema_events_rating ON ema_events (rating_id) WHERE rating_id IS NOT NULL;

CREATE TABLE settings (
  key         TEXT PRIMARY KEY,
  value       TEXT NOT NULL,
  updated_at  INTEGER NOT NULL
);

CREATE TABLE audit (
  id      INTEGER PRIMARY KEY,
  at      INTEGER NOT NULL,
  actor   TEXT NOT NULL,
  action  TEXT NOT NULL,
  target  TEXT,
  detail  TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_at ON audit (at);
`;
