// `rein encryption status|enable|rotate|disable`: encryption at rest of the stored text (node/store/cipher.ts, keyring.ts).
// The passphrase comes from --passphrase-file FILE ('-' reads stdin's first line), else REIN_PASSPHRASE or
// REIN_PASSPHRASE_FILE: never from argv, which other users can read in the process list.
import { BadInputError, ReinError } from '../../common/errors.ts';
import { acquireLock } from '../../node/core-lock.ts';
import { ensureHome, type ReinHome } from '../../node/home.ts';
import { unsealSpoolFile } from '../../node/core/spool.ts';
import { disableEncryption, enableEncryption, encryptionStatus, rotateEncryption } from '../../node/store/encryption.ts';
import { passphraseFromEnv, readPassphraseFile } from '../../node/store/keyring.ts';
import { registerCommand } from '../dispatch.ts';

/** Runs `fn` holding the home's core lock: no server or app may have the database open while its text changes form. */
function withCoreLock<T>(home: ReinHome, fn: () => T): T {
  ensureHome(home);
  let lock;
  try {
    lock = acquireLock(home.lockPath);
  } catch (e) {
    if (e instanceof ReinError && e.code === 'locked') throw new ReinError('locked', `${e.message}: rein encryption changes every stored text, so stop rein serve and the app first`);
    throw e;
  }
  try {
    return fn();
  } finally {
    lock.release();
  }
}

registerCommand({
  name: 'encryption',
  summary: 'Encrypt the stored text at rest: status, enable, rotate, disable (stop rein serve and the app first).',
  usage: 'rein encryption <status|enable|rotate|disable> [--passphrase-file FILE] [--new-passphrase-file FILE]',
  description:
    'enable seals every prompt, answer, context, correction and comment with AES-256-GCM under a key kept in keyring.json, ' +
    'itself sealed by your passphrase (scrypt). rein serve and the CLI then need REIN_PASSPHRASE or REIN_PASSPHRASE_FILE; ' +
    'the app also keeps a copy in the OS keychain. rotate re-seals everything with a new key (and a new passphrase with ' +
    '--new-passphrase-file or REIN_NEW_PASSPHRASE). Exports are sealed too while encryption is on. disable opens ' +
    'everything back into the clear and deletes the keyring: exports sealed before can no longer be opened, so export again. ' +
    'An operation that was interrupted (a crash, a kill) is finished by running it again, or by the next start of rein serve or the app; status shows how far it got.',
  args: [1, 1],
  options: {
    'passphrase-file': { type: 'string', help: "read the passphrase from this file's first line ('-': stdin)" },
    'new-passphrase-file': { type: 'string', help: 'rotate: the new passphrase, from this file' },
  },
  async run(ctx) {
    const sub = ctx.args[0];
    const passphrase = (): string => {
      const file = ctx.options['passphrase-file'];
      const p = typeof file === 'string' ? readPassphraseFile(file) : passphraseFromEnv(ctx.io.env);
      if (p === null || p === '') throw new BadInputError('no passphrase: pass --passphrase-file FILE, or set REIN_PASSPHRASE or REIN_PASSPHRASE_FILE', 'passphrase-file');
      return p;
    };
    if (sub === 'status') {
      const s = encryptionStatus(ctx.home);
      const p = s.inProgress;
      const line =
        p !== null
          ? `encryption: ${p.op === 'disable' ? 'unsealing' : 'sealing'} in progress: ${p.done} of ${p.total} rows (rein encryption ${p.op} was interrupted; running it again, rein serve or the app finishes it); turns sealed ${s.sealedTurns}, in the clear ${s.plainTurns}`
          : s.enabled
            ? `encryption: on (key ${s.currentKey} of ${s.keys}); turns sealed ${s.sealedTurns}, in the clear ${s.plainTurns}`
            : `encryption: off; turns in the clear ${s.plainTurns}`;
      ctx.print(line, s);
      return 0;
    }
    if (sub === 'enable') {
      const p = passphrase();
      const r = withCoreLock(ctx.home, () => enableEncryption(ctx.home, p));
      ctx.print(`encryption: on. Sealed ${r.turns} turns and ${r.ratings} ratings; keyring ${r.keyring}. Keep the passphrase: without it the text cannot be read.`, r);
      return 0;
    }
    if (sub === 'rotate') {
      const file = ctx.options['new-passphrase-file'];
      const next = typeof file === 'string' ? readPassphraseFile(file) : (ctx.io.env.REIN_NEW_PASSPHRASE ?? null);
      const p = passphrase();
      const r = withCoreLock(ctx.home, () => rotateEncryption(ctx.home, p, next === '' ? null : next));
      ctx.print(`encryption: key ${r.currentKey} now seals ${r.turns} turns and ${r.ratings} ratings${next ? '; the passphrase changed' : ''}.`, r);
      return 0;
    }
    if (sub === 'disable') {
      const p = passphrase();
      const r = withCoreLock(ctx.home, () => disableEncryption(ctx.home, p, (cipher) => unsealSpoolFile(ctx.home.captureSpoolPath, cipher)));
      ctx.print(`encryption: off. ${r.turns} turns and ${r.ratings} ratings are stored in the clear again; the keyring is deleted, so exports sealed before cannot be opened: export again for a plain copy.`, r);
      return 0;
    }
    throw new BadInputError(`unknown encryption subcommand "${sub}": use status, enable, rotate or disable`, 'argv');
  },
});
