// Turning encryption at rest on and off, rotating its key, and reporting it (`rein encryption`, cipher.ts and keyring.ts).
// The caller holds the home's core lock (cli/commands/encryption.ts), so no server or app has the database open while
// its text changes form.
import { readFileSync, rmSync } from 'node:fs';
import { ReinError } from '../../common/errors.ts';
import { ensureHome, type ReinHome } from '../home.ts';
import { EncryptionError, type FieldCipher } from './cipher.ts';
import { hasKeyring, keyringPath, newCipher, rotatedCipher, saveKeyring, unlockKeyring, type KeyProtector } from './keyring.ts';
import { Store } from './store.ts';

export interface EncryptionStatus {
  enabled: boolean;
  keyring: string | null;
  /** The key new text is sealed with, and how many keys the keyring holds (older ones open older exports). */
  currentKey: number | null;
  keys: number;
  /** Turns whose text is sealed, and turns stored in the clear (0 once enabled). */
  sealedTurns: number;
  plainTurns: number;
}

/** Creates the keyring and seals every stored text with its key. */
export function enableEncryption(home: ReinHome, passphrase: string, protector: KeyProtector | null = null): EncryptionStatus & { turns: number; ratings: number } {
  ensureHome(home);
  if (hasKeyring(home)) throw new ReinError('conflict', `encryption is already on (${keyringPath(home)}); rein encryption rotate changes its key`);
  const cipher = newCipher();
  // The keyring first: were the process killed before the re-seal commits, the text is still plain and readable.
  saveKeyring(home, cipher, passphrase, protector);
  const store = new Store(home.dbPath);
  try {
    const n = store.resealAll(cipher);
    return { ...statusOf(home, store, cipher.current, cipher.keys.size), ...n };
  } finally {
    store.close();
  }
}

/** A new data key for every stored text (and a new passphrase when given); the old keys stay to open old exports. */
export function rotateEncryption(home: ReinHome, passphrase: string, newPassphrase: string | null, protector: KeyProtector | null = null): EncryptionStatus & { turns: number; ratings: number } {
  if (!hasKeyring(home)) throw new ReinError('conflict', 'encryption is off: rein encryption enable turns it on');
  const old = unlockKeyring(home, { passphrase, protector });
  const next = rotatedCipher(old);
  // The keyring holds old and new keys before any row changes, so every row opens at every moment.
  saveKeyring(home, next, newPassphrase ?? passphrase, protector);
  const store = new Store(home.dbPath, Date.now, old);
  try {
    const n = store.resealAll(next);
    return { ...statusOf(home, store, next.current, next.keys.size), ...n };
  } finally {
    store.close();
  }
}

/**
 * Opens every stored text back into the clear and removes the keyring (`unsealMore` opens what lives outside the
 * database, the capture spool, before the keys go). The keyring goes last: were the process killed before, encryption
 * is still on, every row opens with its key, and running disable again finishes the job.
 */
export function disableEncryption(home: ReinHome, passphrase: string, unsealMore: (cipher: FieldCipher) => void = () => {}, protector: KeyProtector | null = null): EncryptionStatus & { turns: number; ratings: number } {
  if (!hasKeyring(home)) throw new ReinError('conflict', 'encryption is already off');
  const cipher = unlockKeyring(home, { passphrase, protector });
  const store = new Store(home.dbPath, Date.now, cipher);
  try {
    const n = store.resealAll(null);
    unsealMore(cipher);
    rmSync(keyringPath(home));
    return { ...statusOf(home, store, null, 0), ...n };
  } finally {
    store.close();
  }
}

export function encryptionStatus(home: ReinHome): EncryptionStatus {
  ensureHome(home);
  // The counts need no key (typeof() of a column), and the keyring names its current key in the clear.
  const store = new Store(home.dbPath);
  try {
    if (!hasKeyring(home)) return statusOf(home, store, null, 0);
    let current: number;
    try {
      current = (JSON.parse(readFileSync(keyringPath(home), 'utf8')) as { current: number }).current;
    } catch (e) {
      throw new EncryptionError(`cannot read ${keyringPath(home)}: ${(e as Error).message}`);
    }
    return statusOf(home, store, current, current);
  } finally {
    store.close();
  }
}

function statusOf(home: ReinHome, store: Store, current: number | null, keys: number): EncryptionStatus {
  const c = store.sealedCounts();
  const on = hasKeyring(home);
  return { enabled: on, keyring: on ? keyringPath(home) : null, currentKey: current, keys, sealedTurns: c.sealed, plainTurns: c.plain };
}
