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
    ['a 95% cap near the whole rate: enforced', 95, { sms: 95, tflops: 990 }, 'enforced'],
  ] as const)('%s', (_name, pct, capped, verdict) => {
    expect(threadCapVerdict(pct, { capped, full: FULL }).verdict).toBe(verdict);
  });

  it('names the SMs and the rate it measured, and the tolerance', () => {
    const j = threadCapVerdict(25, { capped: H100_SMCAP[25], full: H100_SMCAP[100] });
    expect(j.measured).toBe('32 of 132 SMs (24%); 37% of the uncapped GEMM rate (231.9 of 634.8 TFLOPS)');
    expect(j.tolerance).toContain('±10 points');
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

  it('holds only when the listed MIG devices are exactly one declared geometry', () => {
    const configs = { 'all-3g': { '3g.40gb': 2 }, 'all-7g': { '7g.80gb': 1 } };
    expect(migVerdict(configs, { '3g.40gb': 2 }).verdict).toBe('enforced');
    expect(migVerdict(configs, { '3g.40gb': 1 }).verdict).toBe('not enforced');
    expect(migVerdict(configs, {}).verdict).toBe('not enforced');
    expect(migVerdict(configs, { '3g.40gb': 2, '1g.10gb': 1 }).verdict).toBe('not enforced');
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
