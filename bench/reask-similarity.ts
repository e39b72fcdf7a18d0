// How the re-ask measure (common/implicit/signals.ts reaskSimilarity: Dice over bags of token ids) separates a prompt
// that restates the previous one from a new request in the same session, on hand-written pairs, for a model's
// tokenizer and for the word fallback. Prints each pair's score and how many of each kind reach REASK_MIN_SIMILARITY.
//   node bench/reask-similarity.ts [model=<HF folder or .gguf>]   (default: the demo model in resources/small-lm)
import { modelTokens, REASK_MIN_SIMILARITY, reaskSimilarity, wordTokens } from '../src-main/common/implicit/signals.ts';
import { SMALL_LM_DIR } from '../src-main/node/demo/small-lm.ts';
import { loadModelTokenizer } from '../src-main/node/model-files/base-model.ts';
import { benchArgs } from './args.ts';

/** [previous prompt, next prompt, whether the next restates the previous]. */
export const PAIRS: readonly [string, string, boolean][] = [
  ['Fix the failing test in parser.ts, the trailing comma case', 'fix the failing trailing comma test in parser.ts please', true],
  ['why does the login page redirect twice?', 'the login page still redirects twice, why?', true],
  ['make the date column sortable', 'I asked you to make the date column sortable', true],
  ['add retries to the HTTP client', 'can you add retries to the http client', true],
  ['rename getUser to fetchUser everywhere', 'rename getUser to fetchUser in every file, not just one', true],
  ['the build fails with "cannot find module utils"', 'build still fails: cannot find module utils', true],
  ['convert this function to async/await', 'please convert the function to async await', true],
  ['write a test for the empty list case', 'write the test for the empty list case again, it does not run', true],
  ['how do I run a single vitest test?', 'how can I run just one test with vitest', true],
  ['remove the unused imports in src/', 'remove all unused imports under src', true],
  ['Fix the failing test in parser.ts, the trailing comma case', 'now add a --json flag to the list command', false],
  ['why does the login page redirect twice?', 'add a logout button to the header', false],
  ['make the date column sortable', 'also make the table paginate after 50 rows', false],
  ['add retries to the HTTP client', 'write the changelog entry for this release', false],
  ['rename getUser to fetchUser everywhere', 'now do the same for getOrder', false],
  ['the build fails with "cannot find module utils"', 'what does the scheduler do when the queue is empty?', false],
  ['convert this function to async/await', 'add type hints to utils.py', false],
  ['write a test for the empty list case', 'write a test for the single element case', false],
  ['how do I run a single vitest test?', 'how do I get coverage with vitest?', false],
  ['remove the unused imports in src/', 'format the repo with prettier', false],
];

if (process.argv[1] === import.meta.filename) {
  const args = benchArgs();
  const model = args.str('model', SMALL_LM_DIR);
  const tok = loadModelTokenizer(model);
  const measures: [string, (t: string) => readonly unknown[]][] = [
    [`raw text through ${model}`, (t) => tok.encode(t)],
    [`lower-cased words through ${model} (what the core uses)`, (t) => modelTokens(t, (w) => tok.encode(w))],
    ['words', wordTokens],
  ];
  for (const [name, split] of measures) {
    console.log(`\n${name} (re-ask when ≥ ${REASK_MIN_SIMILARITY})`);
    let hit = 0;
    let falseHit = 0;
    for (const [a, b, same] of PAIRS) {
      const s = reaskSimilarity(split(a), split(b));
      if (s >= REASK_MIN_SIMILARITY && same) hit++;
      if (s >= REASK_MIN_SIMILARITY && !same) falseHit++;
      console.log(`${s.toFixed(2)}  ${same ? 're-ask' : 'new   '}  ${b}`);
    }
    const n = PAIRS.filter((p) => p[2]).length;
    console.log(`re-asks found: ${hit} of ${n}; new requests taken for re-asks: ${falseHit} of ${PAIRS.length - n}`);
  }
}
