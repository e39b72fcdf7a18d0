import { describe, expect, it } from 'vitest';
import { parseRl, parseRlArgs, RL_USAGE } from './rl-command.ts';

const cmd = (text: string) => {
  const r = parseRl(text);
  if (r === null) throw new Error(`not an /rl command: ${text}`);
  if (!r.ok) throw new Error(`usage error for ${text}: ${r.error}`);
  return r.command;
};
const err = (text: string) => {
  const r = parseRl(text);
  if (r === null || r.ok) throw new Error(`expected a usage error for ${text}`);
  return r.error;
};

describe('parseRl: what is ours', () => {
  it.each([
    ['/status'],
    ['/good'],
    ['/rlx good'],
    ['/rl-good'],
    ['/rl.good'],
    ['please run /rl good for me'],
    ['I typed /rl good earlier'],
    ['rl good'],
    [''],
    ['   '],
    ['/RL good'],
    ['//rl good'],
  ])('%j is not an /rl command', (text) => {
    expect(parseRl(text)).toBeNull();
  });

  it('accepts leading whitespace and any whitespace after /rl', () => {
    expect(cmd('  /rl good')).toEqual({ kind: 'rate', value: 'good' });
    expect(cmd('/rl\tbad')).toEqual({ kind: 'rate', value: 'bad' });
    expect(cmd('/rl\n  good  \n')).toEqual({ kind: 'rate', value: 'good' });
  });

  it('bare /rl is ours and answers with the usage', () => {
    expect(err('/rl')).toContain(RL_USAGE);
    expect(err('/rl   ')).toContain('needs a rating');
  });
});

describe('parseRl: ratings', () => {
  it.each([
    ['/rl good', 'good'],
    ['/rl GOOD', 'good'],
    ['/rl Bad', 'bad'],
    ['/rl 👍', 'good'],
    ['/rl 👎', 'bad'],
    ['/rl 👍🏽', 'good'],
    ['/rl 👎🏿', 'bad'],
    ['/rl 👍\uFE0F', 'good'],
    ['/rl 1', 1],
    ['/rl 3', 3],
    ['/rl 5', 5],
  ] as const)('%s rates %s', (text, value) => {
    expect(cmd(text)).toEqual({ kind: 'rate', value });
  });

  it('keeps the words after a rating as a comment', () => {
    expect(cmd('/rl bad  edited the wrong file ')).toEqual({ kind: 'rate', value: 'bad', comment: 'edited the wrong file' });
    expect(cmd('/rl 4 close, but verbose')).toEqual({ kind: 'rate', value: 4, comment: 'close, but verbose' });
  });

  it.each(['/rl 0', '/rl 6', '/rl 10', '/rl -1', '/rl 3.5', '/rl +2'])('%s is a usage error naming the range', (text) => {
    expect(err(text)).toMatch(/1 to 5/);
  });

  it('an unknown word is a usage error that names it', () => {
    expect(err('/rl great')).toMatch(/unknown \/rl command "great"/);
    expect(err('/rl 👌')).toMatch(/unknown/);
  });
});

describe('parseRl: fix', () => {
  it('takes a double-quoted correction and unescapes \\" and \\\\', () => {
    expect(cmd('/rl fix "use path.join, not +"')).toEqual({ kind: 'fix', correction: 'use path.join, not +' });
    expect(cmd('/rl fix "say \\"hi\\" and C:\\\\tmp"')).toEqual({ kind: 'fix', correction: 'say "hi" and C:\\tmp' });
  });

  it('takes single and typographic quotes verbatim inside', () => {
    expect(cmd("/rl fix 'a \\n b'")).toEqual({ kind: 'fix', correction: 'a \\n b' });
    expect(cmd('/rl fix \u201Cuse let\u201D')).toEqual({ kind: 'fix', correction: 'use let' });
  });

  it('takes the unquoted rest of the message, newlines and backslashes included', () => {
    expect(cmd('/rl fix return a\\b;\nnot a/b')).toEqual({ kind: 'fix', correction: 'return a\\b;\nnot a/b' });
    expect(cmd('/rl fix it should be "x"')).toEqual({ kind: 'fix', correction: 'it should be "x"' });
  });

  it('refuses an empty correction or an unclosed quote', () => {
    expect(err('/rl fix')).toMatch(/needs the text/);
    expect(err('/rl fix ""')).toMatch(/needs the text/);
    expect(err('/rl fix "   "')).toMatch(/needs the text/);
    expect(err('/rl fix "never closed')).toMatch(/no closing/);
    expect(err('/rl fix "ends in an escaped quote\\"')).toMatch(/no closing/);
    expect(err('/rl fix "')).toMatch(/no closing/);
  });
});

describe('parseRl: commands', () => {
  it('undo, status, help, train', () => {
    expect(cmd('/rl undo')).toEqual({ kind: 'undo' });
    expect(cmd('/rl Status')).toEqual({ kind: 'status' });
    expect(cmd('/rl help')).toEqual({ kind: 'help' });
    expect(cmd('/rl train')).toEqual({ kind: 'train' });
    expect(err('/rl undo twice')).toMatch(/takes no arguments/);
  });

  it('rollback with and without a version', () => {
    expect(cmd('/rl rollback')).toEqual({ kind: 'rollback' });
    expect(cmd('/rl rollback 3')).toEqual({ kind: 'rollback', version: 3 });
    expect(cmd('/rl rollback v2')).toEqual({ kind: 'rollback', version: 2 });
    expect(cmd('/rl rollback 0')).toEqual({ kind: 'rollback', version: 0 });
    expect(err('/rl rollback latest')).toMatch(/version number/);
  });

  it('reset only with confirm', () => {
    expect(cmd('/rl reset confirm')).toEqual({ kind: 'reset' });
    expect(err('/rl reset')).toMatch(/reset confirm/);
    expect(err('/rl reset now')).toMatch(/reset confirm/);
  });
});

describe('parseRlArgs (command_args / ctx.args)', () => {
  it('parses the arguments alone', () => {
    expect(parseRlArgs('good')).toEqual({ ok: true, command: { kind: 'rate', value: 'good' } });
    expect(parseRlArgs(' fix "x" ')).toEqual({ ok: true, command: { kind: 'fix', correction: 'x' } });
    expect(parseRlArgs('').ok).toBe(false);
  });
});
