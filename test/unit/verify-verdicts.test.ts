/**
 * verify's verdicts and the named cases' decisions at their boundaries, on recorded output: the H100
 * probe run 2026-11-23-h100-80gb-hbm3-probe-84e6b8 (driver 580.159.04: its smcap points and its
 * memory probe under a 2048 MiB limit) and the H100 observations issue 39 quotes (driver 580.159.04,
 * 2026-11-27: under 0=4G a client saw 3.5 GiB free of 79.18 GiB and stopped at 3 GiB; under 0=4G,1=4G
 * it saw 78.6 GiB free and allocated all 12 GiB asked for).
 */
import { describe, expect, it } from 'vitest';
import { bandwidthShared, capDiffers, limitIgnored, outsideMps, totalTrap } from '../../harness/verify/cases.js';
import {
  attachVerdict,
  memInfoVerdict,
  memoryLimitVerdict,
  migVerdict,
  replicasVerdict,
  threadCapVerdict,
  verifyExitCode,
  visibleDevicesVerdict,
} from '../../harness/verify/verdicts.js';

/** The probe run's smcap points (threadPercentage → SMs, TFLOPS). */
const H100_SMCAP = {
  100: { sms: 132, tflops: 634.8415918862552 },
  50: { sms: 66, tflops: 412.1696813096105 },
  25: { sms: 32, tflops: 231.86645141882988 },
};
const GIB = 1024;

describe('threadCapVerdict', () => {
  it.each([
    ['recorded: 25% cap, 32 of 132 SMs', 25, H100_SMCAP[25], 'enforced'],
    ['recorded: 50% cap, 66 of 132 SMs (65% of the rate: power-capped clocks)', 50, H100_SMCAP[50], 'enforced'],
    ['recorded: a 25% cap that reached the whole GPU', 25, H100_SMCAP[100], 'not enforced'],
    ['recorded: 25% declared, the 50% cap applied', 25, H100_SMCAP[50], 'partly'],
  ] as const)('%s', (_name, pct, capped, verdict) => {
    expect(threadCapVerdict(pct, { capped, full: H100_SMCAP[100] }).verdict).toBe(verdict);
  });

  /** A GPU of 100 SMs and 1000 TFLOPS, so that the boundaries are exact. */
  const FULL = { sms: 100, tflops: 1000 };
  it.each([
    ['SMs at declared + 10 points: enforced', 25, { sms: 35, tflops: 500 }, 'enforced'],
    ['SMs past declared + 10 points: partly', 25, { sms: 36, tflops: 500 }, 'partly'],
    ['SMs capped but the rate at 90% of uncapped: partly', 25, { sms: 25, tflops: 900 }, 'partly'],
    ['SMs capped, the rate just under 90%: enforced', 25, { sms: 25, tflops: 899.9 }, 'enforced'],
    ['SMs and rate at 90%: not enforced', 25, { sms: 90, tflops: 900 }, 'not enforced'],
    ['SMs at 89%, rate 95%: partly', 25, { sms: 89, tflops: 950 }, 'partly'],
    ['SMs at 95%, rate 50%: partly', 25, { sms: 95, tflops: 500 }, 'partly'],
    ['a 95% cap near the whole rate: enforced', 95, { sms: 95, tflops: 990 }, 'enforced'],
    // A cap of 90% or more may reach the uncapped rate: at exactly 90% it still holds.
    ['a 90% cap at 90 SMs and 95% of the rate: enforced', 90, { sms: 90, tflops: 950 }, 'enforced'],
  ] as const)('%s', (_name, pct, capped, verdict) => {
    expect(threadCapVerdict(pct, { capped, full: FULL }).verdict).toBe(verdict);
  });

  it('names the SMs and the rate it measured, and the tolerance', () => {
    const j = threadCapVerdict(25, { capped: H100_SMCAP[25], full: H100_SMCAP[100] });
    expect(j.measured).toBe('32 of 132 SMs (24%); 37% of the uncapped GEMM rate (231.9 of 634.8 TFLOPS)');
    expect(j.tolerance).toBe('SMs ±10 points of the GPU; rate below 90% of uncapped');
  });

  it.each([
    ['no SMs', { sms: 0, tflops: 1000 }],
    ['no rate', { sms: 100, tflops: 0 }],
    ['nothing', { sms: 0, tflops: 0 }],
    ['SMs below 0 (a broken reading)', { sms: -100, tflops: 1000 }],
    ['a rate below 0 (a broken reading)', { sms: 100, tflops: -1000 }],
  ] as const)('an uncapped client that measured %s: not enforced, and says so', (_name, full) => {
    expect(threadCapVerdict(25, { capped: { sms: 25, tflops: 500 }, full })).toMatchObject({
      verdict: 'not enforced',
      change: 'the uncapped client measured nothing',
    });
  });

  it.each([
    // [declared, capped, the fix names]
    [25, { sms: 36, tflops: 500 }, 'the client gets 36% of the SMs, not 25%: check the daemon'],
    [25, { sms: 89, tflops: 950 }, 'the client gets 89% of the SMs, not 25%'],
    // At declared + 10 points the SM count holds: the rate is what did not.
    [25, { sms: 35, tflops: 900 }, 'the SM count is capped but the client still reaches the uncapped rate'],
    [25, { sms: 25, tflops: 900 }, 'the SM count is capped but the client still reaches the uncapped rate'],
  ] as const)('partly at %i%% with %j: the fix names what did not hold', (pct, capped, fix) => {
    const j = threadCapVerdict(pct, { capped, full: { sms: 100, tflops: 1000 } });
    expect(j.verdict).toBe('partly');
    expect(j.change).toContain(fix);
  });

  it('the whole GPU reached: the fix names the pipe directory and the order', () => {
    expect(threadCapVerdict(25, { capped: H100_SMCAP[100], full: H100_SMCAP[100] }).change).toContain(
      'check that it is a client of this daemon (CUDA_MPS_PIPE_DIRECTORY)',
    );
  });
});

describe('memoryLimitVerdict', () => {
  it.each([
    ['recorded probe: 1408 MiB held under 2048 MiB', 2048, 1408, 3072, 'enforced'],
    ['recorded issue 39: 3 GiB under 0=4G', 4 * GIB, 3 * GIB, 12 * GIB, 'enforced'],
    ['recorded issue 39: 12 of 12 GiB under 0=4G,1=4G', 4 * GIB, 12 * GIB, 12 * GIB, 'not enforced'],
    ['limit + 64 MiB: enforced', 4096, 4160, 8192, 'enforced'],
    ['limit + 65 MiB: partly', 4096, 4161, 8192, 'partly'],
    ['bound - 64 MiB: not enforced', 4096, 8128, 8192, 'not enforced'],
    ['bound - 65 MiB: partly', 4096, 8127, 8192, 'partly'],
  ] as const)('%s', (_name, limit, held, bound, verdict) => {
    expect(memoryLimitVerdict(limit, { heldMib: held, boundMib: bound, error: null }).verdict).toBe(verdict);
  });

  it('says what was allocated, whether it ran out, and the fix', () => {
    expect(memoryLimitVerdict(2048, { heldMib: 1408, boundMib: 3072, error: 'out of memory' })).toEqual({
      verdict: 'enforced',
      measured: 'allocated 1408 MiB of the 3072 MiB asked for, then out of memory',
      tolerance: '+64 MiB',
      change: null,
    });
    expect(memoryLimitVerdict(4096, { heldMib: 12 * GIB, boundMib: 12 * GIB, error: null })).toMatchObject({
      measured: 'allocated 12288 MiB of the 12288 MiB asked for',
      change: expect.stringContaining('nothing stopped the client: give the limit per visible GPU index'),
    });
    expect(memoryLimitVerdict(4096, { heldMib: 6144, boundMib: 12 * GIB, error: 'oom' }).change).toBe(
      'a limit acted at 6144 MiB, above the 4096 MiB declared: check which limit the daemon applies (get_default_device_pinned_mem_limit)',
    );
  });
});

describe('memInfoVerdict', () => {
  it.each([
    ['recorded issue 39: 3.5 GiB free of 79.18 GiB under 0=4G', 3.5 * GIB, 'enforced'],
    ['recorded issue 39: 78.6 GiB free under 0=4G,1=4G', 78.6 * GIB, 'not enforced'],
    ['free = limit + 64: enforced', 4096 + 64, 'enforced'],
    ['free = limit + 65: not enforced', 4096 + 65, 'not enforced'],
  ] as const)('%s', (_name, free, verdict) => {
    expect(memInfoVerdict(4096, { freeMib: free, totalMib: 79.18 * GIB }).verdict).toBe(verdict);
  });

  it('says that total still reports the whole GPU (the total trap)', () => {
    expect(memInfoVerdict(4096, { freeMib: 3.5 * GIB, totalMib: 79.18 * GIB }).change).toContain(
      'total still reports 81080 MiB',
    );
    expect(memInfoVerdict(4096, { freeMib: 3.5 * GIB, totalMib: 4096 }).change).toBeNull();
    // Total within the tolerance of the limit is the limit.
    expect(memInfoVerdict(4096, { freeMib: 3.5 * GIB, totalMib: 4096 + 64 }).change).toBeNull();
    expect(memInfoVerdict(4096, { freeMib: 3.5 * GIB, totalMib: 4096 + 65 }).change).toContain('total still reports');
  });

  it('says what cudaMemGetInfo reported, the tolerance, and the fix', () => {
    expect(memInfoVerdict(4096, { freeMib: 78.6 * GIB, totalMib: 79.18 * GIB })).toEqual({
      verdict: 'not enforced',
      measured: 'cudaMemGetInfo: 80486 MiB free of 81080 MiB total',
      tolerance: 'free ≤ limit +64 MiB',
      change: 'the client sees more free memory than the limit: it is not limited (see mps.pinned-mem)',
    });
  });
});

describe('attachVerdict', () => {
  it.each([
    [{ clientPid: 7, clientPids: [3, 7] }, 'enforced'],
    [{ clientPid: 7, clientPids: [3] }, 'not enforced'],
    [{ clientPid: 7, clientPids: [] }, 'not enforced'],
    [{ clientPid: 7, clientPids: null }, 'not enforced'],
  ] as const)('%j', (m, verdict) => {
    expect(attachVerdict({ clientPid: m.clientPid, clientPids: m.clientPids ? [...m.clientPids] : null }).verdict).toBe(
      verdict,
    );
  });

  it.each([
    [[3, 7], 'PID 7 is a client of the MPS server'],
    [[3, 5], "PID 7 is not among the server's clients (3, 5)"],
    [[], "PID 7 is not among the server's clients (none)"],
    [null, 'no MPS server runs: PID 7 is outside MPS'],
  ] as const)('clients %j: %s', (clientPids, measured) => {
    const j = attachVerdict({ clientPid: 7, clientPids: clientPids ? [...clientPids] : null });
    expect(j.measured).toBe(measured);
    expect(j.tolerance).toBe('exact (PID in get_client_list)');
    if (j.verdict === 'not enforced')
      expect(j.change).toContain('give it exactly the daemon pipe directory in CUDA_MPS_PIPE_DIRECTORY');
  });
});

describe('replicasVerdict', () => {
  const implied = { threadPct: 25, memLimitMiB: 20389 };
  it.each([
    ['plan for the H100 (20377M) against its plugin split', 25, 20377, 'enforced'],
    ['thread off by 1 point', 26, 20389, 'enforced'],
    ['thread off by 2 points', 27, 20389, 'partly'],
    ['memory off by 2%', 25, 20389 - 0.02 * 20389, 'enforced'],
    ['memory off by more than 2%', 25, 20389 - 0.021 * 20389, 'partly'],
    ['both off', 50, 40000, 'not enforced'],
    ['no memory limit in the scripts', 25, null, 'partly'],
  ] as const)('%s', (_name, threadPct, memLimitMib, verdict) => {
    expect(replicasVerdict(4, implied, { threadPct, memLimitMib }).verdict).toBe(verdict);
  });

  it.each([
    [19_600, 'enforced'],
    [19_599, 'partly'],
    [20_400, 'enforced'],
    [20_401, 'partly'],
  ] as const)('memory exactly 2%% of 20000 MiB off and past it: %i MiB is %s', (memLimitMib, verdict) => {
    expect(replicasVerdict(4, { threadPct: 25, memLimitMiB: 20_000 }, { threadPct: 25, memLimitMib }).verdict).toBe(
      verdict,
    );
  });

  it('scripts without a memory limit match no split, not even one of 0 MiB (a GPU whose memory read 0)', () => {
    expect(replicasVerdict(4, { threadPct: 25, memLimitMiB: 0 }, { threadPct: 25, memLimitMib: null }).verdict).toBe(
      'partly',
    );
    expect(replicasVerdict(4, { threadPct: 25, memLimitMiB: 0 }, { threadPct: 25, memLimitMib: 0 }).verdict).toBe(
      'enforced',
    );
  });

  it('says what each side sets, the tolerance, and which of them to change', () => {
    expect(replicasVerdict(4, implied, { threadPct: 25, memLimitMib: 20377 })).toEqual({
      verdict: 'enforced',
      measured: "the plugin's daemon gives each of 4 clients 25% and 20389 MiB; the scripts set 25% and 20377 MiB",
      tolerance: '±1 point, ±2% of memory',
      change: null,
    });
    const noneSet = replicasVerdict(4, implied, { threadPct: null, memLimitMib: null });
    expect(noneSet).toMatchObject({
      verdict: 'not enforced',
      measured:
        "the plugin's daemon gives each of 4 clients 25% and 20389 MiB; the scripts set 100% and no memory limit",
    });
    expect(noneSet.change).toBe(
      "a pod of this plugin config gets 25% of the threads, not the scripts' 100%: set replicas to the number of clients, or regenerate the scripts for 4 models",
    );
  });

  it.each([
    // The scripts' share: as many replicas as fit in 100%, two at least.
    [25, 'set replicas to 4,'],
    [30, 'set replicas to 3,'],
    [60, 'set replicas to 2,'],
  ] as const)('threads off, the scripts at %i%%: %s', (threadPct, fix) => {
    const j = replicasVerdict(8, { threadPct: 12, memLimitMiB: 10_000 }, { threadPct, memLimitMib: 10_000 });
    expect(j.verdict).toBe('partly');
    expect(j.change).toContain(`gets 12% of the threads, not the scripts' ${threadPct}%: ${fix}`);
  });

  it('memory off: the fix names both sizes and how to regenerate', () => {
    expect(replicasVerdict(4, implied, { threadPct: 25, memLimitMib: 10_000 }).change).toBe(
      "a pod of this plugin config may pin 20389 MiB (this GPU's memory ÷ 4), not the scripts' 10000 MiB: the scripts were sized for another GPU or headroom; regenerate them for this GPU (gpushare plan --run or --gpu-model)",
    );
    expect(replicasVerdict(4, implied, { threadPct: 25, memLimitMib: null }).change).toContain(
      "(this GPU's memory ÷ 4), not the scripts' none:",
    );
  });
});

describe('visibleDevicesVerdict and migVerdict', () => {
  it.each([
    ['all', [0], 'enforced'],
    [[0], [0], 'enforced'],
    [[0, 1], [0], 'partly'],
    [[1], [0], 'not enforced'],
  ] as const)('%j on GPUs %j', (declared, node, verdict) => {
    expect(visibleDevicesVerdict(declared === 'all' ? 'all' : [...declared], [...node]).verdict).toBe(verdict);
  });

  it.each([
    ['all', [0, 1], 'the scripts serve every GPU nvidia-smi lists: 0, 1', null],
    ['all', [], 'the scripts serve every GPU nvidia-smi lists: none', null],
    [[0], [0, 1], 'this node has GPU 0, 1', null],
    [
      [1, 2],
      [0, 1],
      'this node has GPU 0, 1',
      'GPU 2 is not on this node: a limit list naming a GPU the process cannot see drops every limit; regenerate with --gpus 0,1',
    ],
    [[2, 3], [], 'this node has GPU none', 'GPU 2, 3 is not on this node'],
  ] as const)('%j on GPUs %j: %s', (declared, node, measured, change) => {
    const j = visibleDevicesVerdict(declared === 'all' ? 'all' : [...declared], [...node]);
    expect(j.measured).toBe(measured);
    expect(j.tolerance).toBe('exact');
    if (change === null) expect(j.change).toBeNull();
    else expect(j.change).toContain(change);
  });

  it('holds only when the listed MIG devices are exactly one declared geometry', () => {
    const configs = { 'all-3g': { '3g.40gb': 2 }, 'all-7g': { '7g.80gb': 1 } };
    expect(migVerdict(configs, { '3g.40gb': 2 }).verdict).toBe('enforced');
    expect(migVerdict(configs, { '3g.40gb': 1 }).verdict).toBe('not enforced');
    expect(migVerdict(configs, {}).verdict).toBe('not enforced');
    expect(migVerdict(configs, { '3g.40gb': 2, '1g.10gb': 1 }).verdict).toBe('not enforced');
  });

  it('lists the MIG devices, the geometry they match, and the fix', () => {
    const configs = { 'all-3g': { '3g.40gb': 2 } };
    expect(migVerdict(configs, { '3g.40gb': 2 })).toEqual({
      verdict: 'enforced',
      measured: 'MIG devices listed: 2× 3g.40gb (= all-3g)',
      tolerance: 'exact',
      change: null,
    });
    expect(migVerdict(configs, { '3g.40gb': 1, '1g.10gb': 2 })).toEqual({
      verdict: 'not enforced',
      measured: 'MIG devices listed: 1× 3g.40gb, 2× 1g.10gb',
      tolerance: 'exact',
      change:
        'no declared geometry is applied: mig-parted can report success and create no MIG devices; check nvidia-smi -L after nvidia-mig-parted apply',
    });
    expect(migVerdict(configs, {}).measured).toBe('MIG devices listed: none');
  });
});

describe('verifyExitCode: the gate codes', () => {
  it.each([
    [['enforced', 'enforced', 'skipped'], 0],
    [['enforced', 'partly'], 1],
    [['not measured', 'not enforced'], 1],
    [['enforced', 'not measured'], 3],
    // Nothing measured is no pass: no row, or every row skipped.
    [[], 3],
    [['skipped', 'skipped'], 3],
    [['skipped', 'enforced'], 0],
  ] as const)('%j → %i', (verdicts, code) => {
    expect(verifyExitCode(verdicts.map((verdict) => ({ verdict })))).toBe(code);
  });
});

describe('named cases: decisions', () => {
  it.each([
    ['recorded issue 39: 12 GiB under 0=4G,1=4G', 12 * GIB, 'reproduced'],
    ['recorded issue 39: 3 GiB under 0=4G', 3 * GIB, 'not reproduced'],
    ['limit + 64 MiB', 4096 + 64, 'not reproduced'],
    ['limit + 65 MiB', 4096 + 65, 'reproduced'],
  ] as const)('limitIgnored: %s', (_name, held, outcome) => {
    expect(limitIgnored({ heldMib: held, limitMib: 4096 })).toBe(outcome);
  });

  it('outsideMps needs both: past the limit and not the daemon client', () => {
    expect(outsideMps({ heldMib: 8192, limitMib: 4096, attached: false })).toBe('reproduced');
    expect(outsideMps({ heldMib: 8192, limitMib: 4096, attached: true })).toBe('not reproduced');
    expect(outsideMps({ heldMib: 3072, limitMib: 4096, attached: false })).toBe('not reproduced');
  });

  it.each([
    ['recorded issue 39: 3.5 GiB free of 79.18 GiB', 3.5 * GIB, 79.18 * GIB, 'reproduced'],
    ['total = the limit', 3.5 * GIB, 4096 + 64, 'not reproduced'],
    ['the limit did not hold at all (free 78.6 GiB)', 78.6 * GIB, 79.18 * GIB, 'not reproduced'],
  ] as const)('totalTrap: %s', (_name, free, total, outcome) => {
    expect(totalTrap({ freeMib: free, totalMib: total, limitMib: 4096 })).toBe(outcome);
  });

  it.each([
    [1000, 900, 'not reproduced'],
    [1000, 899.9, 'reproduced'],
    [3000, 3000, 'not reproduced'],
    [0, 0, 'not reproduced'],
  ] as const)('bandwidthShared: %i alone, %i beside → %s', (alone, beside, outcome) => {
    expect(bandwidthShared({ aloneGBps: alone, besideGBps: beside })).toBe(outcome);
  });

  it.each([
    [25, 0.35, 'not reproduced'],
    [25, 0.351, 'reproduced'],
    [25, 0.5, 'reproduced'],
  ] as const)('capDiffers: scripts %i%%, measured share %d → %s', (scriptPct, share, outcome) => {
    expect(capDiffers({ scriptPct, measuredShare: share })).toBe(outcome);
  });
});
