/** The CPUs a run may use (a container's cpuset and CPU quota), and what bench pins clients to. */
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { analyze } from '../../harness/bench/analysis/analyze.js';
import { pinnedCpus } from '../../harness/bench/comparisons.js';
import { runMarkdown } from '../../harness/bench/outputs/markdown.js';
import { loadRun } from '../../harness/bench/record/store.js';
import { cgroupQuota, cpuListText, parseCpuList, readCpuAllowance, usableCpus } from '../../harness/system/cpus.js';
import { DEFAULT_RUN } from '../helpers.js';

/** A file system of these files only. */
const files =
  (texts: Record<string, string>) =>
  (file: string): string | null =>
    texts[file] ?? null;

describe('parseCpuList', () => {
  it('reads a cpuset list, ranges and single CPUs, in order', () => {
    expect(parseCpuList('0-3,8,10-11\n')).toEqual([0, 1, 2, 3, 8, 10, 11]);
    expect(parseCpuList('5')).toEqual([5]);
    expect(parseCpuList('4-7,5')).toEqual([4, 5, 6, 7]);
  });

  it('cpuListText writes it back', () => {
    expect(cpuListText([0, 1, 2, 3, 8, 10, 11])).toBe('0-3,8,10-11');
    expect(cpuListText([5])).toBe('5');
  });

  it('gives null for what is not a list', () => {
    for (const text of ['', '3-1', 'a-b', '1,,2', '0-3 8']) expect(parseCpuList(text)).toBeNull();
  });
});

describe('cgroupQuota', () => {
  it('cgroup v2: the tightest cpu.max of the cgroup and its ancestors, in CPUs', () => {
    const read = files({
      '/proc/self/cgroup': '0::/kubepods/pod1/c1\n',
      '/sys/fs/cgroup/kubepods/pod1/c1/cpu.max': 'max 100000\n',
      '/sys/fs/cgroup/kubepods/pod1/cpu.max': '250000 100000\n',
      '/sys/fs/cgroup/kubepods/cpu.max': '800000 100000\n',
    });
    expect(cgroupQuota(read)).toBe(2.5);
  });

  it('cgroup v2 in its own namespace: the mount root is the container’s cgroup', () => {
    const read = files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/cpu.max': '400000 100000' });
    expect(cgroupQuota(read)).toBe(4);
  });

  it('cgroup v1: cpu.cfs_quota_us over cpu.cfs_period_us where the cpu controller is mounted; -1 is none', () => {
    const v1 = (quota: string) =>
      files({
        '/proc/self/cgroup': '4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n',
        '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us': `${quota}\n`,
        '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us': '100000\n',
      });
    expect(cgroupQuota(v1('150000'))).toBe(1.5);
    expect(cgroupQuota(v1('-1'))).toBeNull();
  });

  it('a cgroup outside the namespace’s root (/../x) names no directory under the mount: not read', () => {
    const read = files({ '/proc/self/cgroup': '0::/../other\n', '/sys/fs/cgroup/cpu.max': '100000 100000\n' });
    expect(cgroupQuota(read)).toBeNull();
  });

  it('no quota anywhere, or nothing to read: null', () => {
    expect(cgroupQuota(files({ '/proc/self/cgroup': '0::/user.slice\n' }))).toBeNull();
    expect(cgroupQuota(files({}))).toBeNull();
  });
});

describe('readCpuAllowance', () => {
  it('reads the affinity from /proc/self/status and the quota from the cgroup', () => {
    const read = files({
      '/proc/self/status': 'Name:\tnode\nCpus_allowed:\tf0\nCpus_allowed_list:\t4-7\nMems_allowed_list:\t0\n',
      '/proc/self/cgroup': '0::/\n',
      '/sys/fs/cgroup/cpu.max': '300000 100000\n',
    });
    expect(readCpuAllowance(read)).toEqual({ allowedCpus: [4, 5, 6, 7], cpuQuota: 3 });
    expect(readCpuAllowance(files({}))).toEqual({ allowedCpus: null, cpuQuota: null });
  });

  it('keeps the affinity to the online CPUs: a process in the root cpuset may be allowed every possible one', () => {
    const read = files({
      '/proc/self/status': 'Cpus_allowed_list:\t0-255\n',
      '/sys/devices/system/cpu/online': '0-63\n',
    });
    expect(readCpuAllowance(read).allowedCpus).toEqual([...Array(64).keys()]);
    expect(usableCpus({ cpus: 64, ...readCpuAllowance(read) }).ids.at(-1)).toBe(63);
  });

  it.runIf(process.platform === 'linux')(
    'on this machine: as many CPUs as the kernel says this process may use',
    () => {
      expect(readCpuAllowance().allowedCpus).toHaveLength(availableParallelism());
    },
  );
});

describe('usableCpus', () => {
  it('every host CPU where a run recorded no allowance (older runs)', () => {
    expect(usableCpus({ cpus: 4 })).toEqual({ ids: [0, 1, 2, 3], count: 4 });
  });

  it('the cpuset’s CPUs, as many at once as the quota pays for, counted down, at least one', () => {
    expect(usableCpus({ cpus: 64, allowedCpus: [8, 9, 10, 11] })).toEqual({ ids: [8, 9, 10, 11], count: 4 });
    expect(usableCpus({ cpus: 64, cpuQuota: 2.5 }).count).toBe(2);
    expect(usableCpus({ cpus: 64, allowedCpus: [8, 9], cpuQuota: 6 }).count).toBe(2);
    expect(usableCpus({ cpus: 64, cpuQuota: 0.5 }).count).toBe(1);
  });
});

describe('--cpu-pin auto', () => {
  const auto = { cpuPin: 'auto' } as const;

  it('pins client i to the i-th highest usable CPU, the lowest left to the harness', () => {
    expect(pinnedCpus(auto, usableCpus({ cpus: 8 }), 2)).toEqual([{ GPUSHARE_CPUS: '7' }, { GPUSHARE_CPUS: '6' }]);
    // A pod's cpuset 8-11 of a 64-CPU host: CPUs 63 and 62 are not its own.
    const cpuset = usableCpus({ cpus: 64, allowedCpus: [8, 9, 10, 11] });
    expect(pinnedCpus(auto, cpuset, 2)).toEqual([{ GPUSHARE_CPUS: '11' }, { GPUSHARE_CPUS: '10' }]);
  });

  it('does not pin with fewer than clients + 2 usable CPUs (a quota counts), off, or on an unknown host', () => {
    expect(pinnedCpus(auto, usableCpus({ cpus: 64, cpuQuota: 3 }), 2)).toEqual([{}, {}]);
    expect(pinnedCpus(auto, usableCpus({ cpus: 64, cpuQuota: 4 }), 2)).toEqual([
      { GPUSHARE_CPUS: '63' },
      { GPUSHARE_CPUS: '62' },
    ]);
    expect(pinnedCpus({ cpuPin: 'off' }, usableCpus({ cpus: 8 }), 2)).toEqual([{}, {}]);
    expect(pinnedCpus(auto, null, 2)).toEqual([{}, {}]);
  });
});

describe('the report says what the run could use', () => {
  const hostRow = async (host: Record<string, unknown>) => {
    const run = await loadRun(DEFAULT_RUN);
    run.fingerprint.host = { ...run.fingerprint.host, ...host };
    return runMarkdown(run, analyze(run), {}, '0.1.0')
      .split('\n')
      .find((line) => line.startsWith('| host |'));
  };

  it('the host’s CPUs alone where nothing limits the run, else its cpuset and quota', async () => {
    expect(await hostRow({ cpus: 16 })).toContain(', 16 CPUs, Node');
    expect(await hostRow({ cpus: 16, allowedCpus: [...Array(16).keys()], cpuQuota: null })).toContain(
      ', 16 CPUs, Node',
    );
    expect(await hostRow({ cpus: 64, allowedCpus: [8, 9, 10, 11], cpuQuota: 2.5 })).toContain(
      ', 64 CPUs, of which the run could use 8-11 and had a quota of 2.5 CPUs: 2 at once, Node',
    );
    expect(await hostRow({ cpus: 16, cpuQuota: 50_000 / 30_000 })).toContain(
      ', 16 CPUs, of which the run had a quota of 1.67 CPUs: 1 at once, Node',
    );
  });
});
