/**
 * The CLI refuses what it would otherwise misread: repeated flags, numbers in any form but plain
 * decimal, empty values, a command after -- that --workloads leaves out. Each is one line on stderr and
 * exit 2; and --dry-run prints a workload's argv so that nothing in it reaches the terminal raw.
 * In process, through run(argv, deps), from a fresh empty working directory.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectOneLineError, H200_RUN, ROOT, runCli, tempDir, unbroken } from '../helpers.js';

const RUN = H200_RUN;
const GPU = ['--gpu-model', 'H100-80GB'];
const PLAN = ['plan', '--models', '2', '--mem-gib', '4', '--sm-pct', '20'];

// Relative paths ("a", "", "out") resolve against the process's working directory: an empty one, so
// that a path that meant "here" would show as files in it.
let here = '';
beforeAll(() => {
  here = tempDir();
  process.chdir(here);
});
afterAll(() => process.chdir(ROOT));

/** The CLI run here; what it left in the working directory. */
async function cliIn(args: string[]) {
  const result = await runCli(args, {}, { cwd: here });
  return { ...result, written: readdirSync(here) };
}
const cli = (args: string[]) => runCli(args);

describe.concurrent('a flag given twice is refused, for every command', () => {
  it.each([
    [['bench', '--dry-run', '--rounds', '2', '--rounds', '3'], '--rounds given twice (2, 3): give it once'],
    [
      ['bench', '--dry-run', '--rounds', '2', '--rounds', '3', '--rounds', '4'],
      '--rounds given 3 times (2, 3, 4): give it once',
    ],
    [['bench', '--dry-run', '--max-rounds', '2', '--maxRounds', '3'], '--max-rounds given twice (2, 3): give it once'],
    [
      ['bench', '--dry-run', '--modes', 'streams', '--modes', 'mps'],
      '--modes given twice (streams, mps): give it once',
    ],
    [
      ['bench', '--dry-run', '--workloads', 'gemm', '--workloads', 'spin'],
      '--workloads given twice (gemm, spin): give it once',
    ],
    [['bench', '--dry-run', '--out', 'a', '--out', 'b c'], "--out given twice (a, 'b c'): give it once"],
    [
      ['bench', '--dry-run', '--python', 'python3', '--python', 'python3'],
      '--python given twice (python3, python3): give it once',
    ],
    [
      ['bench', '--dry-run', '--mps-mem-limit', '4G', '--mps-mem-limit', '8G'],
      '--mps-mem-limit given twice (4G, 8G): give it once',
    ],
    [['gate', RUN, '--baseline', RUN, '--baseline', RUN], `--baseline given twice (${RUN}, ${RUN}): give it once`],
    [['gate', RUN, '--junit', 'a.xml', '--junit', 'b.xml'], '--junit given twice (a.xml, b.xml): give it once'],
    [['report', RUN, '--format', 'md', '--format', 'csv'], '--format given twice (md, csv): give it once'],
    [['report', RUN, '--out', 'a', '--out', 'b'], '--out given twice (a, b): give it once'],
    [['artifacts', ...GPU, '--out', 'a', '--out', 'b'], '--out given twice (a, b): give it once'],
    [
      ['artifacts', '--out', 'a', '--gpu-model', 'H100-80GB', '--gpu-model', 'A100-80GB'],
      '--gpu-model given twice (H100-80GB, A100-80GB): give it once',
    ],
    [[...PLAN, '--models', '3', ...GPU], '--models given twice (2, 3): give it once'],
    [['doctor', '--python', 'a', '--python', 'b'], '--python given twice (a, b): give it once'],
  ])('%j', async (args, message) => {
    const result = await cliIn(args);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, message);
    expect(result.written).toEqual([]);
  });

  it('--set stays repeatable', async () => {
    const result = await cli([
      'bench',
      '--dry-run',
      '--modes',
      'timeslice',
      '--workloads',
      'gemm',
      '--set',
      'gemm.size=64',
      '--set',
      'gemm.graph=true',
    ]);
    expect(result.exitCode).toBe(0);
    expect(unbroken(result.stdout)).toContain('--size 64 --dtype fp16 --graph true');
  });
});

type Kind = 'whole' | 'number';
/** Every numeric flag: the command before it, and a value it takes. */
const NUMERIC: Array<[string[], string, string, Kind]> = [
  [['bench', '--dry-run'], '--rounds', '5', 'whole'],
  [['bench', '--dry-run'], '--max-rounds', '40', 'whole'],
  [['bench', '--dry-run'], '--clients', '4', 'whole'],
  [['bench', '--dry-run'], '--gpu', '1', 'whole'],
  [['bench', '--dry-run'], '--streams', '4', 'whole'],
  [['bench', '--dry-run'], '--mps-thread-pct', '50', 'whole'],
  [['bench', '--dry-run'], '--sample-ms', '100', 'whole'],
  [['bench', '--dry-run'], '--ci-target', '0.05', 'number'],
  [['bench', '--dry-run'], '--graded-ci-target', '0.01', 'number'],
  [['bench', '--dry-run'], '--time-budget-s', '100', 'number'],
  [['bench', '--dry-run'], '--window-ms', '100', 'number'],
  [['bench', '--dry-run'], '--min-overlap', '0.5', 'number'],
  [['bench', '--dry-run'], '--ready-timeout-s', '10', 'number'],
  [['bench', '--dry-run'], '--trial-timeout-s', '10', 'number'],
  [['bench', '--dry-run'], '--exit-timeout-s', '5', 'number'],
  [['artifacts', ...GPU, '--out', 'out'], '--replicas', '4', 'whole'],
  [[...PLAN.filter((_, i) => i < 1 || i > 2), ...GPU], '--models', '2', 'whole'],
  [[...PLAN.filter((_, i) => i < 3 || i > 4), ...GPU], '--mem-gib', '4', 'number'],
  [[...PLAN.slice(0, 5), ...GPU], '--sm-pct', '20', 'number'],
  [[...PLAN, ...GPU], '--slo-p99-ms', '50', 'number'],
];

/** Forms that Number() reads as `value` (all in range, so accepted before), but are not plain decimal. */
function otherForms(flag: string, value: string): string[] {
  const n = Number(value);
  // --streams is a comma-separated list, whose items may have spaces around them ("2, 4, 8").
  const spaced = flag === '--streams' ? [] : [` ${value}`, `${value}\n`];
  const signed = [`+${value}`, `${value}e0`];
  if (!Number.isInteger(n))
    return [...spaced, ...signed, value.replace(/^0/, ''), `${value.replace(/^0\./, '')}e-${value.length - 2}`];
  return [...spaced, ...signed, `0x${n.toString(16)}`, `${value}.`];
}

/** A whole-number flag also refuses the value written with a fraction, 4.0 (a number flag takes it). */
const cases = NUMERIC.flatMap(([before, flag, value, kind]) => [
  ...otherForms(flag, value).map((raw) => [before, flag, raw, kind] as const),
  ...(kind === 'whole' ? [[before, flag, `${value}.0`, kind] as const] : []),
  ...(flag === '--streams' ? [[before, flag, '2,0x4', kind] as const] : []),
]);

describe.concurrent('numbers: plain decimal only, on every numeric flag', () => {
  it('the matrix covers every numeric flag of every command', () => {
    expect(new Set(cases.map(([, flag]) => flag)).size).toBe(NUMERIC.length);
    expect(cases.length).toBeGreaterThan(100);
  });

  it.each(cases)('%j %s %j', async (before, flag, raw, kind) => {
    const result = await cliIn([...before, flag, raw]);
    expect(result.exitCode).toBe(2);
    // One line even for "5\n": the value is quoted and escaped when it is not plain.
    expectOneLineError(result.stderr, `${flag} `);
    expect(result.stderr).toMatch(
      new RegExp(`^gpushare: ${flag} .+: needs a ${kind === 'whole' ? 'whole number' : 'number'} from `),
    );
    expect(result.written).toEqual([]);
  });

  it('the plain forms are still taken', async () => {
    const bench = NUMERIC.filter(
      ([before, flag]) => before[0] === 'bench' && !['--rounds', '--window-ms', '--gpu'].includes(flag),
    ).flatMap(([, flag, value]) => [flag, value]);
    // --dry-run checks the GPU as the real run does: the fake nvidia-smi's GPU 0, written 00.
    const dryRun = await cli([
      'bench',
      '--dry-run',
      ...bench,
      '--rounds',
      '007',
      '--window-ms',
      '100.5',
      '--gpu',
      '00',
    ]);
    expect(dryRun.stderr).toBe('');
    expect(dryRun.stdout).toContain(', at least 7 rounds (ABBA)');
    const plan = await cli(
      [...PLAN, ...GPU, '--slo-p99-ms', '50', '--mem-gib', '0.5'].filter((_, i) => i < 3 || i > 4),
    );
    expect(plan.exitCode).toBe(0);
    const artifacts = await cli(['artifacts', ...GPU, '--out', path.join(tempDir(), 'out'), '--replicas', '4']);
    expect(artifacts.exitCode).toBe(0);
  });

  it.each([
    ['gemm.size=0x40', 'needs a positive whole number'],
    ['gemm.size=64.0', 'needs a positive whole number'],
    ['gemm.size=1e2', 'needs a positive whole number'],
    ['gemm.size=+64', 'needs a positive whole number'],
    ['gemm.size= 64', 'needs a positive whole number'],
    ['gemm.size=64 ', 'needs a positive whole number'],
    ['gemm.size=99999999999999999999', 'needs a positive whole number'],
    ['spin.spin-us=1e3', 'needs a positive number'],
    ['spin.spin-us=.5', 'needs a positive number'],
    ['spin.spin-us=5.', 'needs a positive number'],
    ['spin.spin-us=0x10', 'needs a positive number'],
    ['spin.spin-us=+5', 'needs a positive number'],
  ])('--set %s', async (set, message) => {
    const result = await cli(['bench', '--dry-run', '--set', set]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, `--set ${set.includes(' ') ? `'${set}'` : set}: ${message}`);
  });

  it('--set takes plain decimals', async () => {
    const result = await cli([
      'bench',
      '--dry-run',
      '--modes',
      'streams',
      '--workloads',
      'spin',
      '--set',
      'spin.spin-us=2.5',
      '--set',
      'spin.blocks=16',
    ]);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('--blocks 16 --spin-us 2.5');
  });
});

describe.concurrent('an empty value is refused, never taken as the current directory', () => {
  it.each([
    [['bench', '--dry-run', '--out', ''], "--out '': needs a value, not an empty one"],
    [['bench', '--dry-run', '--out'], "--out '': needs a value, not an empty one"],
    [
      [
        'bench',
        '--out',
        '',
        '--rounds',
        '2',
        '--max-rounds',
        '2',
        '--window-ms',
        '100',
        '--modes',
        'streams',
        '--workloads',
        'spin',
      ],
      "--out '': needs a value, not an empty one",
    ],
    [['report', RUN, '--out', ''], "--out '': needs a value, not an empty one"],
    [['artifacts', ...GPU, '--out', ''], "--out '': needs a value, not an empty one"],
    [[...PLAN, ...GPU, '--out', ''], "--out '': needs a value, not an empty one"],
    [['gate', ''], "<run> '': needs a value, not an empty one"],
    [['gate', RUN, '--junit', ''], "--junit '': needs a value, not an empty one"],
  ])('%j', async (args, message) => {
    const result = await cliIn(args);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, message);
    expect(result.written).toEqual([]);
  });
});

describe.concurrent('a command after -- that --workloads leaves out', () => {
  it.each([
    [['--workloads', 'gemm'], 'gemm'],
    [['--workloads', 'spin,gemm'], 'spin,gemm'],
    [['--modes', 'streams', '--workloads', 'spin'], 'spin'],
  ])('%j -- ./x: refused', async (args, workloads) => {
    const result = await cli(['bench', '--dry-run', ...args, '--', './x']);
    expect(result.exitCode).toBe(2);
    expectOneLineError(
      result.stderr,
      `the command after -- is the workload "custom": add custom to --workloads (--workloads ${workloads},custom) or drop the command`,
    );
  });

  it('is run when --workloads names custom, or when --workloads is not given', async () => {
    for (const args of [['--workloads', 'gemm,custom'], []]) {
      const result = await cli(['bench', '--dry-run', '--modes', 'timeslice', ...args, '--', './x']);
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toContain('timeslice/custom:');
    }
  });
});

describe('--dry-run prints a workload argv unambiguously', () => {
  it('escapes control characters and quotes what a shell would split or expand', async () => {
    const argv = ['./my workload', '\u001b[2J\u001b[31mred', 'a\nb', '$(rm -rf /)', "it's", '', '--size', '8'];
    const result = await cli(['bench', '--dry-run', '--modes', 'timeslice', '--', ...argv]);
    expect(result.exitCode).toBe(0);
    // Folded to the terminal as a shell reads it: " \" and the next line's indent are one space.
    expect(unbroken(result.stdout)).toContain(
      `\n  './my workload' $'\\u001b[2J\\u001b[31mred' $'a\\u000ab' '$(rm -rf /)' 'it'\\''s' '' --size 8\n`,
    );
    expect(result.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
  });

  it('leaves a built-in workload argv as it was', async () => {
    const result = await cli(['bench', '--dry-run', '--modes', 'timeslice', '--workloads', 'gemm']);
    expect(unbroken(result.stdout)).toMatch(
      /\n {2}python3 \/\S+\/workloads\/gemm\.py --size 4096 --dtype fp16 --graph false --iterations 400 --sync-every 8\n/,
    );
  });
});

describe('help', () => {
  it.each([[['-h']], [['bench', '-h']], [['gate', '-h']]])('%j prints the usage and exits 0', async (args) => {
    const result = await cli(args);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^gpushare /);
    expect(result.stderr).toBe('');
  });
});

describe('bench --help', () => {
  it('shows the defaults the options fill in, read from the one table of them', async () => {
    const { DEFAULTS } = await import('../../harness/bench/defaults.js');
    const help = String((await cli(['bench', '--help'])).stdout);
    // The text from one flag to the next, with yargs's line wrapping folded away.
    const about = (flag: string) =>
      help
        .split(/\n\s+--/)
        .find((part) => part.startsWith(`${flag} `) || part.startsWith(`-${flag} `))
        ?.replace(/\s+/g, ' ') ?? '';
    const expected: Array<[string, string]> = [
      ['window-ms', String(DEFAULTS.windowMs)],
      ['time-budget-s', String(DEFAULTS.timeBudgetS)],
      ['rounds', String(DEFAULTS.rounds)],
      ['max-rounds', String(DEFAULTS.maxRounds)],
      ['ci-target', String(DEFAULTS.ciTarget)],
      ['trial-timeout-s', String(DEFAULTS.trialTimeoutS)],
      ['cpu-pin', DEFAULTS.cpuPin],
    ];
    for (const [flag, value] of expected) expect(about(flag), flag).toContain(`[default: ${value}]`);
  });
});
