// The parser on both sides of the line edit: what it refuses before, and what it refuses after.
import { parse } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { checkToml, findTopLevelKey, removeHookTrust, removeTables, setHookTrust, setTable, setTopLevelKey } from './codex-toml.ts';

const NOTIFY = '["rein", "codex-notify"]';

describe('config.toml: a key that is a table is refused, never taken for absent', () => {
  it.each([
    ['[notify] table', 'model = "o3"\n\n[notify]\ncmd = "x"\n'],
    ['dotted notify.cmd', 'notify.cmd = "x"\n'],
    ['a subtable of notify', '[notify.linux]\ncmd = ["x"]\n'],
  ])('%s', (_, text) => {
    expect(() => findTopLevelKey(text, 'notify')).toThrow(/notify is a table here .*by hand/);
    expect(() => setTopLevelKey(text, 'notify', NOTIFY)).toThrow(/notify is a table here/);
  });

  it('an array of tables and an escaped key name are refused by what they are', () => {
    expect(() => setTopLevelKey('[[notify]]\ncmd = "a"\n', 'notify', NOTIFY)).toThrow(/array of tables/);
    expect(() => setTopLevelKey('"not\\u0069fy" = ["a"]\n', 'notify', NOTIFY)).toThrow(/cannot edit line by line/);
  });

  it('a file that is not TOML is refused with the line and the reason', () => {
    expect(() => checkToml('a = 1\nb = \n')).toThrow(/not valid TOML \(line 2, column 5: invalid value\)/);
    expect(() => setTopLevelKey('notify = ["a"]\nnotify = ["b"]\n', 'notify', NOTIFY)).toThrow(/line 2, column 1: trying to redefine/);
  });

  it("a 'literal' quoted key is found and replaced", () => {
    expect(setTopLevelKey("'notify' = ['a']\n", 'notify', NOTIFY)).toBe(`notify = ${NOTIFY}\n`);
  });
});

describe('config.toml: the form of the file is kept', () => {
  it('CRLF line ends stay CRLF, on the inserted line too', () => {
    const t = 'model = "o3"\r\n\r\n[tui]\r\nx = 1\r\n';
    expect(setTopLevelKey(t, 'notify', NOTIFY)).toBe(`model = "o3"\r\nnotify = ${NOTIFY}\r\n\r\n[tui]\r\nx = 1\r\n`);
    expect(setTopLevelKey(setTopLevelKey(t, 'notify', NOTIFY), 'notify', null)).toBe(t);
  });

  it('a byte-order mark stays, and the key on the first line is still found', () => {
    const t = '\ufeffnotify = ["say"]\nmodel = "o3"\n';
    expect(findTopLevelKey(t, 'notify')?.value).toBe('["say"]');
    expect(setTopLevelKey(t, 'notify', NOTIFY)).toBe(`\ufeffnotify = ${NOTIFY}\nmodel = "o3"\n`);
  });

  it('values a JS number cannot hold, dates and special floats do not stop an edit', () => {
    const t = 'big = 9223372036854775807\nwhen = 1979-05-27T07:32:00Z\nx = nan\ny = -0.0\n';
    const out = setTopLevelKey(t, 'notify', NOTIFY);
    expect(out).toBe(`${t}notify = ${NOTIFY}\n`);
    expect(parse(out, { integersAsBigInt: 'asNeeded' }).big).toBe(9223372036854775807n);
  });
});

describe('config.toml: an edit whose result means something else is refused, and nothing is returned to write', () => {
  it('hook trust where hooks is a value, not a table', () => {
    expect(() => setHookTrust('hooks = "off"\n', 'user:Stop:0', 'sha256:1')).toThrow(/hooks\.state\.user:Stop:0 cannot be a table: hooks is already a value/);
  });

  it('a provider table with a subtable of its own: removing the header alone would leave part of it', () => {
    const t = '[model_providers.rein]\nname = "x"\n\n[model_providers.rein.extra]\ny = 1\n';
    expect(() => setTable(t, '[model_providers.rein]', ['name = "Rein"'])).toThrow(/would change more of the file's meaning/);
    expect(() => removeTables(t, ['[model_providers.rein]'])).toThrow(/would change more of the file's meaning/);
  });

  it('a provider table defined by dotted keys elsewhere: setting it again is refused, not duplicated', () => {
    const t = 'model_providers.rein.name = "mine"\n';
    expect(() => setTable(t, '[model_providers.rein]', ['name = "Rein"'])).toThrow(/not leave valid TOML|would change more/);
  });

  it('hook trust added and removed gives the same text back', () => {
    const t = 'model = "o3"\n\n[hooks]\nenabled = true\n';
    const a = setHookTrust(t, 'user:Stop:0', 'sha256:1');
    expect(parse(a)).toEqual({ model: 'o3', hooks: { enabled: true, state: { 'user:Stop:0': { trusted_hash: 'sha256:1' } } } });
    expect(removeHookTrust(a, ['user:Stop:0'])).toBe(t);
    expect(removeTables(t, ['[model_providers.rein]'])).toBe(t);
  });
});
