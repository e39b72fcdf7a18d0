// Compact encodings for the turns table and the text cap applied at capture.
import { BadInputError } from '../../common/errors.ts';

// Token ids as little-endian Uint32 and behaviour logprobs as little-endian Float32 (migration 0001).
// Every platform Rein ships on (x64, arm64) is little-endian, so the typed arrays' native order is LE.
export function encodeTokens(tokens: readonly number[]): Buffer {
  const a = new Uint32Array(tokens.length);
  tokens.forEach((t, i) => {
    if (!Number.isInteger(t) || t < 0 || t > 0xffff_ffff) throw new BadInputError(`tokens.${i}: ${t} is not a token id`, `tokens.${i}`);
    a[i] = t;
  });
  return Buffer.from(a.buffer);
}

export function encodeLogprobs(logprobs: readonly number[]): Buffer {
  const a = Float32Array.from(logprobs);
  a.forEach((v, i) => {
    if (!Number.isFinite(v) || v > 0) {
      throw new BadInputError(`logprobs.${i}: ${logprobs[i]} is not a finite log-probability in float32 range`, `logprobs.${i}`);
    }
  });
  return Buffer.from(a.buffer);
}

function aligned(buf: Buffer): ArrayBuffer {
  return buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer;
}

export function decodeTokens(buf: Buffer | null): number[] | null {
  return buf === null ? null : Array.from(new Uint32Array(aligned(buf)));
}

export function decodeLogprobs(buf: Buffer | null): number[] | null {
  return buf === null ? null : Array.from(new Float32Array(aligned(buf)));
}

export const truncationMarker = (removed: number): string => `…[truncated ${removed} chars]`;

/**
 * Cuts `text` to at most `max` characters, ending with a visible marker that says how much was removed.
 * The result is never longer than `max`, so capping an already-capped text changes nothing. `dropped` counts
 * characters already removed from the end before `text` was made (it forces the marker).
 */
export function capText(text: string, max: number, dropped = 0): { text: string; cut: boolean } {
  if (text.length <= max && dropped === 0) return { text, cut: false };
  let room = truncationMarker(text.length + dropped).length;
  for (;;) {
    let keep = Math.min(text.length, Math.max(0, max - room));
    // Do not split a UTF-16 surrogate pair.
    const c = text.charCodeAt(keep - 1);
    if (keep > 0 && c >= 0xd800 && c <= 0xdbff) keep -= 1;
    const mark = truncationMarker(text.length - keep + dropped);
    if (mark.length <= room || keep === 0) return { text: text.slice(0, keep) + mark, cut: true };
    room = mark.length;
  }
}

export function parseJson<T>(text: string | null, fallback: T): T {
  if (text === null) return fallback;
  return JSON.parse(text) as T;
}
