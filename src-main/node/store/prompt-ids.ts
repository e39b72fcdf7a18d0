// The exact prompt ids of turns (migration 0008): the token ids a model server consumed before it sampled a turn's
// tokens, cut into chunks of PROMPT_CHUNK ids from the first one, each chunk stored once under the SHA-256 of its
// bytes. Agents' prompts grow by appending (the system prompt and tools first, then the history), so turns of one
// agent share their leading chunks: a 10k-token system prompt is stored once, and each turn adds its own chunks past
// it and a tail shorter than one chunk. Fixed boundaries counted from the start need no parsing of the template and
// dedupe exactly the shared prefix, to within one chunk. The ids spell the text they encode, so with encryption at rest
// the chunks and tails are sealed like a turn's text (cipher.ts; the hash is of the plain ids, so a chunk is still
// stored once).
import { createHash } from 'node:crypto';
import { decodeTokens, encodeTokens } from './codec.ts';
import type { Sql } from './sql.ts';

/** Ids per chunk: a turn stores at most this many ids of its own past a shared prefix (2 KiB), and ~ length / 512 rows. */
export const PROMPT_CHUNK = 512;

/** The queries whose plans migrate.test.ts checks. */
export const PROMPT_IDS_Q = {
  chunksOf: `SELECT c.ids FROM turn_prompt_chunks p JOIN prompt_chunks c ON c.hash = p.hash WHERE p.turn_id = ? ORDER BY p.pos`,
  // A chunk no turn lists any more (after a turn's deletion took its rows).
  orphan: `DELETE FROM prompt_chunks WHERE hash = ? AND NOT EXISTS (SELECT 1 FROM turn_prompt_chunks WHERE hash = ?)`,
} as const;

/** What the store lends this module: its statements, and the sealing of bytes with encryption at rest. */
export interface PromptIdsSql extends Sql {
  /** The bytes to store: sealed when encryption is on, else as they are. */
  sealBytes(b: Buffer): Buffer;
  /** Stored bytes opened (plain bytes pass through). */
  openBytes(b: Buffer): Buffer;
}

export class PromptIds {
  private readonly sql: PromptIdsSql;

  constructor(sql: PromptIdsSql) {
    this.sql = sql;
  }

  /** Stores `ids` as the prompt of turn `turnId` (inside the caller's transaction); a turn's prompt is written once. */
  put(turnId: number, ids: readonly number[]): void {
    if (ids.length === 0) return;
    const whole = Math.floor(ids.length / PROMPT_CHUNK);
    this.sql.stmt('INSERT INTO turn_prompts (turn_id, length, chunk, tail) VALUES (?, ?, ?, ?) ON CONFLICT (turn_id) DO NOTHING').run(turnId, ids.length, PROMPT_CHUNK, this.sql.sealBytes(encodeTokens(ids.slice(whole * PROMPT_CHUNK))));
    const chunk = this.sql.stmt('INSERT INTO prompt_chunks (hash, ids) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING');
    const list = this.sql.stmt('INSERT INTO turn_prompt_chunks (turn_id, pos, hash) VALUES (?, ?, ?) ON CONFLICT DO NOTHING');
    for (let i = 0; i < whole; i++) {
      const bytes = encodeTokens(ids.slice(i * PROMPT_CHUNK, (i + 1) * PROMPT_CHUNK));
      const hash = createHash('sha256').update(bytes).digest();
      chunk.run(hash, this.sql.sealBytes(bytes));
      list.run(turnId, i, hash);
    }
  }

  /** The prompt ids of a turn, or null when none were stored. */
  get(turnId: number): number[] | null {
    const head = this.sql.stmt<{ length: number; tail: Buffer }>('SELECT length, tail FROM turn_prompts WHERE turn_id = ?').get(turnId);
    if (head === undefined) return null;
    const parts = this.sql.stmt<{ ids: Buffer }>(PROMPT_IDS_Q.chunksOf).all(turnId).map((r) => this.sql.openBytes(r.ids));
    const ids = decodeTokens(Buffer.concat([...parts, this.sql.openBytes(head.tail)]))!;
    // A chunk missing under a listed hash cannot happen (a foreign key), so a wrong length is a damaged file.
    if (ids.length !== head.length) throw new Error(`turn ${turnId}: its prompt ids hold ${ids.length} ids, ${head.length} were stored`);
    return ids;
  }

  /** The chunks a turn lists, to pass to dropOrphans once its rows are gone. */
  hashesOf(turnId: number): Buffer[] {
    return this.sql.stmt<{ hash: Buffer }>('SELECT hash FROM turn_prompt_chunks WHERE turn_id = ?').all(turnId).map((r) => r.hash);
  }

  /** Deletes those of `hashes` that no turn lists any more (inside the transaction that deleted the turns). */
  dropOrphans(hashes: readonly Buffer[]): void {
    const drop = this.sql.stmt(PROMPT_IDS_Q.orphan);
    for (const h of new Set(hashes.map((b) => b.toString('hex')))) {
      const b = Buffer.from(h, 'hex');
      drop.run(b, b);
    }
  }

  /** Every chunk and tail brought into the form `reseal` gives (for store.resealAll, inside its transaction). */
  resealAll(reseal: (b: Buffer) => Buffer): number {
    const chunks = this.sql.stmt<{ hash: Buffer; ids: Buffer }>('SELECT hash, ids FROM prompt_chunks').all();
    const upChunk = this.sql.stmt('UPDATE prompt_chunks SET ids = ? WHERE hash = ?');
    for (const c of chunks) upChunk.run(reseal(c.ids), c.hash);
    const tails = this.sql.stmt<{ turn_id: number; tail: Buffer }>('SELECT turn_id, tail FROM turn_prompts').all();
    const upTail = this.sql.stmt('UPDATE turn_prompts SET tail = ? WHERE turn_id = ?');
    for (const t of tails) upTail.run(reseal(t.tail), t.turn_id);
    return chunks.length + tails.length;
  }

  /** How many chunks and ids are stored (the size the dedupe saves is measured by it). */
  counts(): { chunks: number; ids: number; turns: number } {
    const chunks = this.sql.stmt<{ ids: Buffer }>('SELECT ids FROM prompt_chunks').all();
    const tails = this.sql.stmt<{ tail: Buffer }>('SELECT tail FROM turn_prompts').all();
    const ids = [...chunks.map((c) => c.ids), ...tails.map((t) => t.tail)].reduce((n, b) => n + this.sql.openBytes(b).length / 4, 0);
    return { chunks: chunks.length, ids, turns: tails.length };
  }
}
