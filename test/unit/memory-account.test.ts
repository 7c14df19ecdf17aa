/** Memory by cause: nvidia-smi's rise per process and per tenant, the workload's own reservation, and the overhead between them. */
import { describe, expect, it } from 'vitest';
import { memoryAccount } from '../../harness/bench/analysis/clients.js';
import type { Comparison, Run } from '../../harness/bench/record/schema.js';

/** One nvidia-smi sample: memory.used at `tUs`, inside trial `trialId` (null: between trials). */
function sample(tUs: number, memoryUsedMiB: number, trialId: string | null): Run['samples'][number] {
  return { tUs, memoryUsedMiB, trialId } as unknown as Run['samples'][number];
}

/** memory.used 1000 MiB before the clients started, `duringMiB` in every sample of the comparison's trials. */
function run(
  duringMiB: number,
  start: Partial<NonNullable<Run['clientStarts']>[number]>,
): Pick<Run, 'samples' | 'clientStarts'> {
  return {
    samples: [sample(0, 1000, null), sample(20, duringMiB, 'c#r0/contended'), sample(30, duringMiB, 'c#r0/solo-c0')],
    clientStarts: [{ comparisonId: 'c', startedUs: 10, readyUs: 15, ...start }],
  };
}
const comparison = (clients: number, tenants?: number) =>
  ({ id: 'c', clientEnv: Array.from({ length: clients }, () => ({})), ...(tenants ? { tenants } : {}) }) as Comparison;

describe('memory by cause', () => {
  it('one process of 8 tenants: the whole rise is the process, an eighth of it each tenant, less its reservation the overhead', () => {
    // 1000 → 2400 MiB: 1400 MiB for the process, of which its allocator holds 880 (8 × 110).
    expect(
      memoryAccount(run(2400, { processes: 1, memoryReservedMiB: 880, graphPoolMiB: 80 }), comparison(8, 8)),
    ).toEqual({
      processes: 1,
      tenantsPerProcess: 8,
      risePerProcessMiB: 1400,
      risePerTenantMiB: 175,
      reservedPerProcessMiB: 880,
      graphPoolPerProcessMiB: 80,
      overheadPerProcessMiB: 520,
      switchedFrom: null,
    });
  });

  it('8 processes: the rise and reservation split per process; a run before protocol 3 has no reservation, so no overhead', () => {
    expect(memoryAccount(run(5000, { processes: 8, memoryReservedMiB: 8 * 110 }), comparison(8))).toMatchObject({
      risePerProcessMiB: 500,
      reservedPerProcessMiB: 110,
      overheadPerProcessMiB: 390,
    });
    expect(memoryAccount(run(5000, {}), comparison(8))).toMatchObject({
      processes: 8,
      risePerProcessMiB: 500,
      reservedPerProcessMiB: null,
      overheadPerProcessMiB: null,
    });
  });

  it('a rise below the reservation separates nothing: no overhead, rather than a negative one', () => {
    expect(
      memoryAccount(run(1000, { processes: 1, memoryReservedMiB: 146 }), comparison(2, 2))?.overheadPerProcessMiB,
    ).toBeNull();
  });

  it("the idle level is the lowest sample from the start to ready: the previous comparison's processes still releasing theirs at the start do not count", () => {
    // As on the H100 (sweep 3485bb, streams@2): 983 MiB of the last comparison's process at the start,
    // then 0 once it has exited, before the new process's CUDA context; 1099 MiB while measuring.
    const measured: Pick<Run, 'samples' | 'clientStarts'> = {
      samples: [
        sample(5, 983, null),
        sample(11, 980, null),
        sample(12, 0, null),
        sample(14, 700, null),
        sample(16, 1099, null), // after ready, before the trials: not the idle level
        sample(20, 1099, 'c#r0/contended'),
      ],
      clientStarts: [{ comparisonId: 'c', startedUs: 10, readyUs: 15, processes: 1, memoryReservedMiB: 336 }],
    };
    expect(memoryAccount(measured, comparison(2, 2))).toMatchObject({
      risePerProcessMiB: 1099,
      risePerTenantMiB: 549.5,
      overheadPerProcessMiB: 763,
    });
  });

  it('processes switched from an earlier comparison: the idle level is the one before that comparison started them (their context counts)', () => {
    // 0 MiB idle before "a" started its 2 processes; 1000 MiB while "a" measured (2 contexts and spin);
    // c switched from a at 30: 1000 MiB then, 1800 while c measured.
    const measured: Pick<Run, 'samples' | 'clientStarts'> = {
      samples: [
        sample(5, 0, null),
        sample(20, 1000, 'a#r0/contended'),
        sample(31, 1000, null),
        sample(40, 1800, 'c#r0/contended'),
      ],
      clientStarts: [
        { comparisonId: 'a', startedUs: 10, readyUs: 15, endUs: 30, processes: 2 },
        { comparisonId: 'c', startedUs: 30, readyUs: 35, processes: 2, memoryReservedMiB: 600, switchedFrom: 'a' },
      ],
    };
    expect(memoryAccount(measured, comparison(2))).toMatchObject({
      risePerProcessMiB: 900,
      reservedPerProcessMiB: 300,
      overheadPerProcessMiB: 600,
      switchedFrom: 'a',
    });
    // Switched from a start this run did not record (another session's clock): no baseline, no figure.
    expect(memoryAccount({ ...measured, clientStarts: measured.clientStarts?.slice(1) }, comparison(2))).toBeNull();
    // Without switchedFrom the context would be missed: the rise from 1000 only.
    const [origin, switched] = measured.clientStarts as NonNullable<Run['clientStarts']>;
    const { switchedFrom: _, ...own } = switched as NonNullable<Run['clientStarts']>[number];
    expect(
      memoryAccount({ ...measured, clientStarts: [origin, own] as Run['clientStarts'] }, comparison(2))
        ?.risePerProcessMiB,
    ).toBe(400);
  });

  it('a grown comparison (2 processes kept, 2 added): the idle level is the one before the kept ones started', () => {
    // 0 MiB idle before "a" started 2 processes (1000 MiB while it measured); c kept them at 30, added 2: 2000 MiB.
    const measured: Pick<Run, 'samples' | 'clientStarts'> = {
      samples: [
        sample(5, 0, null),
        sample(20, 1000, 'a#r0/contended'),
        sample(31, 1000, null),
        sample(40, 2000, 'c#r0/contended'),
      ],
      clientStarts: [
        { comparisonId: 'a', startedUs: 10, readyUs: 15, endUs: 30, processes: 2 },
        { comparisonId: 'c', startedUs: 30, readyUs: 35, processes: 4, grownFrom: 'a' },
      ],
    };
    expect(memoryAccount(measured, comparison(4))).toMatchObject({ risePerProcessMiB: 500, switchedFrom: null });
    // From the added processes' start alone, the kept ones would be missed: 1000 MiB over 4 processes.
    const [origin, grown] = measured.clientStarts as NonNullable<Run['clientStarts']>;
    const { grownFrom: _, ...own } = grown as NonNullable<Run['clientStarts']>[number];
    expect(
      memoryAccount({ ...measured, clientStarts: [origin, own] as Run['clientStarts'] }, comparison(4))
        ?.risePerProcessMiB,
    ).toBe(250);
  });
});
