// The signals' evidence is text the user wrote: sealed like a turn's when encryption is on, opened on read, and
// brought into the store's form by resealAll (rein encryption enable / disable).
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FieldCipher } from './cipher.ts';
import { Store } from './store.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(cipher: FieldCipher | null): Store {
  const dir = mkdtempSync(path.join(tmpdir(), 'rein-signals-store-'));
  dirs.push(dir);
  return new Store(path.join(dir, 'rein.db'), () => 1_700_000_000_000, cipher);
}

const turn = (eventId: string, prompt: string) => ({
  source: 'api', session: 's', eventId, createdAt: 1, prompt, context: [], response: 'r', model: null, tokens: null, logprobs: null, adapterVersion: null, policy: null, truncated: false,
});

describe('signals evidence at rest', () => {
  it('is sealed with encryption on, opened on read, and resealed to plain text and back', () => {
    const cipher = new FieldCipher(new Map([[1, randomBytes(32)]]), 1);
    const store = open(cipher);
    try {
      const a = store.captureTurn(turn('e1', 'fix the parser'), 'test').turn!.id;
      const b = store.captureTurn(turn('e2', "no, that's wrong"), 'test').turn!.id;
      store.signals.record({ turnId: a, kind: 'followup', fromTurnId: b, evidence: "no, that's wrong", score: null, detail: {} });
      const raw = () => store.db.prepare('SELECT evidence FROM signals').get() as { evidence: unknown };
      expect(Buffer.isBuffer(raw().evidence)).toBe(true);
      expect((raw().evidence as Buffer).includes(Buffer.from('wrong'))).toBe(false);
      expect(store.signals.ofTurn(a)[0]!.evidence).toBe("no, that's wrong");
      store.resealAll(null);
      expect(raw().evidence).toBe("no, that's wrong");
      store.cipher = cipher;
      store.resealAll(cipher);
      expect(Buffer.isBuffer(raw().evidence)).toBe(true);
      expect(store.signals.ofTurn(a)[0]!.evidence).toBe("no, that's wrong");
    } finally {
      store.close();
    }
  });
});
