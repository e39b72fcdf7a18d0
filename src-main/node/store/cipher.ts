// Encryption at rest, field by field (issue #19 item 4): the text a person wrote or an agent answered (a turn's
// prompt, context and response; a rating's correction and comment) is stored as an AES-256-GCM blob when encryption
// is on. Why fields and not the whole file: a SQLCipher build of SQLite for better-sqlite3 means a native module
// compiled against one SQLite fork (better-sqlite3-multiple-ciphers), which Rein would have to ship prebuilt for
// every Electron and Node ABI; node:crypto ships with Node and Electron, and AES-GCM is authenticated, so a changed
// byte fails to open instead of decrypting to garbage. What stays in the clear: ids, times, states, numbers, token
// ids and logprobs, model names and settings.
//
// A sealed field: "RZE1" | key id (4 bytes, big-endian) | IV (12) | GCM tag (16) | ciphertext. SQLite keeps a BLOB
// as it is in a TEXT column, so a sealed field can never be mistaken for text a user wrote.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ReinError } from '../../common/errors.ts';

const MAGIC = Buffer.from('RZE1', 'latin1');
const IV = 12;
const TAG = 16;
const HEAD = MAGIC.length + 4 + IV + TAG;

/** The text columns sealed when encryption is on; rows read through the store open them by these names. */
export const SEALED_COLUMNS = ['prompt', 'context', 'response', 'correction', 'comment'] as const;

export class EncryptionError extends ReinError {
  constructor(message: string) {
    super('not_available', message);
    this.name = 'EncryptionError';
  }
}

export class FieldCipher {
  /** Every key that may have sealed a field (older ones stay, to open rows and exports sealed before a rotation). */
  readonly keys: ReadonlyMap<number, Buffer>;
  /** The key new fields are sealed with. */
  readonly current: number;

  constructor(keys: ReadonlyMap<number, Buffer>, current: number) {
    for (const [id, k] of keys) if (k.length !== 32) throw new EncryptionError(`encryption key ${id} is ${k.length} bytes, not 32`);
    if (!keys.has(current)) throw new EncryptionError(`the keyring has no key ${current}, the one it names current`);
    this.keys = keys;
    this.current = current;
  }

  seal(text: string): Buffer {
    const iv = randomBytes(IV);
    const c = createCipheriv('aes-256-gcm', this.keys.get(this.current)!, iv);
    const id = Buffer.alloc(4);
    id.writeUInt32BE(this.current);
    // The key id is authenticated with the text: a field cannot be moved under another key's id.
    c.setAAD(id);
    const body = Buffer.concat([c.update(text, 'utf8'), c.final()]);
    return Buffer.concat([MAGIC, id, iv, c.getAuthTag(), body]);
  }

  open(blob: Buffer): string {
    if (!isSealed(blob)) throw new EncryptionError('a stored field is a blob that Rein did not seal');
    const idBytes = blob.subarray(4, 8);
    const id = idBytes.readUInt32BE();
    const key = this.keys.get(id);
    if (key === undefined) throw new EncryptionError(`a stored field was sealed with key ${id}, which this keyring does not hold`);
    const d = createDecipheriv('aes-256-gcm', key, blob.subarray(8, 8 + IV));
    d.setAAD(idBytes);
    d.setAuthTag(blob.subarray(8 + IV, HEAD));
    try {
      return Buffer.concat([d.update(blob.subarray(HEAD)), d.final()]).toString('utf8');
    } catch {
      throw new EncryptionError(`a stored field sealed with key ${id} does not open: it was changed, or the key is not the one that sealed it`);
    }
  }
}

/** The id of the key that sealed a field (isSealed(blob) must hold). */
export function sealedKey(blob: Buffer): number {
  return blob.readUInt32BE(4);
}

export function isSealed(v: unknown): v is Buffer {
  return Buffer.isBuffer(v) && v.length >= HEAD && v.subarray(0, 4).equals(MAGIC);
}
