/**
 * Every registered command, run on the simulator as a user runs it with COLUMNS=80 (stdout and stderr
 * piped, so $COLUMNS is the width), prints no line wider than 80 columns, nor does its --help. The
 * commands come from cli/registry.ts: a new one is run here with no arguments until ARGS gives it some.
 * Cost kept small: at most 2 processes at a time, short rounds (QUICK), one bench run that report,
 * show, gate, plan, artifacts and fleet report all read.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../harness/cli/registry.js';
import { atShortPath, CLI, QUICK, ROOT, tempDir } from '../helpers.js';

const COLUMNS = 80;

/**
 * Each command's arguments, paths relative to one working directory (so that no line holds this
 * checkout's path). `runs/` holds bench runs alone, for fleet report; other runs go to `other/`.
 */
const ARGS: Readonly<Record<string, readonly string[]>> = {
  demo: ['--out', 'runs/demo'],
  bench: ['--modes', 'timeslice', '--workloads', 'spin', ...QUICK, '--out', 'runs/bench'],
  check: ['--', 'python3', path.join(ROOT, 'workloads', 'infer.py')],
  doctor: [],
  probe: ['--probes', 'memory,fault', '--out', 'other/probe'],
  capacity: [
    '--slo-p99-ms',
    '10',
    '--modes',
    'timeslice',
    '--clients',
    '1',
    '--window-ms',
    '100',
    '--max-steps',
    '3',
    '--out',
    'other/capacity',
  ],
  mix: [
    '--victim-qps',
    '12800',
    '--aggressors',
    'compute',
    '--modes',
    'timeslice',
    '--loads',
    '50',
    '--rounds',
    '1',
    '--window-ms',
    '100',
    '--out',
    'other/mix',
  ],
  gate: ['runs/demo'],
  show: ['runs/demo'],
  report: ['runs/demo', '--out', 'reports'],
  artifacts: ['--run', 'runs/demo', '--out', 'deploy'],
  plan: ['--models', '40', '--mem-gib', '1.5', '--sm-pct', '10', '--run', 'runs/demo'],
  'fleet job': [
    '--nodes',
    'nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3',
    '--count',
    '3',
    '--image',
    'gpushare:0.1.0',
    '--out',
    'job.yaml',
  ],
  'fleet report': ['runs', '--out', 'fleet'],
  'fleet history': ['runs', '--out', 'history'],
};

/** Commands whose runs the others read: run first. */
const FIRST = new Set(['demo', 'bench']);

/** Known exceptions, each to be removed when it fits: none. */
const EXCEPTIONS: Readonly<Record<string, string>> = {};

/**
 * The one kind of line left whole by design: a message on stderr (`gpushare: …`, an error, a refusal,
 * or where a run was saved and the command that resumes it). The house rule keeps it one line, so a
 * script greps it and its command pastes whole; a terminal wraps it. Any other line is checked.
 */
const MESSAGE = /^gpushare: /;

interface Printed {
  argv: string[];
  exitCode: number | undefined;
  lines: string[];
}

const printed = new Map<string, Printed[]>();

/** Runs `jobs` at most `width` at a time: the suite shares 2 cores. */
async function pool<T>(jobs: ReadonlyArray<() => Promise<T>>, width = 2): Promise<void> {
  const queue = [...jobs];
  await Promise.all(
    Array.from({ length: width }, async () => {
      for (let job = queue.shift(); job; job = queue.shift()) await job();
    }),
  );
}

function record(cwd: string, name: string, argv: string[]): () => Promise<void> {
  return async () => {
    const result = await execa(process.execPath, [CLI, ...argv], {
      cwd,
      reject: false,
      env: { GPUSHARE_SIMULATE: '1', COLUMNS: String(COLUMNS) },
      timeout: 150_000,
    });
    // Measured as from a checkout at a short path: a path under the checkout (the simulator's tools, the
    // workloads) is one word no fold can shorten, so its length would make this test pass or fail by
    // where the repository was cloned.
    const lines = [...result.stdout.split('\n'), ...result.stderr.split('\n').filter((l) => !MESSAGE.test(l))].map(
      atShortPath,
    );
    printed.set(name, [...(printed.get(name) ?? []), { argv, exitCode: result.exitCode, lines }]);
  };
}

/** The lines wider than the terminal, each with the command line that printed it. */
function tooWide(name: string): string[] {
  return (printed.get(name) ?? []).flatMap((p) =>
    p.lines
      // A path longer than a line is one word no fold can break (another test's run directory, in doctor's
      // list of MPS daemons left running): only a line of several words must fit.
      .filter((line) => [...line].length > COLUMNS && line.trim().includes(' '))
      .map((line) => `gpushare ${p.argv.join(' ')}: ${[...line].length} columns: ${line}`),
  );
}

describe(`every command on the simulator fits ${COLUMNS} columns`, () => {
  beforeAll(async () => {
    const cwd = tempDir('w-');
    mkdirSync(path.join(cwd, 'other'));
    const words = (name: string) => name.split(' ');
    const runs = (names: readonly string[]) =>
      names.map((name) => record(cwd, name, [...words(name), ...(ARGS[name] ?? [])]));
    const first = COMMANDS.map((c) => c.name).filter((n) => FIRST.has(n));
    const rest = COMMANDS.map((c) => c.name).filter((n) => !FIRST.has(n));
    await pool(runs(first));
    await pool([...runs(rest), ...COMMANDS.map((c) => record(cwd, c.name, [...words(c.name), '--help']))]);
  }, 170_000);

  it.each(COMMANDS.map((c) => [c.name]))('%s', (name) => {
    const runs = printed.get(name) ?? [];
    // Each ran to an answer (an exit code of its own), not a crash or a timeout.
    for (const run of runs) expect(run.exitCode, `gpushare ${run.argv.join(' ')}`).toBeLessThan(64);
    if (EXCEPTIONS[name] !== undefined) return;
    expect(tooWide(name)).toEqual([]);
  });

  it('knows every registered command, and every exception is one', () => {
    for (const name of Object.keys(ARGS)) expect(COMMANDS.map((c) => c.name)).toContain(name);
    for (const name of Object.keys(EXCEPTIONS)) expect(tooWide(name), name).not.toEqual([]);
  });
});
