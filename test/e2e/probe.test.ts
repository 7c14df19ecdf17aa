/**
 * `gpushare probe` end to end with the fakes: a fake GPU whose MPS clients all fail after one faults,
 * whose server reports FAULT until it accepts clients again, and which refuses clients past a limit.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { ProbeRun } from '../../harness/probe/record.js';
import { cli, expectOneLineError, ROOT, tempDir, unfolded } from '../helpers.js';

function probeRun(out: string): ProbeRun {
  return JSON.parse(readFileSync(path.join(out, 'probe.json'), 'utf8')) as ProbeRun;
}

/**
 * The probe roles a test's own run started and left running, found by the mark in their environment: other
 * files of this checkout run probes at the same time, and their roles are theirs to check.
 */
async function isolationProcesses(mark: string): Promise<string[]> {
  const ps = await execa('ps', ['-eo', 'pid,args'], { reject: false });
  return String(ps.stdout)
    .split('\n')
    .filter((l) => l.includes(path.join(ROOT, 'workloads', 'isolation.py')))
    .filter((l) => {
      try {
        return readFileSync(`/proc/${l.trim().split(/\s+/)[0]}/environ`, 'latin1')
          .split('\0')
          .includes(mark);
      } catch {
        // Gone since ps listed it.
        return false;
      }
    });
}

/** A mark unique to one test's run, passed down to every process it starts. */
function testMark(): { env: Record<string, string>; mark: string } {
  const value = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  return { env: { GPUSHARE_TEST_MARK: value }, mark: `GPUSHARE_TEST_MARK=${value}` };
}

describe('gpushare probe (fake GPU)', () => {
  it('runs every probe, grades each claim, writes the report, and leaves no process or temporary directory behind', async () => {
    const out = path.join(tempDir(), 'probe');
    // A temporary directory of its own: the MPS roots and the simulated GPU's state go there, and must go.
    const tmp = tempDir();
    const own = testMark();
    const env = { FAKE_MPS_CLIENTS: '5', TMPDIR: tmp, ...own.env };
    const result = await cli(['probe', '--out', out], env, { timeoutMs: 120_000 });
    expect(result.stderr).toContain('memory (timeslice): measured');
    expect(result.exitCode).toBe(0);
    expect(readdirSync(tmp)).toEqual([]);
    const run = probeRun(out);
    expect(run.status).toBe('complete');
    expect(run.probes.every((o) => o.status === 'measured')).toBe(true);

    const fault = (mode: string) => run.probes.find((o) => o.probe === 'fault' && o.mode === mode);
    const mps = fault('mps');
    const ts = fault('timeslice');
    if (mps?.probe !== 'fault' || mps.status !== 'measured' || ts?.probe !== 'fault' || ts.status !== 'measured')
      throw new Error('fault outcomes missing');
    expect(mps.victims.map((v) => v.survived)).toEqual([false, false]);
    expect(mps.victims[0]?.error).toContain('illegal memory access');
    expect([mps.serverAfterFault, mps.serverAfterRecovery]).toEqual(['FAULT', 'ACTIVE']);
    expect(mps.recovery).toMatchObject({
      accepted: true,
      attempts: 2,
      lastError: expect.stringContaining('MPS_SERVER_NOT_READY'),
    });
    expect(ts.victims.map((v) => v.survived)).toEqual([true, true]);
    // In one process the fault is the context's: the simulator, like CUDA, ends every tenant.
    const inProcess = run.probes.find((o) => o.probe === 'fault-in-process');
    expect(inProcess).toMatchObject({ status: 'measured', faulterError: expect.stringContaining('illegal memory') });
    expect(inProcess?.status === 'measured' && inProcess.victims.map((v) => v.survived)).toEqual([
      false,
      false,
      false,
      false,
    ]);

    const limit = run.probes.find((o) => o.probe === 'client-limit');
    expect(limit).toMatchObject({
      status: 'measured',
      accepted: 5,
      tried: 6,
      firstError: expect.stringContaining('MPS_MAX_CLIENTS_REACHED'),
    });
    const memory = run.probes.find((o) => o.probe === 'memory' && o.mode === 'mps' && o.limitMib !== null);
    expect(memory).toMatchObject({
      status: 'measured',
      hogTries: [
        { mib: 1024, ok: true },
        { mib: 3072, ok: false },
      ],
    });

    expect(run.cleanup.every((c) => c.leftPids.length === 0)).toBe(true);
    expect(run.cleanup.filter((c) => c.mode === 'mps').every((c) => c.daemon === 'quit')).toBe(true);
    expect(await isolationProcesses(own.mark)).toEqual([]);

    const report = readFileSync(path.join(out, 'report.md'), 'utf8');
    expect(report).toContain('## Claims ledger');
    expect(report).toMatch(
      /\| An MPS server accepts up to 48 clients per GPU \(Volta and later\) \| \*\*not so here\*\* \| 5 clients accepted; client 6 failed: .*\| NVIDIA, "Multi-Process Service" \(https:\/\/docs\.nvidia\.com\/deploy\/mps\/index\.html\) \|$/m,
    );
    expect(unfolded(result.stdout)).toMatch(
      /holds\s+A fatal fault in one MPS client is reported to every client of that GPU/,
    );

    // The report again from the saved run, as markdown elsewhere and as JSON.
    const again = tempDir();
    expect((await cli(['report', out, '--out', again])).exitCode).toBe(0);
    expect(readFileSync(path.join(again, `${run.id}.md`), 'utf8')).toBe(report.replace(/gpushare [\d.]+\./, (m) => m));
    const json = JSON.parse((await cli(['report', out, '--json'])).stdout) as {
      claims: Array<{ id: string; verdict: string }>;
    };
    expect(json.claims.find((c) => c.id === 'mps-fault-reported-to-all')?.verdict).toBe('holds');
    expect(json.claims.find((c) => c.id === 'in-process-fault-domain')?.verdict).toBe('holds');
    expect(report).toMatch(/after one thread's illegal address \(.*\), 4 of 4 tenants of the process stopped/);
  });

  it('a probe whose role dies is failed with its words, the others still run, and the exit code is 3', async () => {
    const out = path.join(tempDir(), 'probe');
    const own = testMark();
    const result = await cli(['probe', '--probes', 'memory,sm-cap', '--out', out], {
      FAKE_ISOLATION: 'crash-hog',
      ...own.env,
    });
    expect(result.exitCode).toBe(3);
    const run = probeRun(out);
    expect(run.probes.map((o) => o.status)).toEqual(['failed', 'failed', 'failed', 'measured']);
    expect(run.probes[0]).toMatchObject({
      reason: expect.stringMatching(/^hog exited \(code 1\) before result: Fatal Python error: Segmentation fault/),
    });
    expect(run.cleanup.every((c) => c.leftPids.length === 0)).toBe(true);
    expect(await isolationProcesses(own.mark)).toEqual([]);
  });

  it('without green contexts, that probe is skipped with the reason PyTorch gave', async () => {
    const out = path.join(tempDir(), 'probe');
    const result = await cli(['probe', '--probes', 'green-context', '--out', out], { FAKE_GREEN: 'missing' });
    expect(result.exitCode).toBe(0);
    expect(probeRun(out).probes).toEqual([
      {
        probe: 'green-context',
        status: 'skipped',
        reason: expect.stringContaining("has no attribute 'green_contexts'"),
      },
    ]);
  });

  it('refuses an unknown probe in one line, before touching anything', async () => {
    const out = path.join(tempDir(), 'probe');
    const result = await cli(['probe', '--probes', 'memory,memry', '--out', out]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(
      result.stderr,
      'unknown probe "memry" in --probes: choose from memory, sm-cap, fault, fault-in-process, client-limit, context, slice, default-stream, priority, green-context',
    );
    expect(existsSync(out)).toBe(false);
  });
});
