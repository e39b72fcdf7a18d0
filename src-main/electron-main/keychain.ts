// The OS keychain for encryption at rest (node/store/keyring.ts): Electron's safeStorage (Keychain on macOS, DPAPI on
// Windows, libsecret/kwallet on Linux) seals a copy of the data keys, so the app opens an encrypted home without
// asking for the passphrase. Null where safeStorage has no backend (a Linux session without a secret service): the
// passphrase (REIN_PASSPHRASE or REIN_PASSPHRASE_FILE) is then the way in. Call after app 'ready'.
import { safeStorage } from 'electron';
import type { KeyProtector } from '../node/store/keyring.ts';

export function safeStorageProtector(): KeyProtector | null {
  if (!safeStorage.isEncryptionAvailable()) return null;
  // Linux's 'basic_text' backend is a fixed key in Chromium's source: no protection, so it is not used.
  if (process.platform === 'linux' && safeStorage.getSelectedStorageBackend?.() === 'basic_text') return null;
  return {
    name: `safeStorage:${process.platform}`,
    encrypt: (plain) => safeStorage.encryptString(plain.toString('base64')),
    decrypt: (sealed) => Buffer.from(safeStorage.decryptString(sealed), 'base64'),
  };
}
