import { defineConfig } from 'vitest/config';

// Two projects: unit tests (pure, no services) and integration tests on the real local stack.
// Integration files run in separate processes, at most two at a time on the 2-core machines this targets.
export default defineConfig({
  test: {
    pool: 'forks',
    reporters: ['default', './test/support/summary-reporter.ts'],
    maxWorkers: 2,
    projects: [
      { test: { name: 'unit', include: ['test/**/*.unit.test.ts'] } },
      {
        test: {
          name: 'int',
          include: ['test/**/*.int.test.ts'],
          testTimeout: 180_000,
          hookTimeout: 240_000,
        },
      },
    ],
  },
});
