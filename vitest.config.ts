import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src-main/**/*.test.ts', 'eslint-rules/**/*.test.js', 'src-renderer/**/*.test.{ts,tsx}', 'bench/**/*.test.ts', 'resources/**/*.test.ts', 'scripts/**/*.test.ts'],
    exclude: ['**/node_modules/**', 'out/**', 'e2e/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores here: more workers only thrash. Tests that spawn processes set their own timeouts.
    maxWorkers: 2,
  },
});
