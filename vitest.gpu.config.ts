import { defineConfig } from 'vitest/config';

// The GPU tests: run on the GPU machine (npm run test:gpu), never in CI.
export default defineConfig({
  test: {
    include: ['test/gpu/**/*.test.ts'],
    globalSetup: ['test/setup/temp-root.ts'],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    fileParallelism: false,
  },
});
