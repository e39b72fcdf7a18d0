// The exact prompt ids of turns (migration 0008): the token ids a model server consumed before it sampled a turn's
// tokens, cut into chunks of PROMPT_CHUNK ids from the first one, each chunk stored once under the SHA-256 of its
// bytes. Agents' prompts grow by appending (the system prompt and tools first, then the history), so turns of one
// agent share their leading chunks: a 7.6k-token system prompt is stored once, and each turn adds its own chunks past
// it and a tail shorter than one chunk. Fixed boundaries counted from the start need no parsing of the template and
// dedupe exactly the shared prefix, to within one chunk.
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

export class PromptIds {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  /** Stores `ids` as the prompt of turn `turnId` (inside the caller's transaction); a turn's prompt is written once. */
  put(turnId: number, ids: readonly number[]): void {
    if (ids.length === 0) return;
    const whole = Math.floor(ids.length / PROMPT_CHUNK);
    this.sql.stmt('INSERT INTO turn_prompts (turn_id, length, chunk, tail) VALUES (?, ?, ?, ?) ON CONFLICT (turn_id) DO NOTHING').run(turnId, ids.length, PROMPT_CHUNK, encodeTokens(ids.slice(whole * PROMPT_CHUNK)));
    const chunk = this.sql.stmt('INSERT INTO prompt_chunks (hash, ids) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING');
    const list = this.sql.stmt('INSERT INTO turn_prompt_chunks (turn_id, pos, hash) VALUES (?, ?, ?) ON CONFLICT DO NOTHING');
    for (let i = 0; i < whole; i++) {
      const bytes = encodeTokens(ids.slice(i * PROMPT_CHUNK, (i + 1) * PROMPT_CHUNK));
      const hash = createHash('sha256').update(bytes).digest();
      chunk.run(hash, bytes);
      list.run(turnId, i, hash);
    }
  }

  /** The prompt ids of a turn, or null when none were stored. */
  get(turnId: number): number[] | null {
    const head = this.sql.stmt<{ length: number; tail: Buffer }>('SELECT length, tail FROM turn_prompts WHERE turn_id = ?').get(turnId);
    if (head === undefined) return null;
    const parts = this.sql.stmt<{ ids: Buffer }>(PROMPT_IDS_Q.chunksOf).all(turnId).map((r) => r.ids);
    const ids = decodeTokens(Buffer.concat([...parts, head.tail]))!;
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

  /** How many chunks and ids are stored (the size the dedupe saves is measured by it). */
  counts(): { chunks: number; ids: number; turns: number } {
    const c = this.sql.stmt<{ n: number; bytes: number | null }>('SELECT count(*) AS n, sum(length(ids)) AS bytes FROM prompt_chunks').get()!;
    const t = this.sql.stmt<{ n: number; bytes: number | null }>('SELECT count(*) AS n, sum(length(tail)) AS bytes FROM turn_prompts').get()!;
    return { chunks: c.n, ids: ((c.bytes ?? 0) + (t.bytes ?? 0)) / 4, turns: t.n };
  }
}
