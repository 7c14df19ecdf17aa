import { defineConfig } from 'vitest/config';

/** Timeouts are deadlines for a loaded machine, not performance targets. */
const timeouts = { testTimeout: 60_000, hookTimeout: 60_000 };

// Two projects: `fast` runs in process (unit tests, and the CLI through run(argv, deps)), `e2e` spawns
// the built CLI, fake daemons and workloads. npm run test:fast runs the first alone.
export default defineConfig({
  test: {
    globalSetup: ['test/setup/temp-root.ts'],
    projects: [
      { test: { name: 'fast', include: ['test/unit/**/*.test.ts', 'test/cli/**/*.test.ts'], ...timeouts } },
      { test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], ...timeouts } },
    ],
  },
});
