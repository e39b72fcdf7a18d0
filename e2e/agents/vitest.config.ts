// The real-client suite: Claude Code, Codex and OpenClaw (installed by `npm ci --prefix e2e`) run offline in
// network namespaces against fake model servers, through `rein setup` and a real `rein serve`.
// Run: npx vitest run --config e2e/agents/vitest.config.ts (scripts/test.sh does, after the browser suite).
// Files end in .agents.ts so the browser suite's e2e/**/*.test.ts does not pick them up.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: import.meta.dirname + '/../..',
    include: ['e2e/agents/**/*.agents.ts'],
    testTimeout: 30_000,
    hookTimeout: 420_000,
    pool: 'forks',
    // Each client is a heavy process tree; two cores on CI.
    maxWorkers: 1,
    fileParallelism: false,
  },
});
