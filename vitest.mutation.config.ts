import { defineConfig } from 'vitest/config';

/**
 * The unit tests that guard the verdicts, for `npm run test:mutation` (stryker.config.mjs): the files
 * that exercise stats/, every verdicts.ts, the gate and the result checks, in process, no build needed.
 * Not a project of vitest.config.ts: npm test runs these files there already.
 */
export default defineConfig({
  test: {
    include: [
      'test/unit/verdicts-*.test.ts',
      'test/unit/statistics.test.ts',
      'test/unit/between-runs.test.ts',
      'test/unit/change-points.test.ts',
      'test/unit/mode-decision.test.ts',
      'test/unit/plan-decision.test.ts',
      'test/unit/capacity.test.ts',
      'test/unit/mix.test.ts',
      'test/unit/serve-analysis.test.ts',
      'test/unit/verify-verdicts.test.ts',
    ],
    exclude: ['test/unit/verdicts-gate-run.test.ts'],
    globalSetup: ['test/setup/temp-root.ts'],
    setupFiles: ['test/setup/names.ts', 'test/setup/fast-check.ts', 'test/setup/yield.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
