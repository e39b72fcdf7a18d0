// Precision and recall of the reader (reader.ts readText) on a hand-labelled corpus of follow-ups
// (fixtures/followups.jsonl: each line a follow-up, its language, what it says about the answer before it: good, bad
// or none, and its split). Precision: of the labels the reader gave at the threshold, the share that match the hand
// label (a label on a "none" line is wrong). Recall: of the lines labelled good or bad by hand, the share the reader
// labelled the same.
import { readText } from './reader.ts';

export interface CorpusLine {
  id: string;
  lang: string;
  /** What the follow-up says about the answer before it. */
  label: 'good' | 'bad' | 'none';
  /** feedback, sarcasm, new-request (a request, not feedback) or mixed (feedback and a request, or "X, but Y"). */
  kind: string;
  /** dev: the lines the rules were tuned on; test: held out, scored only. */
  split: 'dev' | 'test';
  /**
   * Which sitting wrote it: first (before any rule), second and third (after a round of rules; read while tuning the
   * next, so dev), fourth (after the rules froze; test, never read for tuning).
   */
  batch?: string;
  text: string;
}

export interface Score {
  lines: number;
  labelled: number;
  correct: number;
  /** Hand-labelled good or bad. */
  judged: number;
  precision: number;
  recall: number;
}

export interface Miss {
  line: CorpusLine;
  got: 'good' | 'bad' | null;
  rule: string | null;
}

export function parseCorpus(text: string): CorpusLine[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l, i) => {
      const o = JSON.parse(l) as CorpusLine;
      if (!['good', 'bad', 'none'].includes(o.label) || !['dev', 'test'].includes(o.split) || typeof o.text !== 'string') {
        throw new Error(`followups corpus line ${i + 1}: needs label good|bad|none, split dev|test and text`);
      }
      return o;
    });
}

export function scoreLines(lines: readonly CorpusLine[], threshold: number): { score: Score; misses: Miss[] } {
  let labelled = 0;
  let correct = 0;
  let judged = 0;
  const misses: Miss[] = [];
  for (const line of lines) {
    const r = readText(line.text);
    const got = r !== null && r.confidence >= threshold ? r.value : null;
    if (line.label !== 'none') judged++;
    if (got !== null) labelled++;
    if (got !== null && got === line.label) correct++;
    if (got !== (line.label === 'none' ? null : line.label)) misses.push({ line, got, rule: r?.rule ?? null });
  }
  const score = { lines: lines.length, labelled, correct, judged, precision: labelled === 0 ? 1 : correct / labelled, recall: judged === 0 ? 0 : correct / judged };
  return { score, misses };
}

/** One row per group: precision and recall of the lines `key` puts in it. */
export function scoreBy(lines: readonly CorpusLine[], threshold: number, key: (l: CorpusLine) => string): Map<string, Score> {
  const groups = new Map<string, CorpusLine[]>();
  for (const l of lines) groups.set(key(l), [...(groups.get(key(l)) ?? []), l]);
  return new Map([...groups].sort(([a], [b]) => a.localeCompare(b)).map(([k, ls]) => [k, scoreLines(ls, threshold).score]));
}

export function formatScore(name: string, s: Score): string {
  return `${name.padEnd(18)} lines ${String(s.lines).padStart(3)}  labelled ${String(s.labelled).padStart(3)}  correct ${String(s.correct).padStart(3)}  precision ${s.precision.toFixed(3)}  recall ${s.judged === 0 ? '  n/a' : s.recall.toFixed(3)}`;
}
