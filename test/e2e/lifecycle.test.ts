/**
 * One run lifecycle for every product, on the fakes: probe, capacity and bench --gpus stopped by
 * kill -9 or a double Ctrl-C while an MPS daemon starts, while it runs and between MPS sessions leave
 * no MPS process and no gpushare-mps-* directory of theirs once the run is resumed (a forced exit:
 * none at once), and --resume completes each with nothing lost or measured twice. Each harness has
 * a TMPDIR of its own, so only its own MPS roots and processes are counted.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { HostRun } from '../../harness/bench/record/host-record.js';
import type { Run } from '../../harness/bench/record/schema.js';
import type { CapacityRun } from '../../harness/capacity/record.js';
import type { ProbeRun } from '../../harness/probe/record.js';
import { joined, until } from '../helpers.js';
import {
  again,
  type DaemonOnDisk,
  daemonsWhileRunning,
  expectAfterStop,
  expectNothingLeft,
  jsonOnDisk,
  mpsProcessesUnder,
  PHASES,
  type Phase,
  phaseEnv,
  STOPS,
  type Started,
  startIn,
  stopAt,
} from './lifecycle-kit.js';

const SCENARIOS = (Object.keys(PHASES) as Phase[]).flatMap((phase) => STOPS.map((stop) => [stop, phase] as const));

/** What a killed harness leaves for doctor: its root, recognised as gpushare's, with the --resume that stops it. */
async function expectDoctorToKnow(started: Started, resume: string): Promise<void> {
  const pids = await mpsProcessesUnder(started.tmp);
  expect(pids.length).toBeGreaterThan(0);
  const doctor = await again(started, ['doctor']);
  expect(joined(doctor.stdout)).toMatch(
    new RegExp(
      `gpushare's ${started.tmp}/gpushare-mps-\\w{6} \\(run [\\w.-]+, MPS PIDs [\\d, ]+\\), left by gpushare pid \\d+: stop it with ${resume.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(stops it and continues the run\\)`,
    ),
  );
  const foreign = /a daemon not started by gpushare is running \(PIDs ([\d, ?]+)/.exec(doctor.stdout)?.[1] ?? '';
  for (const pid of pids) expect(foreign.split(', ')).not.toContain(String(pid));
}

// Each scenario is a run, a stop and a resume: minutes on a loaded machine, so they run side by side.
const SLOW = { timeout: 300_000 };

describe.concurrent('probe: stopped at every phase, then resumed', SLOW, () => {
  const probeJson = (out: string) => jsonOnDisk<ProbeRun>(path.join(out, 'probe.json'));
  /** memory: a time-sliced session, then two MPS sessions, each with a daemon of its own. */
  const EXPECTED = ['memory/mps/2048', 'memory/mps/null', 'memory/timeslice/null'];
  const key = (o: ProbeRun['probes'][number]) =>
    `${o.probe}/${'mode' in o ? o.mode : '-'}/${'limitMib' in o ? o.limitMib : '-'}`;

  it.each(SCENARIOS)('%s %s', async (stop, phase) => {
    const started = startIn(['probe', '--probes', 'memory'], phaseEnv(phase));
    const stopped = await stopAt(started, phase, stop, () => daemonsWhileRunning(probeJson(started.out)));
    await expectAfterStop(started, stop, stopped);
    const before = probeJson(started.out) as ProbeRun;
    expect(before.status).toBe(stop === 'kill -9' ? 'running' : 'interrupted');
    if (stop === 'kill -9' && phase === 'while the daemon runs')
      await expectDoctorToKnow(started, `gpushare probe --resume ${started.out}`);

    const resumed = await again(started, ['probe', '--resume', started.out]);
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    await expectNothingLeft(started.tmp);
    const run = probeJson(started.out) as ProbeRun;
    expect(run.status).toBe('complete');
    expect(run.probes.map(key).sort()).toEqual(EXPECTED);
    expect(run.probes.slice(0, before.probes.length)).toEqual(before.probes);
    expect(run.daemons?.filter((d) => d.shutdown === 'running' || d.shutdown === 'starting')).toEqual([]);
  });
});

describe.concurrent('capacity: stopped at every phase, then resumed', SLOW, () => {
  const capacityJson = (out: string) => jsonOnDisk<CapacityRun>(path.join(out, 'capacity.json'));
  const ARGS = [
    'capacity',
    '--slo-p99-ms',
    '2',
    '--clients',
    '1,2',
    '--modes',
    'mps,timeslice',
    '--window-ms',
    '100',
    '--start-qps',
    '1000',
    '--max-steps',
    '2',
  ];

  it.each(SCENARIOS)('%s %s', async (stop, phase) => {
    const started = startIn(ARGS, phaseEnv(phase));
    const stopped = await stopAt(started, phase, stop, () => daemonsWhileRunning(capacityJson(started.out)));
    await expectAfterStop(started, stop, stopped);
    const before = capacityJson(started.out) as CapacityRun;
    expect(before.status).toBe(stop === 'kill -9' ? 'running' : 'interrupted');
    if (stop === 'kill -9' && phase === 'while the daemon runs')
      await expectDoctorToKnow(started, `gpushare capacity --resume ${started.out}`);
    const finished = before.points.filter(
      (p) => p.mode !== before.current?.mode || p.clients !== before.current.clients,
    );

    const resumed = await again(started, ['capacity', '--resume', started.out]);
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    await expectNothingLeft(started.tmp);
    const run = capacityJson(started.out) as CapacityRun;
    expect(run.status).toBe('complete');
    expect(run.points.map((p) => `${p.mode}×${p.clients}`).sort()).toEqual([
      'mps×1',
      'mps×2',
      'timeslice×1',
      'timeslice×2',
    ]);
    expect(run.points.every((p) => p.status === 'measured' && p.steps.length > 0)).toBe(true);
    // The points finished before the stop are kept as they were; the one cut short was measured again.
    expect(run.points.slice(0, finished.length)).toEqual(finished);
    expect(run.resumes).toEqual([{ at: expect.any(String), pointsKept: finished.length }]);
  });
});

describe.concurrent('bench --gpus: stopped at every phase, then resumed', SLOW, () => {
  const runJson = (dir: string) => jsonOnDisk<Run>(path.join(dir, 'run.json'));
  const hostJson = (out: string) => jsonOnDisk<HostRun>(path.join(out, 'host.json'));
  const GPUS = ['gpu0', 'gpu1'];
  // A loaded neighbour slows the fake GPUs: they run one after another, each with an MPS daemon of its own.
  const ENV = { FAKE_GPUS: '2', FAKE_CROSS_GPU: '1.25' };
  const ARGS = [
    'bench',
    '--gpus',
    'all',
    '--modes',
    'mps',
    '--workloads',
    'gemm',
    '--rounds',
    '1',
    '--max-rounds',
    '1',
    '--window-ms',
    '50',
    '--quiet',
  ];
  const daemons = (out: string): DaemonOnDisk[] =>
    daemonsWhileRunning({
      status: hostJson(out)?.status ?? 'not started',
      daemons: GPUS.flatMap((gpu) => runJson(path.join(out, gpu))?.modes.flatMap((m) => (m.mps ? [m.mps] : [])) ?? []),
    });

  it.each(SCENARIOS)('%s %s', async (stop, phase) => {
    const started = startIn(ARGS, { ...ENV, ...phaseEnv(phase) });
    const stopped = await stopAt(started, phase, stop, () => daemons(started.out));
    await expectAfterStop(started, stop, stopped);
    expect(hostJson(started.out)?.status).toBe(stop === 'kill -9' ? 'running' : 'interrupted');
    const trialsBefore = GPUS.map((gpu) => runJson(path.join(started.out, gpu))?.trials ?? []);
    if (stop === 'kill -9' && phase === 'while the daemon runs')
      await expectDoctorToKnow(started, `gpushare bench --resume ${started.out}`);

    const resumed = await again(started, ['bench', '--resume', started.out, '--quiet'], ENV);
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    await expectNothingLeft(started.tmp);
    const host = hostJson(started.out) as HostRun;
    expect(host.status).toBe('complete');
    expect(host.gpus.map((g) => g.exitCode)).toEqual([0, 0]);
    expect(host.resumes).toEqual([{ at: expect.any(String) }]);
    expect(runJson(path.join(started.out, 'cross'))?.status).toBe('complete');
    for (const [i, gpu] of GPUS.entries()) {
      const run = runJson(path.join(started.out, gpu)) as Run;
      expect(run.status).toBe('complete');
      const ids = run.trials.map((t) => t.id);
      // One comparison of four arms (the plain alone among them), one round: every trial once.
      expect(ids).toHaveLength(4);
      expect(new Set(ids).size).toBe(4);
      expect(run.trials.slice(0, trialsBefore[i]?.length)).toEqual(trialsBefore[i]);
    }
    // The combined report says each GPU's run is there.
    const report = readFileSync(path.join(started.out, 'report', `${host.id}.md`), 'utf8');
    expect(report).toContain('status complete');
  });
});

describe('the same Ctrl-C for every product', SLOW, () => {
  /** Starts a run, sends one SIGINT once `ready` holds, and checks the saved status, the exit code and the line that says how to continue. */
  async function interruptOnce(
    args: string[],
    env: Record<string, string>,
    record: string,
    ready: (out: string) => boolean,
  ) {
    const started = startIn(args, env);
    let ended = false;
    void started.child.finally(() => (ended = true));
    await until(() => ended || ready(started.out), 60_000, 'the run to be under way');
    expect(ended).toBe(false);
    started.child.kill('SIGINT');
    const result = await started.child;
    expect(result.exitCode).toBe(130);
    expect(jsonOnDisk<{ status: string }>(path.join(started.out, record))?.status).toBe('interrupted');
    expect(result.stderr).toMatch(
      new RegExp(
        `^gpushare: run interrupted; \\d+ finished [\\w -]+ saved in ${started.out} \\(continue with (?:GPUSHARE_SIMULATE=1 )?gpushare \\w+ --resume ${started.out}\\)$`,
        'm',
      ),
    );
    await expectNothingLeft(started.tmp);
  }

  it('bench', async () => {
    await interruptOnce(
      ['bench', '--modes', 'mps', '--workloads', 'gemm', '--rounds', '50', '--window-ms', '200'],
      {},
      'run.json',
      (out) => (jsonOnDisk<Run>(path.join(out, 'run.json'))?.trials.length ?? 0) >= 1,
    );
  });

  it('bench --gpus', async () => {
    await interruptOnce(
      ['bench', '--gpus', 'all', '--modes', 'mps', '--workloads', 'gemm', '--rounds', '50', '--window-ms', '200'],
      { FAKE_GPUS: '2' },
      'host.json',
      (out) => (jsonOnDisk<Run>(path.join(out, 'cross', 'run.json'))?.trials.length ?? 0) >= 1,
    );
  });

  it('probe', async () => {
    await interruptOnce(
      ['probe', '--probes', 'memory,context'],
      {},
      'probe.json',
      (out) => (jsonOnDisk<ProbeRun>(path.join(out, 'probe.json'))?.daemons?.length ?? 0) >= 1,
    );
  });

  it('capacity', async () => {
    await interruptOnce(
      ['capacity', '--slo-p99-ms', '2', '--clients', '1,2', '--window-ms', '200', '--start-qps', '1000'],
      {},
      'capacity.json',
      (out) => (jsonOnDisk<CapacityRun>(path.join(out, 'capacity.json'))?.points[0]?.steps.length ?? 0) >= 1,
    );
  });
});
