// Migration 7: what the user did after an answer, kept as evidence for weak labels (common/implicit/reader.ts).
// Frozen: never edit it once released and never import live code from here.
//
// One row per signal about one answer (`turn_id`): the next prompt of the same session (`followup`), that prompt
// restating the previous one (`reask`, with its similarity in `score`), or the client reporting that the answer was
// interrupted (`interrupt`). `from_turn_id` is the later turn whose prompt is the evidence, when there is one; its
// deletion takes the signal with it. `evidence` is the text or event that produced the signal, sealed like a turn's
// text when encryption is on. `detail` is JSON (the similarity measure, the client's event). At most one signal of
// each kind per answer: the first next prompt is the one that reacts to it. `dismissed_at`: the user dismissed the
// weak label read from the answer's signals; they stay as evidence but suggest nothing.
export const version = 7;
export const name = 'signals';

export const sql = `
CREATE TABLE signals (
  id            INTEGER PRIMARY KEY,
  turn_id       INTEGER NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
  kind          TEXT NOT NULL CHECK (kind IN ('followup', 'reask', 'interrupt')),
  from_turn_id  INTEGER REFERENCES turns (id) ON DELETE CASCADE,
  evidence      NOT NULL,
  score         REAL CHECK (score IS NULL OR (score >= 0 AND score <= 1)),
  detail        TEXT NOT NULL DEFAULT '{}',
  created_at    INTEGER NOT NULL,
  dismissed_at  INTEGER,
  UNIQUE (turn_id, kind)
);
-- The signals of a turn come from the UNIQUE index (turn_id first); deleting a later turn finds its signals here.
CREATE INDEX signals_from_turn ON signals (from_turn_id) WHERE from_turn_id IS NOT NULL;
-- The answers with a label to suggest, newest first.
CREATE INDEX signals_live_turn ON signals (turn_id) WHERE dismissed_at IS NULL;
-- The answer a new prompt reacts to: the session's turns newest first (turns_session_state_created has the state
-- between, so it cannot give them in time order).
CREATE INDEX turns_session_created ON turns (session, created_at) WHERE session IS NOT NULL;
`;
