import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The end-to-end files first: they are the long ones, and the short unit files then fill the workers at the
 * end, rather than one long file started late running on alone (a clean clone has no durations cached,
 * and vitest's default then starts the largest files first, whatever their kind).
 */
class EndToEndFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const e2e = (f: TestSpecification) => (f.project.name === 'e2e' ? 0 : 1);
    return sorted.sort((a, b) => e2e(a) - e2e(b));
  }
}

/** Timeouts are deadlines for a loaded machine, not performance targets. */
const shared = {
  hookTimeout: 60_000,
  setupFiles: ['test/setup/names.ts', 'test/setup/fast-check.ts', 'test/setup/yield.ts'],
};

const WORKERS = Math.max(4, availableParallelism());

// Two projects: `fast` runs in process (unit tests, and the CLI through run(argv, deps)), `e2e` spawns
// the built CLI, fake daemons and workloads. npm run test:fast runs the first alone.
export default defineConfig({
  test: {
    globalSetup: ['test/setup/temp-root.ts'],
    // The end-to-end files mostly wait on the fakes' windows and daemons, not on the CPU: run more files
    // at once than vitest's default of one fewer than the cores (one, on a 2-core machine).
    maxWorkers: WORKERS,
    // As many at the end as at the start: with fewer, vitest 3.2 ends idle workers while the fast project's
    // (not isolated, below) are still reused, and the run fails with "Terminating worker thread" (seen
    // with minWorkers left at its default; cf. vitest-dev/vitest#8133).
    minWorkers: WORKERS,
    sequence: { sequencer: EndToEndFirst },
    // The pool keeps its worker processes from one file to the next (vitest makes one pool, from this
    // root setting); each project then says whether a file loads its modules afresh in that process.
    poolOptions: { forks: { isolate: false } },
    projects: [
      {
        test: {
          name: 'fast',
          include: ['test/unit/**/*.test.ts', 'test/cli/**/*.test.ts'],
          // Its files share a worker's modules rather than each loading them afresh, which was a third of
          // the project's CPU. Each file leaves the process as it found it (the environment, the working
          // directory): a file that changes them puts them back in its afterAll.
          poolOptions: { forks: { isolate: false } },
          testTimeout: 60_000,
          ...shared,
        },
      },
      // A whole bench of the fakes takes 15 s on a quiet 2-core machine, and several times that on a busy one.
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          poolOptions: { forks: { isolate: true } },
          testTimeout: 180_000,
          ...shared,
        },
      },
    ],
  },
});
