// The weak-label reader (src-main/common/implicit/reader.ts) on its hand-labelled corpus of follow-ups
// (src-main/common/implicit/fixtures/followups.jsonl): precision and recall per split, batch, language and kind.
// The rules were tuned on the dev split only; the test split is held out (its `fourth` batch was written after the
// rules froze; bench/implicit-reader.test.ts says how each batch was made). `threshold=` sets the confidence a label needs (default: the reader's, 0.8); `misses=dev` lists
// the dev lines the reader gets wrong (never the test ones: tuning on them would make the test split dev).
//   node bench/implicit-reader.ts [threshold=0.8] [misses=dev]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_THRESHOLD } from '../src-main/common/implicit/reader.ts';
import { formatScore, parseCorpus, scoreBy, scoreLines, type CorpusLine } from '../src-main/common/implicit/score.ts';
import { benchArgs } from './args.ts';

export const CORPUS_FILE = path.join(import.meta.dirname, '..', 'src-main', 'common', 'implicit', 'fixtures', 'followups.jsonl');

export function loadCorpus(): CorpusLine[] {
  return parseCorpus(readFileSync(CORPUS_FILE, 'utf8'));
}

const batchOf = (l: CorpusLine): string => l.batch ?? 'first';

/** The table the bench prints: each split, then its batches, languages and kinds. */
export function report(corpus: readonly CorpusLine[], threshold: number): string[] {
  const out: string[] = [`threshold ${threshold}`];
  for (const split of ['dev', 'test'] as const) {
    const lines = corpus.filter((l) => l.split === split);
    out.push(formatScore(split, scoreLines(lines, threshold).score));
    for (const key of [(l: CorpusLine) => `  batch ${batchOf(l)}`, (l: CorpusLine) => `  ${l.lang}`, (l: CorpusLine) => `  ${l.kind}`]) {
      for (const [k, s] of scoreBy(lines, threshold, key)) out.push(formatScore(k, s));
    }
  }
  return out;
}

if (process.argv[1] === import.meta.filename) {
  const args = benchArgs();
  const threshold = args.num('threshold', DEFAULT_THRESHOLD);
  const corpus = loadCorpus();
  console.log(report(corpus, threshold).join('\n'));
  if (args.str('misses', '') === 'dev') {
    for (const m of scoreLines(corpus.filter((l) => l.split === 'dev'), threshold).misses) {
      console.log(`${m.line.label.padEnd(5)} read ${String(m.got).padEnd(5)} ${String(m.rule ?? '').padEnd(14)} ${m.line.text}`);
    }
  }
}
