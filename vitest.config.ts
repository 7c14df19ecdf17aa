import { defineConfig } from 'vitest/config';

/** Timeouts are deadlines for a loaded machine, not performance targets. */
const shared = { testTimeout: 60_000, hookTimeout: 60_000, setupFiles: ['test/setup/names.ts'] };

// Two projects: `fast` runs in process (unit tests, and the CLI through run(argv, deps)), `e2e` spawns
// the built CLI, fake daemons and workloads. npm run test:fast runs the first alone.
export default defineConfig({
  test: {
    globalSetup: ['test/setup/temp-root.ts'],
    projects: [
      { test: { name: 'fast', include: ['test/unit/**/*.test.ts', 'test/cli/**/*.test.ts'], ...shared } },
      { test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], ...shared } },
    ],
  },
});
