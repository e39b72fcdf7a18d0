// Migration 5: Rein's own chat conversations, so a reload or restart keeps them. Frozen: never edit it once released
// and never import live code from here.
//
// One row per conversation, keyed by the session id its answers' turns share. `title`, `system` (the system prompt)
// and `messages` (the JSON of what the chat screen shows: each question and answer, an answer with its turn id,
// version and note) are text like a turn's, so they are sealed like one when encryption is on. `version` is the
// version the user picked to answer (NULL: the active one, 0: the base). Ratings are not copied here: they stay on
// the turns.
export const version = 5;
export const name = 'chats';

export const sql = `
CREATE TABLE chats (
  id          TEXT PRIMARY KEY,
  title       NOT NULL,
  system      NOT NULL,
  version     INTEGER CHECK (version IS NULL OR version >= 0),
  messages    NOT NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
);
-- The conversation list, newest first.
CREATE INDEX chats_updated ON chats (updated_at);
`;
