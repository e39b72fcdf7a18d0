import { describe, expect, it } from 'vitest';
import { RedactBudget, RedactionTimeoutError } from '../../common/redact.ts';
import { CAP_OVERLAP, redactCapped, scrubRating, scrubTurn } from './scrub.ts';

const KEY = 'sk-proj-4fQ9xZ2mLw8RtY1uVb7NcK3pHs6DgJ0a';

/** A budget already spent. */
function spent(): RedactBudget {
  const b = new RedactBudget(0);
  const until = performance.now() + 2;
  while (performance.now() <= until);
  return b;
}

describe('scrub: the time budget of one request (issue #21 item 1)', () => {
  it('a turn or a rating past its budget throws, and returns nothing to store', () => {
    const t = { session: null, eventId: 'e', prompt: `p ${KEY}`, context: [], response: 'r', model: null, policy: null };
    expect(() => scrubTurn(t, 1000, spent())).toThrow(RedactionTimeoutError);
    expect(() => scrubRating({ correction: null, tags: [], comment: `c ${KEY}`, rater: 'user' }, spent())).toThrow(RedactionTimeoutError);
  });
});

describe('redactCapped', () => {
  it('reads only max + CAP_OVERLAP characters, and counts the rest as removed', () => {
    const text = `${KEY} ` + 'z'.repeat(10 * CAP_OVERLAP);
    const r = redactCapped(text, 100);
    expect(r.cut).toBe(true);
    expect(r.text.length).toBeLessThanOrEqual(100);
    expect(r.text.startsWith('[REDACTED:openai_key] zzz')).toBe(true);
    // The marker counts what the reader no longer sees: the redacted text's tail plus the part never read.
    const removed = Number(/…\[truncated (\d+) chars\]$/.exec(r.text)![1]);
    const redactedLength = '[REDACTED:openai_key] '.length + 100 + CAP_OVERLAP - (KEY.length + 1);
    expect(removed).toBe(redactedLength - (r.text.length - `…[truncated ${removed} chars]`.length) + (text.length - 100 - CAP_OVERLAP));
  });
  it('leaves text within the cap as it was', () => {
    expect(redactCapped('short text', 100)).toEqual({ text: 'short text', cut: false });
  });
});
