// Mutation testing of the code whose output users act on: `npm run test:mutation` (not part of npm test;
// CONTRIBUTING.md has the last score and what survives). Two workers at most: the development machine
// has 2 shared cores.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts' },
  plugins: ['@stryker-mutator/vitest-runner'],
  // The functions that decide verdicts (a whole-folder run took hours on the 2-core machine): the
  // statistics, the gate's change, band and exit code, the plan's arithmetic (memory fit, the binding
  // limits, green SM groups, the latency target) and the result checks. Line ranges name functions:
  // move them with the functions (classifyChange to bootstrapChangeCi, gateExitCode, contextOverhead to sloCheck).
  mutate: [
    'harness/stats/**/*.ts',
    'harness/bench/gate/bands.ts',
    'harness/bench/gate/gate.ts:119-189',
    'harness/bench/gate/gate.ts:329-337',
    'harness/deploy/advice.ts:167-306',
    'harness/workload/result-checks.ts',
  ],
  // The sandbox needs the code and the unit tests' fixtures, not the committed runs or the fakes' links.
  ignorePatterns: ['results', 'reports', 'studies', 'dist', 'scratch', 'test/fakes/bin', 'test/e2e', 'test/gpu'],
  concurrency: 2,
  // A static mutant (a module-level constant) reruns every test file: over whole folders, 345 of 2,181
  // mutants took 93% of the time.
  // The constants users act on (levels, resamples, floors) are pinned by their own tests instead.
  ignoreStatic: true,
  reporters: ['clear-text', 'progress', 'json'],
  jsonReporter: { fileName: 'scratch/mutation.json' },
  // Incremental: a later run reuses the results of mutants whose code and tests did not change. Its file
  // (0.8 MB, rewritten by every run) stays out of git: after a test edit most mutants rerun anyway.
  incremental: true,
  incrementalFile: 'scratch/stryker-incremental.json',
  timeoutMS: 30_000,
  cleanTempDir: 'always',
};
