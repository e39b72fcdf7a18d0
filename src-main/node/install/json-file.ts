// JSON config files edited by the installers: parse with a named error (the file is left untouched), and write
// back only when the value really changed, so an install over an installed config changes no byte.
import { isDeepStrictEqual } from 'node:util';
import { ReinError } from '../../common/errors.ts';
import { isRecord } from '../integrations/shared/text.ts';

export function parseJsonObject(text: string | null, file: string): Record<string, unknown> {
  if (text === null || text.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new ReinError('conflict', `${file} is not valid JSON (${(e as Error).message}); fix it first, nothing was changed`, {
      detail: { path: file },
    });
  }
  if (!isRecord(v)) throw new ReinError('conflict', `${file} does not hold a JSON object; nothing was changed`, { detail: { path: file } });
  return v;
}

/** The text to write: the original when nothing changed, else 2-space JSON (the style these tools write). */
export function jsonText(original: string | null, before: Record<string, unknown>, after: Record<string, unknown>): string | null {
  if (original !== null && isDeepStrictEqual(before, after)) return original;
  if (original === null && Object.keys(after).length === 0) return null;
  return JSON.stringify(after, null, 2) + '\n';
}
