// Reads vitest JSON reports and prints the one line CI reads: "N passed, N failed[, N skipped]".
// Exits 1 when a report is missing or unreadable, when any test failed, or when no test ran.
import { readFileSync } from 'node:fs';

let passed = 0;
let failed = 0;
let skipped = 0;
let ok = true;
const files = process.argv.slice(2).filter((f) => !f.includes('*'));
if (files.length === 0) {
  console.error('summarize-tests: no vitest report was written');
  ok = false;
}
for (const f of files) {
  try {
    const r = JSON.parse(readFileSync(f, 'utf8'));
    passed += r.numPassedTests ?? 0;
    failed += (r.numFailedTests ?? 0) + (r.numRuntimeErrorTestSuites ?? 0);
    skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
    if (r.success === false && (r.numFailedTests ?? 0) === 0) failed += 1; // a suite failed to load
  } catch (e) {
    console.error(`summarize-tests: cannot read ${f}: ${e.message}`);
    ok = false;
  }
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
if (!ok || failed > 0 || passed === 0) process.exit(1);
