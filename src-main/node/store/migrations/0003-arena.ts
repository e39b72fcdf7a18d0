// Migration 3: arena matches. Frozen: never edit it once released and never import live code from here.
//
// One row per blind pair: the prompt, the two answers as turns (A and B in the order they were shown), the adapter
// version that produced each (0 = base), and the vote once cast: 'a', 'b', 'tie' or 'bad' (both bad). The versions
// are stored at creation, so a pruned or reset version still has its record. The ratings a vote gives each side are
// ordinary rows of `ratings` (rater 'arena').
export const version = 3;
export const name = 'arena';

export const sql = `
CREATE TABLE arena_matches (
  id          INTEGER PRIMARY KEY,
  model_id    TEXT NOT NULL,
  prompt      TEXT NOT NULL,
  turn_a      INTEGER NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
  turn_b      INTEGER NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
  version_a   INTEGER NOT NULL CHECK (version_a >= 0),
  version_b   INTEGER NOT NULL CHECK (version_b >= 0),
  created_at  INTEGER NOT NULL,
  vote        TEXT CHECK (vote IS NULL OR vote IN ('a', 'b', 'tie', 'bad')),
  voted_at    INTEGER,
  rater       TEXT,
  CHECK ((vote IS NULL) = (voted_at IS NULL))
);
-- The statistics read a model's voted matches.
CREATE INDEX arena_matches_model_voted ON arena_matches (model_id, voted_at) WHERE vote IS NOT NULL;
`;
