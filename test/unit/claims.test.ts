/** The claims ledger: verdicts by their stated rules, from typed probe outcomes (no GPU, no processes). */
import { describe, expect, it } from 'vitest';
import { claimsLedger, perClientMib } from '../../harness/probe/claims.js';
import { latencySummary } from '../../harness/probe/latency.js';
import { probeMarkdown } from '../../harness/probe/markdown.js';
import type { LatencySeries, ProbeOutcome, ProbeRun } from '../../harness/probe/record.js';

function run(probes: ProbeOutcome[]): ProbeRun {
  return {
    schema: 'gpushare-probe/1',
    id: 'x',
    status: 'complete',
    createdAt: '2026-11-23T00:00:00Z',
    finishedAt: null,
    fingerprint: {} as ProbeRun['fingerprint'],
    gpuIndex: 0,
    probes,
    cleanup: [],
    warnings: [],
  };
}

const verdict = (probes: ProbeOutcome[], id: string) => claimsLedger(run(probes)).find((c) => c.id === id)?.verdict;
const series = (n: number, at: (i: number) => number, lateRequests = 0): LatencySeries => ({
  latenciesMs: Array.from({ length: n }, (_, i) => at(i)),
  lateRequests,
  periodMs: 10,
});

describe('latency summaries', () => {
  it('percentiles of the raw latencies, valid only while at most 1% were sent a period late', () => {
    const s = series(200, (i) => i + 1, 2);
    expect(latencySummary(s)).toMatchObject({ requests: 200, leastMs: 1, p50Ms: 100.5, maxMs: 200, valid: true });
    expect(latencySummary({ ...s, lateRequests: 3 }).valid).toBe(false);
    expect(latencySummary(series(0, () => 0)).valid).toBe(false);
  });

  it('memory per added context is the fall of free memory per client after the first', () => {
    expect(perClientMib([1000, 500, 0])).toBe(500);
    expect(perClientMib([1000])).toBeNull();
  });
});

describe('claims ledger', () => {
  const fault = (mode: 'mps' | 'timeslice', survived: boolean[]): ProbeOutcome => ({
    probe: 'fault',
    mode,
    status: 'measured',
    faulterError: 'illegal address',
    victims: survived.map((s) => ({ survived: s, error: s ? null : 'illegal address' })),
    serverAfterFault: null,
    serverAfterRecovery: null,
    recovery: { accepted: true, afterMs: 400, attempts: 1, lastError: null },
  });

  it('grades fault containment by who survived: all, none, or some', () => {
    expect(verdict([fault('mps', [false, false])], 'mps-fault-reported-to-all')).toBe('holds');
    expect(verdict([fault('mps', [false, false])], 'mps-fault-isolation')).toBe('does not hold');
    expect(verdict([fault('mps', [true, false])], 'mps-fault-isolation')).toBe('partly holds');
    expect(verdict([fault('timeslice', [true, true])], 'timeslice-fault-isolation')).toBe('does not hold');
  });

  it('grades the in-process fault domain by how many tenants stopped; a run without that probe lists no such claim', () => {
    const inProcess = (survived: boolean[]): ProbeOutcome => ({
      probe: 'fault-in-process',
      status: 'measured',
      faulterError: 'AcceleratorError: CUDA error: an illegal memory access was encountered',
      victims: survived.map((s) => ({ survived: s, error: s ? null : 'AcceleratorError: CUDA error: …' })),
    });
    expect(verdict([inProcess([false, false, false, false])], 'in-process-fault-domain')).toBe('holds');
    expect(verdict([inProcess([true, false, false, false])], 'in-process-fault-domain')).toBe('partly holds');
    expect(verdict([inProcess([true, true])], 'in-process-fault-domain')).toBe('does not hold');
    expect(
      claimsLedger(run([inProcess([false, true])])).find((c) => c.id === 'in-process-fault-domain')?.measured,
    ).toBe(
      "after one thread's illegal address (AcceleratorError: CUDA error: an illegal memory access was encountered), 1 of 2 tenants of the process stopped (AcceleratorError: CUDA error: …); 1 survived",
    );
    expect(claimsLedger(run([])).some((c) => c.id === 'in-process-fault-domain')).toBe(false);
  });

  it('a claim whose probe did not run, or was skipped, is not measured and says why', () => {
    const ledger = claimsLedger(
      run([
        { probe: 'client-limit', mode: 'mps', status: 'skipped', reason: 'the MPS daemon did not start: no binary' },
      ]),
    );
    expect(ledger.find((c) => c.id === 'mps-client-limit')).toMatchObject({
      verdict: 'not measured',
      measured: 'the client-limit probe skipped: the MPS daemon did not start: no binary',
    });
    expect(ledger.find((c) => c.id === 'green-context')).toMatchObject({
      verdict: 'not measured',
      measured: 'the green-context probe was not run',
    });
  });

  it('the client limit holds only at exactly 48 accepted and the next refused', () => {
    const limit = (accepted: number, firstError: string | null): ProbeOutcome => ({
      probe: 'client-limit',
      mode: 'mps',
      status: 'measured',
      tried: accepted + 1,
      accepted,
      firstError,
    });
    expect(verdict([limit(48, 'MAX_CLIENTS')], 'mps-client-limit')).toBe('holds');
    expect(verdict([limit(60, 'MAX_CLIENTS')], 'mps-client-limit')).toBe('does not hold');
    expect(verdict([limit(64, null)], 'mps-client-limit')).toBe('does not hold');
  });

  it('the SM cap holds on SMs seen (to whole TPCs), whatever the GEMM rate does', () => {
    const cap = (sms25: number, tflops25: number): ProbeOutcome => ({
      probe: 'sm-cap',
      mode: 'mps',
      status: 'measured',
      totalSms: 132,
      points: [
        { threadPercentage: 100, sms: 132, tflops: 600 },
        { threadPercentage: 25, sms: sms25, tflops: tflops25 },
      ],
    });
    expect(verdict([cap(32, 216)], 'mps-sm-cap')).toBe('holds');
    expect(verdict([cap(34, 300)], 'mps-sm-cap')).toBe('holds');
    expect(verdict([cap(36, 150)], 'mps-sm-cap')).toBe('does not hold');
  });

  it('a latency claim is graded only on series whose generator kept up', () => {
    const priority = (late: number): ProbeOutcome => ({
      probe: 'priority',
      status: 'measured',
      runs: [
        { priority: 'normal', backgroundBlockUsPerS: 1, ...series(200, (i) => (i % 50 === 0 ? 2 : 0.1)) },
        { priority: 'high', backgroundBlockUsPerS: 1, ...series(200, (i) => (i % 50 === 0 ? 0.5 : 0.1), late) },
      ],
    });
    expect(verdict([priority(0)], 'stream-priority')).toBe('holds');
    expect(verdict([priority(5)], 'stream-priority')).toBe('not measured');
  });

  it('the default-stream trap: serial for both kinds holds, one kind cut by over a quarter partly holds', () => {
    const trap = (blocking: number, pytorch: number): ProbeOutcome => ({
      probe: 'default-stream',
      status: 'measured',
      spinUs: 200,
      runs: [
        { streamKind: 'pytorch', streams: 4, strayCopy: false, concurrency: 4 },
        { streamKind: 'pytorch', streams: 4, strayCopy: true, concurrency: pytorch },
        { streamKind: 'blocking', streams: 4, strayCopy: false, concurrency: 4 },
        { streamKind: 'blocking', streams: 4, strayCopy: true, concurrency: blocking },
      ],
    });
    expect(verdict([trap(1.1, 1.2)], 'default-stream-trap')).toBe('holds');
    expect(verdict([trap(2.3, 4)], 'default-stream-trap')).toBe('partly holds');
    expect(verdict([trap(3.9, 4)], 'default-stream-trap')).toBe('does not hold');
  });
});

describe('the ledger cites its sources and reads as findings', () => {
  it('every claim names a public document by title and address, never a file outside the repository', () => {
    for (const c of claimsLedger(run([]))) {
      expect(c.source).toMatch(/"[^"]+" \(https:\/\/[^\s)]+\)/);
      expect(c.source).not.toMatch(/seeds|shared\//);
    }
  });

  it('the report says "so here" or "not so here", never "does not hold"', () => {
    const limit: ProbeOutcome = {
      probe: 'client-limit',
      mode: 'mps',
      status: 'measured',
      tried: 49,
      accepted: 48,
      firstError: 'CUDA_ERROR_MPS_MAX_CLIENTS_REACHED',
    };
    const probed = { ...run([limit]), fingerprint: { python: { status: 'missing' }, gpus: [] } as never };
    const text = probeMarkdown(probed, '0.1.0');
    expect(text).toContain('| claim | so here? | what this GPU showed | rule | source |');
    expect(text).toMatch(/\| An MPS server accepts up to 48 clients per GPU \(Volta and later\) \| \*\*so here\*\* \|/);
    expect(text).not.toMatch(/does not hold\*\*|\*\*holds\*\*/);
  });
});
