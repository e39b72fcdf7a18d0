// The in-place logprobs rewrite against the parse-and-serialise one it replaces (openai.ts withoutLogprobs): on
// random completions with strings made to trip a scanner (quotes, backslashes, braces, a "logprobs" key at other
// depths, non-ASCII), in compact and indented layouts, both must give the same object; in compact layout, the same text.
import { describe, expect, it } from 'vitest';
import { withoutLogprobs } from './openai.ts';
import { eventWithoutLogprobs, nullLogprobs } from './rewrite.ts';

/** A small deterministic PRNG (mulberry32), so a failure can be replayed from its seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NASTY = ['"', '\\', '\\"', '{', '}', '[', ']', ',', ':', 'logprobs', '"logprobs":', 'choices', 'é', '😀', '\n', '\u2028', ' ', 'null', '\\\\"'];

function randomCompletion(r: () => number): Record<string, unknown> {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const str = (): string => Array.from({ length: Math.floor(r() * 6) }, () => (r() < 0.5 ? pick(NASTY) : String.fromCharCode(32 + Math.floor(r() * 90)))).join('');
  const scalar = (): unknown => pick([() => str(), () => r() * 100 - 50, () => Math.floor(r() * 1e6), () => true, () => false, () => null])();
  const value = (depth: number): unknown => {
    if (depth > 2 || r() < 0.5) return scalar();
    if (r() < 0.5) return Array.from({ length: Math.floor(r() * 3) }, () => value(depth + 1));
    const o: Record<string, unknown> = {};
    for (let i = 0; i < r() * 3; i++) o[r() < 0.3 ? 'logprobs' : str()] = value(depth + 1);
    return o;
  };
  const logprobs = () => (r() < 0.2 ? null : { content: Array.from({ length: Math.floor(r() * 4) }, () => ({ token: str(), logprob: -r(), bytes: [1, 2], top_logprobs: [], id: 7 })), refusal: null });
  const choices = Array.from({ length: Math.floor(r() * 4) }, (_, index) => {
    const c: Record<string, unknown> = { index, message: { role: 'assistant', content: str(), logprobs: value(1) }, finish_reason: r() < 0.5 ? 'stop' : null };
    if (r() < 0.8) c.logprobs = logprobs();
    if (r() < 0.3) c[str()] = value(1);
    return c;
  });
  const o: Record<string, unknown> = { id: str(), object: 'chat.completion', model: str(), logprobs: value(0) };
  if (r() < 0.95) o.choices = r() < 0.1 ? [1, 'x', null, ...choices] : choices;
  o.usage = { prompt_tokens: 5, extra: value(1) };
  return o;
}

describe('nullLogprobs', () => {
  it('equals JSON.stringify(withoutLogprobs(JSON.parse(x))) on 3000 random completions, compact and indented', () => {
    for (let seed = 1; seed <= 3000; seed++) {
      const r = rng(seed);
      const obj = randomCompletion(r);
      const compact = JSON.stringify(obj);
      const expected = JSON.stringify(withoutLogprobs(obj));
      const out = nullLogprobs(compact);
      if (out !== expected) expect({ seed, out }).toEqual({ seed, out: expected });
      const indented = JSON.stringify(obj, null, seed % 2 === 0 ? 2 : '\t');
      const spaced = nullLogprobs(` \r\n${indented}\n `);
      if (spaced === null || JSON.stringify(JSON.parse(spaced)) !== expected) expect({ seed, spaced }).toEqual({ seed, spaced: expected });
    }
  });

  it('returns the text itself when there is nothing to replace, and null for what is not one JSON object', () => {
    const plain = '{"id":"x","choices":[{"index":0,"message":{"content":"hi"},"logprobs":null}]}';
    expect(nullLogprobs(plain)).toBe(plain);
    for (const bad of ['', '[]', '"x"', '{"a":1', '{"a":1}}', '{"a":"unterminated}', '{"choices":[{"logprobs":{"a":[1,2}]}', '{"a" 1}', '{"a":1,}x', 'null', '{} {}']) {
      expect(nullLogprobs(bad)).toBeNull();
    }
  });
});

describe('eventWithoutLogprobs', () => {
  const chunk = { id: 'c', choices: [{ index: 0, delta: { content: 'a"}\\' }, logprobs: { content: [{ token: 'a', logprob: -0.1 }] } }] };
  const nulled = JSON.stringify(withoutLogprobs(chunk));

  it('rewrites a data line in place, keeping its prefix and terminator', () => {
    for (const [prefix, end] of [['data: ', '\n\n'], ['data:', '\r\n\r\n'], ['data: ', '\r\r'], ['data: ', '']] as const) {
      expect(eventWithoutLogprobs(`${prefix}${JSON.stringify(chunk)}${end}`)).toBe(`${prefix}${nulled}${end}`);
    }
  });

  it('leaves [DONE], comments and non-JSON alone, and reads an event of several lines whole', () => {
    for (const ev of ['data: [DONE]\n\n', ': keep-alive\n\n', 'data: not json\n\n', 'event: ping\n\n']) expect(eventWithoutLogprobs(ev)).toBe(ev);
    const json = JSON.stringify(chunk);
    const cut = json.indexOf('"choices"');
    expect(eventWithoutLogprobs(`data: ${json.slice(0, cut)}\ndata: ${json.slice(cut)}\n\n`)).toBe(`data: ${nulled}\n\n`);
  });
});
