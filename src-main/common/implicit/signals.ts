// What the user did after an answer, as the store keeps it (node/store/signals.ts) and the reader reads it
// (reader.ts). Pure types and the re-ask measure, shared by the core that records signals and the reader.

/**
 * followup: the next prompt of the same session (its text is the evidence);
 * reask: that prompt restates the previous one (score: their similarity, reaskSimilarity);
 * interrupt: the client reported that the answer was cut off by the user (the evidence is the client's event).
 */
export type SignalKind = 'followup' | 'reask' | 'interrupt';
export const SIGNAL_KINDS: readonly SignalKind[] = ['followup', 'reask', 'interrupt'];

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
 * A follow-up restates the previous prompt when their similarity is at least this. Chosen by reading pairs, not
 * fitted: "fix the failing test in parser.ts" against "the parser test still fails, fix it" scores about 0.6 with a
 * BPE tokenizer, while a new request in the same project ("now add a --json flag") stays under 0.3.
 */
export const REASK_MIN_SIMILARITY = 0.6;

/** Lower-cased runs of letters and digits: the tokens of the re-ask measure when no model's tokenizer can be loaded. */
export function wordTokens(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
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
