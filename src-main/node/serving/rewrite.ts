// Setting each choice's `logprobs` to null in a completion, or in a streamed chunk, given as JSON text, without
// parsing and serialising it again: a scan finds the value of `logprobs` in each element of the top-level `choices`
// array and puts `null` in its place, and every other byte is the upstream's own. That is what the proxy sends a
// client that did not ask for logprobs (the proxy asked for them, as the behaviour logprobs of the turn), and the
// scan costs a fraction of JSON.parse + JSON.stringify, on every reply and every streamed token.
//
// Structural characters are ASCII, and inside a JSON string only `"` and `\` matter to find its end, so the scan
// works on a JS string by char codes. Keys are compared as written: an upstream that escaped the letters of
// "choices" or "logprobs" (none does) would get its reply through unchanged.

import { sseData, withoutLogprobs } from './openai.ts';

const QUOTE = 34; // "
const BACKSLASH = 92;
const COMMA = 44;
const COLON = 58;
const OPEN_OBJECT = 123; // {
const CLOSE_OBJECT = 125;
const OPEN_ARRAY = 91; // [
const CLOSE_ARRAY = 93;

function skipWhitespace(s: string, i: number): number {
  for (;;) {
    const c = s.charCodeAt(i);
    if (c !== 32 && c !== 10 && c !== 13 && c !== 9) return i;
    i++;
  }
}

/** The index after the string that starts (with its quote) at i, or -1. */
function skipString(s: string, i: number): number {
  let from = i + 1;
  for (;;) {
    const q = s.indexOf('"', from);
    if (q < 0) return -1;
    let b = q - 1;
    while (s.charCodeAt(b) === BACKSLASH) b--;
    // An even number of backslashes before the quote: they escape each other, and the quote ends the string.
    if ((q - 1 - b) % 2 === 0) return q + 1;
    from = q + 1;
  }
}

/** The index after the value that starts at i, or -1. Objects and arrays are skipped by depth, strings by their quotes. */
function skipValue(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c === QUOTE) return skipString(s, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    let depth = 0;
    for (let j = i; j < s.length; j++) {
      const x = s.charCodeAt(j);
      if (x === QUOTE) {
        const end = skipString(s, j);
        if (end < 0) return -1;
        j = end - 1;
      } else if (x === OPEN_OBJECT || x === OPEN_ARRAY) depth++;
      else if (x === CLOSE_OBJECT || x === CLOSE_ARRAY) {
        if (--depth === 0) return j + 1;
      }
    }
    return -1;
  }
  // A number, true, false or null: up to the next delimiter.
  let j = i;
  for (; j < s.length; j++) {
    const x = s.charCodeAt(j);
    if (x === COMMA || x === CLOSE_OBJECT || x === CLOSE_ARRAY || x === 32 || x === 10 || x === 13 || x === 9) break;
  }
  return j > i ? j : -1;
}

/**
 * Walks the members of the object that opens at i. `member` gets the key's bounds (without quotes) and where its
 * value starts, and returns where the value ends (-1: give up). Returns the index after the closing brace, or -1.
 */
function walkObject(s: string, i: number, member: (keyStart: number, keyEnd: number, value: number) => number): number {
  i = skipWhitespace(s, i + 1);
  if (s.charCodeAt(i) === CLOSE_OBJECT) return i + 1;
  for (;;) {
    if (s.charCodeAt(i) !== QUOTE) return -1;
    const keyEnd = skipString(s, i);
    if (keyEnd < 0) return -1;
    let j = skipWhitespace(s, keyEnd);
    if (s.charCodeAt(j) !== COLON) return -1;
    j = member(i + 1, keyEnd - 1, skipWhitespace(s, j + 1));
    if (j < 0) return -1;
    j = skipWhitespace(s, j);
    const c = s.charCodeAt(j);
    if (c === CLOSE_OBJECT) return j + 1;
    if (c !== COMMA) return -1;
    i = skipWhitespace(s, j + 1);
  }
}

/** Walks the elements of the array that opens at i; like walkObject. */
function walkArray(s: string, i: number, element: (value: number) => number): number {
  i = skipWhitespace(s, i + 1);
  if (s.charCodeAt(i) === CLOSE_ARRAY) return i + 1;
  for (;;) {
    let j = element(i);
    if (j < 0) return -1;
    j = skipWhitespace(s, j);
    const c = s.charCodeAt(j);
    if (c === CLOSE_ARRAY) return j + 1;
    if (c !== COMMA) return -1;
    i = skipWhitespace(s, j + 1);
  }
}

const isKey = (s: string, start: number, end: number, key: string): boolean => end - start === key.length && s.startsWith(key, start);

/**
 * `json` with the value of `logprobs` in every element of its top-level `choices` array replaced by null, everything
 * else as it was. Returns `json` itself when there is nothing to replace, and null when it is not one JSON object
 * this scan can follow (the caller passes such a reply on unchanged).
 */
export function nullLogprobs(json: string): string | null {
  const spans: number[] = [];
  const start = skipWhitespace(json, 0);
  if (json.charCodeAt(start) !== OPEN_OBJECT) return null;
  const choice = (v: number): number =>
    json.charCodeAt(v) !== OPEN_OBJECT
      ? skipValue(json, v)
      : walkObject(json, v, (ks, ke, value) => {
          const end = skipValue(json, value);
          if (end > 0 && isKey(json, ks, ke, 'logprobs') && !isKey(json, value, end, 'null')) spans.push(value, end);
          return end;
        });
  const end = walkObject(json, start, (ks, ke, value) =>
    isKey(json, ks, ke, 'choices') && json.charCodeAt(value) === OPEN_ARRAY ? walkArray(json, value, choice) : skipValue(json, value),
  );
  if (end < 0 || skipWhitespace(json, end) !== json.length) return null;
  if (spans.length === 0) return json;
  let out = '';
  let at = 0;
  for (let k = 0; k < spans.length; k += 2) {
    out += json.slice(at, spans[k]) + 'null';
    at = spans[k + 1]!;
  }
  return out + json.slice(at);
}

const EVENT_END = /(?:\r\n\r\n|\n\n|\r\r)$/;

/**
 * One Server-Sent Event (as SseSplitter returns it, terminator included) with its chunk's logprobs set to null. The
 * usual event, one `data:` line, is rewritten in place by nullLogprobs; an event of several lines is read whole
 * (sseData, JSON.parse) and sent again as one `data:` line. Anything that is not a JSON object (a comment, `[DONE]`)
 * comes back unchanged.
 */
export function eventWithoutLogprobs(event: string): string {
  const term = EVENT_END.exec(event)?.[0] ?? '';
  const to = event.length - term.length;
  const nl = event.indexOf('\n');
  const cr = event.indexOf('\r');
  if ((nl < 0 || nl >= to) && (cr < 0 || cr >= to)) {
    if (!event.startsWith('data:')) return event;
    const from = event.charCodeAt(5) === 32 ? 6 : 5;
    const data = event.slice(from, to);
    const rewritten = nullLogprobs(data);
    return rewritten === null || rewritten === data ? event : event.slice(0, from) + rewritten + event.slice(to);
  }
  const data = sseData(event);
  if (data === null) return event;
  try {
    return `data: ${JSON.stringify(withoutLogprobs(JSON.parse(data)))}${term || '\n\n'}`;
  } catch {
    return event;
  }
}
