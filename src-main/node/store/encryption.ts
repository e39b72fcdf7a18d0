// Turning encryption at rest on and off, rotating its key, and reporting it (`rein encryption`, cipher.ts and keyring.ts).
// The caller holds the home's core lock (cli/commands/encryption.ts), so no server or app has the database open while
// its text changes form.
//
// Each operation is journaled, so a crash or a kill -9 part-way loses nothing and is finished later: the journal
// (encryption-journal.json: the operation and the key it seals with) is written before the keyring changes, the rows
// are re-sealed in idempotent batches (Store.resealAll skips rows already in the target form), and the journal goes
// last. The next core start (rein serve, the app, a CLI command: resumeEncryption) or running the command again
// finishes it. A file and not a database row: the journal must be read before the database is opened with a key, and
// it orders against the keyring, itself a file.
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ReinError } from '../../common/errors.ts';
import { writeAll, writeFileAtomic } from '../fs-atomic.ts';
import { ensureHome, type ReinHome } from '../home.ts';
import { EncryptionError, type FieldCipher } from './cipher.ts';
import { hasKeyring, keyringPath, newCipher, rotatedCipher, saveKeyring, unlockKeyring, type KeyProtector } from './keyring.ts';
import { Store } from './store.ts';

export type SealOp = 'enable' | 'rotate' | 'disable';

export interface EncryptionStatus {
  enabled: boolean;
  keyring: string | null;
  /** The key new text is sealed with, and how many keys the keyring holds (older ones open older exports). */
  currentKey: number | null;
  keys: number;
  /** Turns whose text is sealed, and turns stored in the clear (0 once enabled). */
  sealedTurns: number;
  plainTurns: number;
  /**
   * An enable, rotate or disable that has not finished (it was killed, or a crash stopped it): rows (turns and
   * ratings) already in the target form, of all rows. Null when every row is in the form the keyring says.
   */
  inProgress: { op: SealOp; done: number; total: number } | null;
}

interface Journal {
  op: SealOp;
  /** The key every row ends sealed with; null for disable (every row ends in the clear). */
  key: number | null;
  startedAt: number;
}

export const journalPath = (home: ReinHome): string => path.join(home.dir, 'encryption-journal.json');

function readJournal(home: ReinHome): Journal | null {
  let text: string;
  try {
    text = readFileSync(journalPath(home), 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new EncryptionError(`cannot read ${journalPath(home)}: ${(e as Error).message}`);
  }
  const j = JSON.parse(text) as Journal;
  if (!['enable', 'rotate', 'disable'].includes(j.op) || !(j.key === null || Number.isInteger(j.key))) throw new EncryptionError(`${journalPath(home)} is not an encryption journal this version reads`);
  return j;
}

function writeJournal(home: ReinHome, op: SealOp, key: number | null): Journal {
  const j: Journal = { op, key, startedAt: Date.now() };
  writeFileAtomic(journalPath(home), (fd) => writeAll(fd, Buffer.from(JSON.stringify(j) + '\n')), { mode: 0o600, fsync: true });
  return j;
}

/** The key the keyring names current, read without the passphrase; null when there is no keyring. */
function keyringCurrent(home: ReinHome): number | null {
  if (!hasKeyring(home)) return null;
  try {
    return (JSON.parse(readFileSync(keyringPath(home), 'utf8')) as { current: number }).current;
  } catch (e) {
    throw new EncryptionError(`cannot read ${keyringPath(home)}: ${(e as Error).message}`);
  }
}

/**
 * The journal of an operation whose keyring change happened (so rows may be part-way), or null. A journal written
 * just before a kill that came before the keyring changed describes nothing that happened (the next operation
 * overwrites it, the next start removes it).
 */
function liveJournal(home: ReinHome): Journal | null {
  const j = readJournal(home);
  if (j === null) return null;
  const current = keyringCurrent(home);
  return (j.op === 'disable' ? current !== null : current !== null && current === j.key) ? j : null;
}

/** Re-seals every row into the journal's form with the store's keys, then ends the operation (keyring, journal). */
function finish(home: ReinHome, store: Store, j: Journal, unsealMore: (cipher: FieldCipher) => void): { turns: number; ratings: number } {
  const keys = store.cipher;
  if (keys === null) throw new EncryptionError('an encryption operation is part-way and no key is loaded: set REIN_PASSPHRASE or REIN_PASSPHRASE_FILE');
  const n = store.resealAll(j.op === 'disable' ? null : keys);
  if (j.op === 'disable') {
    unsealMore(keys);
    // The keyring goes after every row and the spool are in the clear: until then every row opens with its key.
    rmSync(keyringPath(home), { force: true });
  }
  rmSync(journalPath(home), { force: true });
  return n;
}

/**
 * Finishes an enable, rotate or disable that a kill or crash interrupted (the core calls it at start-up, with the
 * store opened with the home's keys). Does nothing when no operation is part-way.
 */
export function resumeEncryption(home: ReinHome, store: Store, unsealMore: (cipher: FieldCipher) => void = () => {}): SealOp | null {
  const j = liveJournal(home);
  if (j === null) {
    rmSync(journalPath(home), { force: true });
    return null;
  }
  finish(home, store, j, unsealMore);
  return j.op;
}

type Done = EncryptionStatus & { turns: number; ratings: number };

function run(home: ReinHome, cipher: FieldCipher, j: Journal, unsealMore: (cipher: FieldCipher) => void = () => {}): Done {
  const store = new Store(home.dbPath, Date.now, cipher);
  try {
    const n = finish(home, store, j, unsealMore);
    return { ...statusOf(home, store), ...n };
  } finally {
    store.close();
  }
}

/**
 * Creates the keyring and seals every stored text with its key. With a keyring already there, it finishes an
 * interrupted enable or rotate (or seals what is still in the clear) with the passphrase; refused when all is sealed.
 */
export function enableEncryption(home: ReinHome, passphrase: string, protector: KeyProtector | null = null): Done {
  ensureHome(home);
  if (hasKeyring(home)) {
    const cipher = unlockKeyring(home, { passphrase, protector });
    const j = liveJournal(home);
    if (j === null || j.op === 'disable') {
      const s = encryptionStatus(home);
      if (j === null && s.inProgress === null) throw new ReinError('conflict', `encryption is already on (${keyringPath(home)}); rein encryption rotate changes its key`);
    }
    return run(home, cipher, j !== null && j.op !== 'disable' ? j : writeJournal(home, 'enable', cipher.current));
  }
  const cipher = newCipher();
  // The journal, then the keyring: killed between the two, the journal names a key no keyring holds and is dropped.
  const j = writeJournal(home, 'enable', cipher.current);
  saveKeyring(home, cipher, passphrase, protector);
  return run(home, cipher, j);
}

/**
 * A new data key for every stored text (and a new passphrase when given); the old keys stay to open old exports.
 * A rotation that was interrupted is finished instead of starting another (its keyring opens with either passphrase).
 */
export function rotateEncryption(home: ReinHome, passphrase: string, newPassphrase: string | null, protector: KeyProtector | null = null): Done {
  if (!hasKeyring(home)) throw new ReinError('conflict', 'encryption is off: rein encryption enable turns it on');
  const part = liveJournal(home);
  if (part !== null && part.op === 'rotate') {
    let cipher: FieldCipher;
    try {
      cipher = unlockKeyring(home, { passphrase, protector });
    } catch (e) {
      // The interrupted rotation saved its keyring under the new passphrase.
      if (newPassphrase === null) throw e;
      cipher = unlockKeyring(home, { passphrase: newPassphrase, protector });
    }
    return run(home, cipher, part);
  }
  const old = unlockKeyring(home, { passphrase, protector });
  const next = rotatedCipher(old);
  const j = writeJournal(home, 'rotate', next.current);
  // The keyring holds old and new keys before any row changes, so every row opens at every moment.
  saveKeyring(home, next, newPassphrase ?? passphrase, protector);
  return run(home, next, j);
}

/**
 * Opens every stored text back into the clear and removes the keyring (`unsealMore` opens what lives outside the
 * database, the capture spool, before the keys go). The keyring goes last: were the process killed before, encryption
 * is still on, every row opens with its key, and running disable again (or the next start) finishes the job.
 */
export function disableEncryption(home: ReinHome, passphrase: string, unsealMore: (cipher: FieldCipher) => void = () => {}, protector: KeyProtector | null = null): Done {
  if (!hasKeyring(home)) {
    if (readJournal(home) === null) throw new ReinError('conflict', 'encryption is already off');
    // Killed after the keyring went and before the journal did: everything is in the clear already.
    rmSync(journalPath(home), { force: true });
    return { ...encryptionStatus(home), turns: 0, ratings: 0 };
  }
  const cipher = unlockKeyring(home, { passphrase, protector });
  const part = liveJournal(home);
  return run(home, cipher, part !== null && part.op === 'disable' ? part : writeJournal(home, 'disable', null), unsealMore);
}

export function encryptionStatus(home: ReinHome): EncryptionStatus {
  ensureHome(home);
  // The counts need no key (typeof() of a column), and the keyring names its current key in the clear.
  const store = new Store(home.dbPath);
  try {
    return statusOf(home, store);
  } finally {
    store.close();
  }
}

function statusOf(home: ReinHome, store: Store): EncryptionStatus {
  const c = store.sealedCounts();
  const current = keyringCurrent(home);
  const j = liveJournal(home);
  // The target form: the journal's, else the keyring's. Rows not in it mean a seal is part-way (an older Rein, killed
  // during enable, left the keyring with rows in the clear and no journal: that shows here too, as an enable).
  const target = j !== null ? j.key : current;
  const f = store.formCounts(target);
  const inProgress = j !== null || f.done < f.total ? { op: j?.op ?? (current === null ? 'disable' : 'enable'), done: f.done, total: f.total } : null;
  return { enabled: current !== null, keyring: current !== null ? keyringPath(home) : null, currentKey: current, keys: current ?? 0, sealedTurns: c.sealed, plainTurns: c.plain, inProgress };
}
