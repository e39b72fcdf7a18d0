// The standing reliability suite (issues #19, #21): faults, hostile input and load against the real `rein serve`,
// proxy and installers, at a size CI allows. Each test prints its figures. Run by scripts/test.sh:
//   npx vitest run --config e2e/reliability/vitest.config.ts
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: import.meta.dirname + '/../..',
    include: ['e2e/reliability/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Servers, floods and kill -9: one file at a time on two cores.
    maxWorkers: 1,
    fileParallelism: false,
  },
});
