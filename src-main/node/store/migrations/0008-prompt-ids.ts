// Migration 8: the exact token ids a model server consumed before it sampled a turn's tokens (its whole rendered
// prompt: system prompt, tool declarations, history, tool results and the human prompt), so a round conditions π on
// the context μ was sampled under (training/data.ts). Frozen: never edit it once released and never import live code
// from here.
//
// An agent's prompts share long prefixes (Claude Code's system prompt and tools are ~7.6k tokens, Codex's ~11.8k,
// and each request of a session repeats the history before it), so the ids are cut into chunks of a fixed number of
// tokens counted from the first id, and each chunk is stored once under the SHA-256 of its ids (`prompt_chunks`).
// Two prompts that agree on their first N ids share their first floor(N / chunk) chunks. A turn keeps the list of its
// whole chunks (`turn_prompt_chunks`, by position) and the ids after the last whole one (`turn_prompts.tail`, at most
// one chunk long). Ids are little-endian Uint32 as in turns.tokens (migration 0001). A turn's deletion takes its rows
// with it; the store deletes chunks no turn lists any more in the same transaction.
export const version = 8;
export const name = 'prompt-ids';

export const sql = `
CREATE TABLE prompt_chunks (
  hash  BLOB PRIMARY KEY CHECK (length(hash) = 32),
  ids   BLOB NOT NULL CHECK (length(ids) % 4 = 0)
) WITHOUT ROWID;
CREATE TABLE turn_prompts (
  turn_id  INTEGER PRIMARY KEY REFERENCES turns (id) ON DELETE CASCADE,
  length   INTEGER NOT NULL CHECK (length > 0),
  chunk    INTEGER NOT NULL CHECK (chunk > 0),
  tail     BLOB NOT NULL CHECK (length(tail) % 4 = 0)
);
CREATE TABLE turn_prompt_chunks (
  turn_id  INTEGER NOT NULL REFERENCES turn_prompts (turn_id) ON DELETE CASCADE,
  pos      INTEGER NOT NULL CHECK (pos >= 0),
  hash     BLOB NOT NULL REFERENCES prompt_chunks (hash),
  PRIMARY KEY (turn_id, pos)
) WITHOUT ROWID;
-- Whether any turn still lists a chunk, when a turn is deleted.
CREATE INDEX turn_prompt_chunks_hash ON turn_prompt_chunks (hash);
`;
