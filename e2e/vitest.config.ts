// The browser suite: the real renderer in Debian Chromium (playwright-core) against a real `rein serve` child over
// the HTTP transport (ARCHITECTURE §7). Run by scripts/test.sh when this file exists: npx vitest run --config e2e/vitest.config.ts
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: import.meta.dirname + '/..',
    include: ['e2e/*.test.ts'],
    // e2e/agents/ is the real-client suite, with its own config and install.
    exclude: ['e2e/agents/**', 'e2e/node_modules/**'],
    globalSetup: ['e2e/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // A UI answer polled for (expect.poll) may take more than vitest's default second when the two cores are busy
    // (a failed export's message came later than that once under a load average of 10).
    expect: { poll: { timeout: 10_000 } },
    pool: 'forks',
    // One browser and one server at a time: two cores on the CI machine.
    maxWorkers: 1,
    fileParallelism: false,
  },
});
