// A turn's exact prompt ids (migration 0008) through the store's own capture: agents' prompts share a long prefix
// (Claude Code's system prompt and tools), which is stored once however many turns repeat it, and each turn reads
// back exactly the ids it was stored with. Deleting turns deletes the chunks no other turn lists.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Rng } from '../../common/engine/rng.ts';
import { randomBytes } from 'node:crypto';
import { FieldCipher } from './cipher.ts';
import { PROMPT_CHUNK } from './prompt-ids.ts';
import { Store } from './store.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(cipher: FieldCipher | null = null): Store {
  const dir = mkdtempSync(path.join(tmpdir(), 'rein-prompt-ids-'));
  dirs.push(dir);
  return new Store(path.join(dir, 'rein.db'), () => 1_700_000_000_000, cipher);
}

const rng = new Rng(11);
const ids = (n: number): number[] => Array.from({ length: n }, () => Math.floor(rng.uniform() * 150_000));

const turn = (eventId: string, promptIds: number[] | null) => ({
  source: 'claude-code', session: 's', eventId, createdAt: 1, prompt: 'p', context: [], response: 'r', model: null,
  tokens: Buffer.from(new Uint32Array([5, 6]).buffer), logprobs: Buffer.from(new Float32Array([-1, -2]).buffer), promptIds, adapterVersion: 0, policy: null, truncated: false,
});

describe('prompt ids in the store', () => {
  it('stores a 7k-token prefix shared by two turns once, and gives each turn back its exact ids', () => {
    const store = open();
    try {
      const prefix = ids(7000);
      const a = [...prefix, ...ids(300)];
      const b = [...prefix, ...ids(900)];
      const ta = store.captureTurn(turn('a', a), 'test').turn.id;
      const tb = store.captureTurn(turn('b', b), 'test').turn.id;
      const none = store.captureTurn(turn('c', null), 'test').turn.id;
      expect(store.promptIds.get(ta)).toEqual(a);
      expect(store.promptIds.get(tb)).toEqual(b);
      expect(store.promptIds.get(none)).toBeNull();
      // The prefix's whole chunks once, then each turn's own: only the chunk the prefix ends inside is stored twice.
      const shared = Math.floor(7000 / PROMPT_CHUNK);
      const own = (n: number) => Math.floor(n / PROMPT_CHUNK) - shared;
      const c = store.promptIds.counts();
      expect(c.chunks).toBe(shared + own(a.length) + own(b.length));
      expect(c.ids).toBe(a.length + b.length - shared * PROMPT_CHUNK);
      expect(c.ids).toBeLessThan(7000 + 300 + 900 + 2 * PROMPT_CHUNK);
      process.stderr.write(`prompt ids: two turns of ${a.length} and ${b.length} ids with a 7000-id shared prefix store ${c.ids} ids in ${c.chunks} chunks (${a.length + b.length} without dedupe)\n`);
      // A capture of the same event again stores nothing new.
      store.captureTurn(turn('a', a), 'test');
      expect(store.promptIds.counts()).toEqual(c);
      // Deleting one turn keeps the chunks the other lists; deleting both leaves none.
      store.deleteTurn(ta, 'test');
      expect(store.promptIds.get(tb)).toEqual(b);
      expect(store.promptIds.counts().chunks).toBe(shared + own(b.length));
      store.deleteTurn(tb, 'test');
      expect(store.promptIds.counts()).toEqual({ chunks: 0, ids: 0, turns: 0 });
    } finally {
      store.close();
    }
  });

  it('stores a prompt shorter than one chunk, and one of whole chunks, exactly', () => {
    const store = open();
    try {
      const short = ids(10);
      const whole = ids(2 * PROMPT_CHUNK);
      expect(store.promptIds.get(store.captureTurn(turn('s', short), 'test').turn.id)).toEqual(short);
      expect(store.promptIds.get(store.captureTurn(turn('w', whole), 'test').turn.id)).toEqual(whole);
      expect(store.promptIds.counts()).toEqual({ chunks: 2, ids: 10 + 2 * PROMPT_CHUNK, turns: 2 });
    } finally {
      store.close();
    }
  });

  it('seals the chunks and tails with encryption at rest (still stored once), and reseals them with the turns', () => {
    const cipher = new FieldCipher(new Map([[1, randomBytes(32)]]), 1);
    const store = open(cipher);
    try {
      const prefix = ids(3 * PROMPT_CHUNK);
      const a = [...prefix, ...ids(40)];
      const b = [...prefix, ...ids(70)];
      const ta = store.captureTurn(turn('a', a), 'test').turn.id;
      const tb = store.captureTurn(turn('b', b), 'test').turn.id;
      const raw = () => [...(store.db.prepare('SELECT ids AS v FROM prompt_chunks').all() as { v: Buffer }[]), ...(store.db.prepare('SELECT tail AS v FROM turn_prompts').all() as { v: Buffer }[])].map((r) => r.v);
      const plainChunk = Buffer.from(new Uint32Array(prefix.slice(0, PROMPT_CHUNK)).buffer);
      expect(raw()).toHaveLength(3 + 2);
      expect(raw().some((v) => v.includes(plainChunk.subarray(0, 64)))).toBe(false);
      expect(store.promptIds.get(ta)).toEqual(a);
      expect(store.promptIds.get(tb)).toEqual(b);
      store.resealAll(null);
      expect(raw().some((v) => v.equals(plainChunk))).toBe(true);
      expect(store.promptIds.get(tb)).toEqual(b);
      store.cipher = cipher;
      store.resealAll(cipher);
      expect(raw().some((v) => v.includes(plainChunk.subarray(0, 64)))).toBe(false);
      expect(store.promptIds.get(ta)).toEqual(a);
    } finally {
      store.close();
    }
  });
});
