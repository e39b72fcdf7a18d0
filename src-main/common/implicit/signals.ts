// What the user did after an answer, as the store keeps it (node/store/signals.ts) and the reader reads it
// (reader.ts). Pure types and the re-ask measure, shared by the core that records signals and the reader.

/**
 * followup: the next prompt of the same session (its text is the evidence);
 * reask: that prompt restates the previous one (score: their similarity, reaskSimilarity);
 * interrupt: the client reported that the answer was cut off by the user (the evidence is the client's event);
 * revert: a file the answer's turn edited was back at its content from before the edit at the session's next prompt
 * (tools.ts REVERT_WINDOW_MS; the evidence names the file and the time);
 * contradiction: the answer claimed the tests pass or the build succeeds, and a run of them failed (the evidence quotes
 * the claim, the command and its failing line).
 */
export type SignalKind = 'followup' | 'reask' | 'interrupt' | 'revert' | 'contradiction';
export const SIGNAL_KINDS: readonly SignalKind[] = ['followup', 'reask', 'interrupt', 'revert', 'contradiction'];

export interface Signal {
  id: number;
  /** The answer the signal is about. */
  turnId: number;
  kind: SignalKind;
  /** The later turn whose prompt is the evidence, when there is one. */
  fromTurnId: number | null;
  evidence: string;
  score: number | null;
  detail: Record<string, unknown>;
  createdAt: number;
  /** When the user dismissed the label read from it (it stays as evidence), or null. */
  dismissedAt: number | null;
}

/**
 * A follow-up restates the previous prompt when their similarity is at least this. Set by hand, not fitted; on the 20
 * hand-written pairs of bench/reask-similarity.ts it finds most re-asks and takes one or two new requests that reuse
 * the previous prompt's words ("write a test for the single element case" after "... the empty list case") for
 * re-asks, which is why a re-ask alone is below the reader's default threshold (reader.ts SIGNAL_RULES).
 */
export const REASK_MIN_SIMILARITY = 0.6;

/** Lower-cased runs of letters and digits: the tokens of the re-ask measure when no model's tokenizer can be loaded. */
export function wordTokens(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/**
 * The re-ask measure's tokens with a model's tokenizer: each lower-cased word (wordTokens) encoded on its own with a
 * leading space, so "Fix" at the start and " fix" later, or "tests," and "tests", are the same ids, while the subword
 * pieces still match "redirect" in "redirects". On the hand-written pairs of bench/reask-similarity.ts at 0.6, raw text
 * through Qwen2's or Llama's BPE tokenizer (case and leading space are part of each token) found 4 of 10 re-asks and
 * took 2 of 10 new requests for re-asks; this way 10 of 10 and 1 of 10 (plain words: 8 of 10 and 1 of 10).
 */
export function modelTokens(text: string, encode: (word: string) => readonly number[]): number[] {
  return wordTokens(text).flatMap((w) => [...encode(` ${w}`)]);
}

/**
 * The Dice coefficient of two multisets of token ids: 2·|A ∩ B| / (|A| + |B|), each id counted as often as it occurs
 * in both (Sørensen–Dice on bags of tokens). 1 for the same text, 0 when no token is shared; order is ignored, so a
 * prompt reworded around the same words still scores high.
 */
export function reaskSimilarity<T>(a: readonly T[], b: readonly T[]): number {
  if (a.length === 0 || b.length === 0) return 0;
  const count = new Map<T, number>();
  for (const t of a) count.set(t, (count.get(t) ?? 0) + 1);
  let shared = 0;
  for (const t of b) {
    const n = count.get(t) ?? 0;
    if (n > 0) {
      shared++;
      count.set(t, n - 1);
    }
  }
  return (2 * shared) / (a.length + b.length);
}
