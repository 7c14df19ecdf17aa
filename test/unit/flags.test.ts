/** The flag mechanisms commands share: a list of whole numbers parsed one way everywhere, and a flag kept under its old name. */
import { describe, expect, it } from 'vitest';
import { resolveBenchOptions } from '../../harness/bench/options.js';
import { resolveCapacityOptions } from '../../harness/capacity/options.js';
import { parseArgv, underNewNames } from '../../harness/cli/parse.js';
import { renamedFlag } from '../../harness/core/command.js';
import { integerList } from '../../harness/core/flags.js';
import { userErrorOf } from '../helpers.js';

describe('a list of whole numbers (--clients)', () => {
  it('is sorted and each count once; an item is taken as typed, so " 4" is refused', () => {
    expect(integerList('8,2,8', '--clients', [2], 1, 64)).toEqual([2, 8]);
    expect(integerList(undefined, '--clients', [1, 2, 4], 1, 64)).toEqual([1, 2, 4]);
    expect(userErrorOf(() => integerList('2, 4', '--clients', [2], 1, 64))).toBe(
      "--clients ' 4': needs a whole number from 1 to 64",
    );
  });

  it('capacity parses --clients exactly as bench does, each with its own range (capacity from 1 client, bench from 2)', () => {
    const capacity = (clients: string) => () => resolveCapacityOptions({ sloP99Ms: '10', clients, rest: [] });
    const bench = (clients: string) => () => resolveBenchOptions({ clients, rest: [] });
    expect(userErrorOf(capacity('2, 4'))).toBe("--clients ' 4': needs a whole number from 1 to 64");
    expect(userErrorOf(bench('2, 4'))).toBe("--clients ' 4': needs a whole number from 2 to 64");
    expect(userErrorOf(capacity('2,,4'))).toBe("--clients '': needs a whole number from 1 to 64");
    expect(capacity('4,1,2')().settings.clientCounts).toEqual([1, 2, 4]);
    expect(userErrorOf(bench('1'))).toBe('--clients 1: needs a number from 2 to 64');
  });
});

describe('a flag kept under its old name', () => {
  const flags = { workloads: { type: 'string' }, workload: renamedFlag('workloads', { type: 'string' }) } as const;

  it('reads the old name as the new one, with one warning', () => {
    expect(underNewNames({ workload: 'spin' }, flags)).toEqual({
      args: { workloads: 'spin' },
      warnings: ['--workload is deprecated: use --workloads'],
    });
    expect(underNewNames({ workloads: 'spin' }, flags)).toEqual({ args: { workloads: 'spin' }, warnings: [] });
  });

  it('refuses both names at once, in one line', () => {
    expect(userErrorOf(() => underNewNames({ workload: 'gemm', workloads: 'spin' }, flags))).toBe(
      '--workload gemm and --workloads spin: give --workloads only (--workload is its old name)',
    );
  });

  it('capacity: --workload is the deprecated alias of --workloads, and --help says so', async () => {
    const parsed = await parseArgv(['capacity', '--slo-p99-ms', '10', '--workload', 'spin'], 110);
    expect(parsed.kind === 'command' && [parsed.args.workloads, parsed.args.workload, parsed.warnings]).toEqual([
      'spin',
      undefined,
      ['--workload is deprecated: use --workloads'],
    ]);
    const help = await parseArgv(['capacity', '--help'], 110);
    expect(help.kind === 'printed' && help.text).toMatch(/--workload .*\[deprecated: use --workloads\]/);
  });
});
