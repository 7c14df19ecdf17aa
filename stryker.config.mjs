// Mutation testing of the code whose output users act on: `npm run test:mutation` (not part of npm test;
// CONTRIBUTING.md has the last score and what survives). Two workers at most: the development machine
// has 2 shared cores.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts' },
  plugins: ['@stryker-mutator/vitest-runner'],
  // The code that decides verdicts, by file so that it moves with its code: the statistics (every test
  // and interval), each product's verdicts.ts, the gate's change, band and exit code, and the result
  // checks. `node scripts/mutation-score.mjs` prints the score per product from the JSON report.
  mutate: [
    'harness/stats/**/*.ts',
    'harness/**/verdicts.ts',
    'harness/bench/gate/bands.ts',
    'harness/workload/result-validity.ts',
    // A fleet's largest size at the SLO and what rules a fleet out: verdicts not named verdicts.ts.
    'harness/serve/fleet/fleet-search.ts',
    'harness/serve/fleet/fleet-fit.ts',
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
