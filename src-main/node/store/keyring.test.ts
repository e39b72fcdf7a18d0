// Encryption at rest, the pieces (cipher.ts, keyring.ts): sealing, tampering, the passphrase and the keychain's copy,
// rotation, and the keys handed to the training worker. The whole path through the CLI and the core is
// e2e/reliability/encryption.test.ts.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureHome, resolveHome } from '../home.ts';
import { isSealed } from './cipher.ts';
import { ensureKeychainCopy, keyringPath, keysForChild, newCipher, openCipher, rotatedCipher, saveKeyring, unlockKeyring, type KeyProtector } from './keyring.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-keyring-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const home = () => ensureHome(resolveHome({ REIN_HOME: path.join(root, `h${n++}`) }));

/** A stand-in for safeStorage: AES-GCM under a key only this object holds. */
function fakeKeychain(name = 'safeStorage:test'): KeyProtector {
  const key = randomBytes(32);
  return {
    name,
    encrypt(plain) {
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([c.update(plain), c.final()]);
      return Buffer.concat([iv, c.getAuthTag(), body]);
    },
    decrypt(sealed) {
      const d = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12));
      d.setAuthTag(sealed.subarray(12, 28));
      return Buffer.concat([d.update(sealed.subarray(28)), d.final()]);
    },
  };
}

describe('field cipher', () => {
  it('seals to a blob that opens to the text, differs each time, and refuses a changed byte', () => {
    const c = newCipher();
    const a = c.seal('a prompt with ünïcode and \u0000 NUL');
    const b = c.seal('a prompt with ünïcode and \u0000 NUL');
    expect(isSealed(a)).toBe(true);
    expect(a.equals(b)).toBe(false);
    expect(c.open(a)).toBe('a prompt with ünïcode and \u0000 NUL');
    const t = Buffer.from(a);
    t[t.length - 1]! ^= 1;
    expect(() => c.open(t)).toThrow(/does not open: it was changed/);
    expect(() => newCipher().open(a)).toThrow(/does not open/);
  });
});

describe('keyring', () => {
  it('opens with the passphrase only, is 0600, and a rotation keeps the old key for old exports', () => {
    const h = home();
    const c = newCipher();
    saveKeyring(h, c, 'first passphrase');
    expect(statSync(keyringPath(h)).mode & 0o777).toBe(0o600);
    expect(readFileSync(keyringPath(h), 'utf8')).not.toContain(c.keys.get(1)!.toString('base64'));
    const sealed = c.seal('old text');
    expect(unlockKeyring(h, { passphrase: 'first passphrase' }).open(sealed)).toBe('old text');
    expect(() => unlockKeyring(h, { passphrase: 'second passphrase' })).toThrow(/passphrase does not open/);
    expect(() => unlockKeyring(h, {})).toThrow(/set REIN_PASSPHRASE/);
    const r = rotatedCipher(c);
    saveKeyring(h, r, 'second passphrase');
    const back = unlockKeyring(h, { passphrase: 'second passphrase' });
    expect(back.current).toBe(2);
    expect(back.open(sealed)).toBe('old text');
    expect(back.open(back.seal('new'))).toBe('new');
    expect(() => unlockKeyring(h, { passphrase: 'first passphrase' })).toThrow(/does not open/);
  });

  it("the keychain's copy opens it without the passphrase, and the environment's passphrase (or its file) does too", () => {
    const h = home();
    const c = newCipher();
    saveKeyring(h, c, 'a passphrase!');
    const kc = fakeKeychain();
    expect(() => openCipher(h, { env: {}, protector: kc })).toThrow(/no key was given/);
    ensureKeychainCopy(h, c, kc);
    expect(openCipher(h, { env: {}, protector: kc })!.open(c.seal('x'))).toBe('x');
    // Another keychain (another OS profile) cannot, and falls back to the passphrase.
    expect(() => openCipher(h, { env: {}, protector: fakeKeychain() })).toThrow(/no key was given/);
    expect(openCipher(h, { env: { REIN_PASSPHRASE: 'a passphrase!' } })!.current).toBe(1);
    const file = path.join(root, 'pass.txt');
    writeFileSync(file, 'a passphrase!\n');
    expect(openCipher(h, { env: { REIN_PASSPHRASE_FILE: file } })!.current).toBe(1);
    expect(openCipher(home(), { env: {} })).toBeNull();
  });

  it('hands the opened keys to a child in its environment, which removes them as it reads them', () => {
    const h = home();
    const c = rotatedCipher(newCipher());
    saveKeyring(h, c, 'a passphrase!');
    const env: NodeJS.ProcessEnv = { ...keysForChild(c) };
    const child = openCipher(h, { env })!;
    expect(env.REIN_DATA_KEYS).toBeUndefined();
    expect(child.current).toBe(2);
    expect(child.open(c.seal('t'))).toBe('t');
  });
});
