// The keyring of encryption at rest (cipher.ts): home/keyring.json holds the data keys, sealed under a key derived
// from the user's passphrase (scrypt, RFC 7914; N = 2^15, r = 8, p = 1, OWASP's interactive setting) and, in the app,
// a second copy sealed by the OS keychain (Electron safeStorage, passed in as a KeyProtector, so nothing here imports
// electron). Without the passphrase or the keychain the data keys, and so the sealed text, cannot be read.
//
// Where the passphrase comes from, headless: REIN_PASSPHRASE, or the file named by REIN_PASSPHRASE_FILE (its first
// line). The training worker gets the opened keys from its parent in REIN_DATA_KEYS (an environment only the same user
// can read, /proc/<pid>/environ is 0400) and deletes it from its environment at once.
import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { writeAll, writeFileAtomic } from '../fs-atomic.ts';
import type { ReinHome } from '../home.ts';
import { EncryptionError, FieldCipher } from './cipher.ts';

/** The OS keychain, as the app offers it (electron-main/keychain.ts wraps safeStorage). */
export interface KeyProtector {
  readonly name: string;
  encrypt(plain: Buffer): Buffer;
  decrypt(sealed: Buffer): Buffer;
}

interface KeyringFile {
  format: 'rein-keyring';
  version: 1;
  current: number;
  scrypt: { salt: string; N: number; r: number; p: number };
  /** base64 of IV | GCM tag | ciphertext of {"keys": {id: base64}} under the passphrase's key. */
  sealed: string;
  /** The same key list sealed by the OS keychain, when the app enabled it. */
  keychain: { name: string; sealed: string } | null;
}

const SCRYPT = { N: 1 << 15, r: 8, p: 1 };

export const keyringPath = (home: ReinHome): string => path.join(home.dir, 'keyring.json');

export function hasKeyring(home: ReinHome): boolean {
  return existsSync(keyringPath(home));
}

function kek(passphrase: string, salt: Buffer, p: { N: number; r: number; p: number }): Buffer {
  if (passphrase.length < 8) throw new EncryptionError('the passphrase is shorter than 8 characters');
  return scryptSync(passphrase.normalize('NFC'), salt, 32, { ...p, maxmem: 256 * 1024 * 1024 });
}

function keysJson(c: FieldCipher): Buffer {
  return Buffer.from(JSON.stringify({ keys: Object.fromEntries([...c.keys].map(([id, k]) => [id, k.toString('base64')])) }));
}

function keysFrom(json: Buffer, current: number): FieldCipher {
  const parsed = JSON.parse(json.toString('utf8')) as { keys: Record<string, string> };
  return new FieldCipher(new Map(Object.entries(parsed.keys).map(([id, k]) => [Number(id), Buffer.from(k, 'base64')])), current);
}

/** Writes the keyring (0600, whole or not at all) with the keys sealed under `passphrase`, and the keychain's copy. */
export function saveKeyring(home: ReinHome, cipher: FieldCipher, passphrase: string, protector: KeyProtector | null = null): void {
  const salt = randomBytes(16);
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', kek(passphrase, salt, SCRYPT), iv);
  const body = Buffer.concat([c.update(keysJson(cipher)), c.final()]);
  const file: KeyringFile = {
    format: 'rein-keyring',
    version: 1,
    current: cipher.current,
    scrypt: { salt: salt.toString('base64'), ...SCRYPT },
    sealed: Buffer.concat([iv, c.getAuthTag(), body]).toString('base64'),
    keychain: protector === null ? null : { name: protector.name, sealed: protector.encrypt(keysJson(cipher)).toString('base64') },
  };
  writeFileAtomic(keyringPath(home), (fd) => writeAll(fd, Buffer.from(JSON.stringify(file, null, 2) + '\n')), { mode: 0o600, fsync: true });
}

/** Adds (or renews) the keychain's copy of the keys, leaving the passphrase's part as it is. */
export function ensureKeychainCopy(home: ReinHome, cipher: FieldCipher, protector: KeyProtector): void {
  const f = readKeyring(home);
  if (f.keychain !== null && f.keychain.name === protector.name && f.current === cipher.current) return;
  const next: KeyringFile = { ...f, keychain: { name: protector.name, sealed: protector.encrypt(keysJson(cipher)).toString('base64') } };
  writeFileAtomic(keyringPath(home), (fd) => writeAll(fd, Buffer.from(JSON.stringify(next, null, 2) + '\n')), { mode: 0o600, fsync: true });
}

/** A new keyring with one fresh 256-bit key. */
export function newCipher(): FieldCipher {
  return new FieldCipher(new Map([[1, randomBytes(32)]]), 1);
}

/** The keys plus one fresh key, made current (rotation: rows are re-sealed with it; older keys still open exports). */
export function rotatedCipher(c: FieldCipher): FieldCipher {
  const next = Math.max(...c.keys.keys()) + 1;
  return new FieldCipher(new Map([...c.keys, [next, randomBytes(32)]]), next);
}

function readKeyring(home: ReinHome): KeyringFile {
  let f: KeyringFile;
  try {
    f = JSON.parse(readFileSync(keyringPath(home), 'utf8')) as KeyringFile;
  } catch (e) {
    throw new EncryptionError(`cannot read ${keyringPath(home)}: ${(e as Error).message}`);
  }
  if (f.format !== 'rein-keyring' || f.version !== 1) throw new EncryptionError(`${keyringPath(home)} is not a Rein keyring this version reads`);
  return f;
}

export interface UnlockOptions {
  passphrase?: string | null;
  protector?: KeyProtector | null;
}

/** Opens the keyring with the keychain when it holds a copy, else with the passphrase. */
export function unlockKeyring(home: ReinHome, o: UnlockOptions): FieldCipher {
  const f = readKeyring(home);
  if (o.protector && f.keychain !== null && f.keychain.name === o.protector.name) {
    try {
      return keysFrom(o.protector.decrypt(Buffer.from(f.keychain.sealed, 'base64')), f.current);
    } catch {
      // The keychain changed (a new OS user profile): fall back to the passphrase.
    }
  }
  if (o.passphrase === undefined || o.passphrase === null) {
    throw new EncryptionError(
      `rein.db is encrypted (${keyringPath(home)}) and no key was given: set REIN_PASSPHRASE, or REIN_PASSPHRASE_FILE to a file holding it` +
        (f.keychain !== null ? ', or open the app, which unlocks it from the OS keychain' : ''),
    );
  }
  const raw = Buffer.from(f.sealed, 'base64');
  const d = createDecipheriv('aes-256-gcm', kek(o.passphrase, Buffer.from(f.scrypt.salt, 'base64'), f.scrypt), raw.subarray(0, 12));
  d.setAuthTag(raw.subarray(12, 28));
  let json: Buffer;
  try {
    json = Buffer.concat([d.update(raw.subarray(28)), d.final()]);
  } catch {
    throw new EncryptionError(`the passphrase does not open ${keyringPath(home)}`);
  }
  return keysFrom(json, f.current);
}

/** REIN_PASSPHRASE, or the first line of REIN_PASSPHRASE_FILE; null when neither is set. */
export function passphraseFromEnv(env: NodeJS.ProcessEnv): string | null {
  if (env.REIN_PASSPHRASE !== undefined && env.REIN_PASSPHRASE !== '') return env.REIN_PASSPHRASE;
  if (env.REIN_PASSPHRASE_FILE !== undefined && env.REIN_PASSPHRASE_FILE !== '') return readPassphraseFile(env.REIN_PASSPHRASE_FILE);
  return null;
}

export function readPassphraseFile(file: string): string {
  try {
    return (readFileSync(file === '-' ? 0 : file, 'utf8').split(/\r?\n/)[0] ?? '').trim();
  } catch (e) {
    throw new EncryptionError(`cannot read the passphrase file ${file}: ${(e as Error).message}`);
  }
}

const WORKER_KEYS = 'REIN_DATA_KEYS';

/** The opened keys for a child process's environment (the training worker). */
export function keysForChild(c: FieldCipher): Record<string, string> {
  return { [WORKER_KEYS]: Buffer.from(JSON.stringify({ current: c.current, keys: JSON.parse(keysJson(c).toString('utf8')).keys as unknown })).toString('base64') };
}

/**
 * The cipher of this home, or null when encryption is off. Order: keys handed down by the parent (the worker), the
 * keychain, the passphrase from the environment. Throws an EncryptionError naming what to set when none opens it.
 */
export function openCipher(home: ReinHome, o: { env?: NodeJS.ProcessEnv; protector?: KeyProtector | null } = {}): FieldCipher | null {
  if (!hasKeyring(home)) return null;
  const env = o.env ?? process.env;
  const handed = env[WORKER_KEYS];
  if (handed !== undefined) {
    delete env[WORKER_KEYS];
    const p = JSON.parse(Buffer.from(handed, 'base64').toString('utf8')) as { current: number; keys: Record<string, string> };
    return keysFrom(Buffer.from(JSON.stringify({ keys: p.keys })), p.current);
  }
  return unlockKeyring(home, { passphrase: passphraseFromEnv(env), protector: o.protector ?? null });
}
