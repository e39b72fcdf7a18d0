import { describe, expect, it } from 'vitest';
import { benchArgs } from './args.ts';

describe('benchArgs', () => {
  it('reads name=value, --name value, --name=value and bare switches, and keeps the raw list', () => {
    const argv = ['episodes=32', '--seq', '128', '--no-8b', '--prepack', 'on', '--x=3', 'model=/tmp/a=b'];
    const a = benchArgs(argv);
    expect([a.num('episodes', 1), a.num('seq', 1), a.num('x', 0), a.num('steps', 7)]).toEqual([32, 128, 3, 7]);
    expect([a.has('no-8b'), a.has('no-torch'), a.str('prepack', ''), a.str('model', ''), a.str('env', 'blackjack')]).toEqual([true, false, 'on', '/tmp/a=b', 'blackjack']);
    expect(a.raw).toEqual(argv);
  });

  it('names the argument of a number that does not parse, and refuses a bare word', () => {
    expect(() => benchArgs(['--seq']).num('seq', 1)).toThrow(/seq must be a number, got null/);
    expect(() => benchArgs(['seq=abc']).num('seq', 1)).toThrow(/seq must be a number, got "abc"/);
    expect(() => benchArgs(['oops'])).toThrow(/"oops" is neither name=value nor --name \[value\]/);
  });
});
