// The reliability suite's headline figures (issue #19): each test states its result in one line, printed with the
// test's output and, when REIN_FIGURES_FILE is set (scripts/test.sh sets it), appended to that file, which the CI
// run prints in its closing note.
import { appendFileSync } from 'node:fs';

export function figure(line: string): void {
  console.log(`FIGURE ${line}`);
  const file = process.env.REIN_FIGURES_FILE;
  if (file) appendFileSync(file, line + '\n');
}
