// `rein encryption status|enable|rotate`: encryption at rest of the stored text (node/store/cipher.ts, keyring.ts).
// The passphrase comes from --passphrase-file FILE ('-' reads stdin's first line), else REIN_PASSPHRASE or
// REIN_PASSPHRASE_FILE: never from argv, which other users can read in the process list.
import { BadInputError } from '../../common/errors.ts';
import { enableEncryption, encryptionStatus, rotateEncryption } from '../../node/store/encryption.ts';
import { passphraseFromEnv, readPassphraseFile } from '../../node/store/keyring.ts';
import { registerCommand } from '../dispatch.ts';

registerCommand({
  name: 'encryption',
  summary: 'Encrypt the stored text at rest: status, enable, rotate (stop rein serve and the app first).',
  usage: 'rein encryption <status|enable|rotate> [--passphrase-file FILE] [--new-passphrase-file FILE]',
  description:
    'enable seals every prompt, answer, context, correction and comment with AES-256-GCM under a key kept in keyring.json, ' +
    'itself sealed by your passphrase (scrypt). rein serve and the CLI then need REIN_PASSPHRASE or REIN_PASSPHRASE_FILE; ' +
    'the app also keeps a copy in the OS keychain. rotate re-seals everything with a new key (and a new passphrase with ' +
    '--new-passphrase-file or REIN_NEW_PASSPHRASE). Exports are sealed too while encryption is on.',
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
      ctx.print(s.enabled ? `encryption: on (key ${s.currentKey} of ${s.keys}); turns sealed ${s.sealedTurns}, in the clear ${s.plainTurns}` : `encryption: off; turns in the clear ${s.plainTurns}`, s);
      return 0;
    }
    if (sub === 'enable') {
      const r = enableEncryption(ctx.home, passphrase());
      ctx.print(`encryption: on. Sealed ${r.turns} turns and ${r.ratings} ratings; keyring ${r.keyring}. Keep the passphrase: without it the text cannot be read.`, r);
      return 0;
    }
    if (sub === 'rotate') {
      const file = ctx.options['new-passphrase-file'];
      const next = typeof file === 'string' ? readPassphraseFile(file) : (ctx.io.env.REIN_NEW_PASSPHRASE ?? null);
      const r = rotateEncryption(ctx.home, passphrase(), next === '' ? null : next);
      ctx.print(`encryption: key ${r.currentKey} now seals ${r.turns} turns and ${r.ratings} ratings${next ? '; the passphrase changed' : ''}.`, r);
      return 0;
    }
    throw new BadInputError(`unknown encryption subcommand "${sub}": use status, enable or rotate`, 'argv');
  },
});
