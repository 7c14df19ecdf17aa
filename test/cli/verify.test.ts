/**
 * `gpushare verify` in process on the simulator's fake node (simulator/bin: nvidia-smi, the MPS control
 * daemon, python3 playing workloads/isolation.py and verify_probe.py). FAKE_NODE makes the node ignore
 * a limit: verify must then exit 1 and name the row.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MIG_PARTED, MPS_START, otherGpu, PLUGIN_CONFIGMAP } from '../../harness/verify/declared.js';
import type { VerifyRun } from '../../harness/verify/record.js';
import { expectOneLineError, runCli, tempDir, unfolded } from '../helpers.js';

/** plan's MPS files for the simulator's GPU (an H200): 25% of the threads and 35942M each. */
async function planned(): Promise<string> {
  const out = path.join(tempDir(), 'plan');
  const r = await runCli([
    'plan',
    '--models',
    '4',
    '--mem-gib',
    '10',
    '--sm-pct',
    '20',
    '--gpu-model',
    'H200-141GB',
    '--out',
    out,
  ]);
  expect(r.exitCode).toBe(0);
  // plan prints the command that checks its files on the node (it runs nothing).
  expect(r.stderr).toContain(`check on the GPU node that every limit they declare holds: gpushare verify ${out}`);
  return out;
}

const record = (dir: string): VerifyRun => JSON.parse(readFileSync(path.join(dir, 'verify.json'), 'utf8'));

describe('gpushare verify', () => {
  it('checks every declared limit on a node that enforces them: exit 0, every row enforced, a report', async () => {
    const artifacts = await planned();
    const out = path.join(tempDir(), 'verify');
    const r = await runCli(['verify', artifacts, '--out', out]);
    expect(r.exitCode, r.stderr).toBe(0);
    const run = record(out);
    expect(run.status).toBe('complete');
    expect(run.rows.map((row) => [row.id, row.verdict])).toEqual([
      ['mps.gpus', 'enforced'],
      ['plugin.mps-4', 'enforced'],
      ['mps.meminfo', 'enforced'],
      ['mps.attach', 'enforced'],
      ['mps.thread-pct', 'enforced'],
      ['mps.pinned-mem', 'enforced'],
    ]);
    // The daemons (one set up as the plugin sets its, one as the scripts) were the run's own, and are stopped.
    expect(run.daemons.length).toBe(2);
    expect(run.daemons.every((d) => d.shutdown !== 'running' && d.shutdown !== 'starting')).toBe(true);
    const report = readFileSync(path.join(out, 'report.md'), 'utf8');
    expect(report).toContain('PASS (exit 0)');
    expect(report).toContain('| `mps.pinned-mem` | set_default_device_pinned_mem_limit 35942M | allocated 35392 MiB');
    expect(r.stdout).toContain('verify: exit 0');
    // gpushare report renders a verify run as verify wrote it.
    const reports = tempDir();
    const again = await runCli(['report', out, '--out', reports]);
    expect(again.exitCode).toBe(0);
    expect(readFileSync(path.join(reports, `${run.id}.md`), 'utf8')).toBe(report);
  });

  it.each([
    ['ignore-mem-limit', 'mps.pinned-mem', 'not enforced'],
    ['ignore-thread-pct', 'mps.thread-pct', 'not enforced'],
  ])('a node that ignores a limit (FAKE_NODE=%s): exit 1 naming %s', async (knob, id, verdict) => {
    const artifacts = await planned();
    const out = path.join(tempDir(), 'verify');
    const r = await runCli(['verify', artifacts, '--out', out], { FAKE_NODE: knob });
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`^${verdict} +${id.replace('.', '\\.')}:`, 'm'));
    expect(r.stdout).toContain(`did not hold: ${id} (`);
    expect(readFileSync(path.join(out, 'report.md'), 'utf8')).toContain('## Declared limits that did not hold');
    expect(record(out).rows.find((row) => row.id === id)?.verdict).toBe(verdict);
  });

  it('runs the named cases: the fake node reproduces what driver 580 did, and skips what it cannot run', async () => {
    const artifacts = await planned();
    const out = path.join(tempDir(), 'verify');
    const r = await runCli(['verify', artifacts, '--out', out, '--cases', 'all']);
    expect(r.exitCode, r.stderr).toBe(0);
    const run = record(out);
    expect(Object.fromEntries(run.cases.map((c) => [c.name, c.outcome]))).toEqual({
      'pipe-missing': 'reproduced',
      'pipe-misspelled': 'reproduced',
      'limit-invisible-gpu': 'reproduced',
      'limit-bare-size': 'reproduced',
      'memory-total-trap': 'reproduced',
      'bandwidth-not-partitioned': 'reproduced',
      'daemon-after-client': 'reproduced',
      'replicas-mismatch': 'reproduced',
      'limit-two-visible-gpus': 'skipped',
      'mig-parted-no-devices': 'skipped',
    });
    expect(run.cases.find((c) => c.name === 'limit-two-visible-gpus')?.evidence).toBe(
      'needs two GPUs; this node has 1',
    );
    // Every daemon a case started was stopped.
    expect(run.daemons.every((d) => d.shutdown !== 'running' && d.shutdown !== 'starting')).toBe(true);
    expect(run.leftPids).toEqual([]);
  });

  it('two GPUs: the limit list naming both holds when both are visible, and drops every limit when one is not', async () => {
    const artifacts = await planned();
    const out = path.join(tempDir(), 'verify');
    const r = await runCli(
      ['verify', artifacts, '--out', out, '--cases', 'limit-invisible-gpu,limit-two-visible-gpus'],
      {
        FAKE_GPUS: '2',
      },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(record(out).cases.map((c) => [c.name, c.outcome])).toEqual([
      ['limit-invisible-gpu', 'reproduced'],
      ['limit-two-visible-gpus', 'not reproduced'],
    ]);
  });

  it('a MIG geometry: enforced when the listed MIG devices are one of the declared geometries', async () => {
    const artifacts = path.join(tempDir(), 'artifacts');
    expect((await runCli(['artifacts', '--gpu-model', 'H200-141GB', '--out', artifacts])).exitCode).toBe(0);
    const out = path.join(tempDir(), 'verify');
    // The simulator's constructed MIG node: two 3g.71gb devices (simulator/README.md).
    const r = await runCli(['verify', artifacts, '--out', out], { FAKE_SMI: 'mig' });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(record(out).rows.find((row) => row.id === 'mig.geometry')).toMatchObject({
      verdict: 'enforced',
      measured: 'MIG devices listed: 2× 3g.71gb (= all-3g)',
    });
  });

  it('a node that partitions bandwidth: that case is not reproduced', async () => {
    const artifacts = await planned();
    const out = path.join(tempDir(), 'verify');
    const r = await runCli(['verify', artifacts, '--out', out, '--cases', 'bandwidth-not-partitioned'], {
      FAKE_NODE: 'bandwidth-partitioned',
    });
    expect(r.exitCode).toBe(0);
    expect(record(out).cases.map((c) => c.outcome)).toEqual(['not reproduced']);
  });

  it.each([
    [['verify', '/nonexistent/gpushare-artifacts'], 'is not a directory'],
    [['verify', '.', '--cases', 'pipe-mispelled'], 'unknown case "pipe-mispelled" in --cases'],
  ])('refuses %j in one line, exit 2', async (args, text) => {
    const r = await runCli(args);
    expect(r.exitCode).toBe(2);
    expectOneLineError(r.stderr, text);
  });

  it('artifacts prints the verify command too; verify of a time-slicing plan says it has nothing to enforce', async () => {
    const out = path.join(tempDir(), 'artifacts');
    const a = await runCli(['artifacts', '--gpu-model', 'H100-80GB', '--out', out]);
    expect(a.stderr).toContain(`gpushare verify ${out}`);
    const ts = path.join(tempDir(), 'timeslice');
    const p = await runCli([
      'plan',
      '--models',
      '2',
      '--mem-gib',
      '1',
      '--sm-pct',
      '5',
      '--gpu-model',
      'H100-80GB',
      '--out',
      ts,
    ]);
    expect(p.stderr).toContain(`gpushare verify ${ts}`);
    const vOut = path.join(tempDir(), 'v');
    const v = await runCli(['verify', ts, '--out', vOut]);
    // Every row skipped: nothing was measured, which is no pass.
    expect(v.exitCode).toBe(3);
    expect(unfolded(v.stdout)).toMatch(
      /^skipped +plugin\.timeslicing-2: device plugin timeslicing-2: 2 time-slicing replicas per GPU$/m,
    );
    const report = readFileSync(path.join(vOut, 'report.md'), 'utf8');
    expect(report).toContain('**NOTHING MEASURED (exit 3): no declared limit was checked on this node');
    expect(report).not.toContain('PASS');
  });

  /** plan's MPS files with `name` replaced by `content` (or by what `make` puts at its path). */
  async function edited(name: string, content: string | ((file: string) => void)): Promise<string> {
    const dir = await planned();
    const file = path.join(dir, name);
    rmSync(file, { force: true });
    if (typeof content === 'string') writeFileSync(file, content);
    else content(file);
    return dir;
  }

  it.each([
    [
      'a ConfigMap that is not YAML',
      () => edited(PLUGIN_CONFIGMAP, 'data: [mps-4\n  config.yaml: }'),
      `${PLUGIN_CONFIGMAP}: not YAML (`,
    ],
    [
      'a ConfigMap whose sharing config is not YAML',
      () => edited(PLUGIN_CONFIGMAP, 'data:\n  mps-4: "sharing: {mps: [}"\n'),
      `${PLUGIN_CONFIGMAP} (data.mps-4): not YAML (`,
    ],
    [
      'a ConfigMap declaring no sharing',
      () => edited(PLUGIN_CONFIGMAP, 'kind: ConfigMap\n'),
      `${PLUGIN_CONFIGMAP}: it declares no time-slicing or MPS sharing with replicas`,
    ],
    [
      'a YAML alias bomb',
      () =>
        edited(
          MIG_PARTED,
          `a: &a [x, x, x, x, x, x, x, x, x]\n${Array.from({ length: 8 }, (_, i) => `${'bcdefghi'[i]}: &${'bcdefghi'[i]} [${Array(9).fill(`*${'abcdefgh'[i]}`).join(', ')}]`).join('\n')}\n`,
        ),
      `${MIG_PARTED}: its aliases expand past 100`,
    ],
    [
      'replicas: 0',
      () =>
        edited(
          PLUGIN_CONFIGMAP,
          'data:\n  mps-0: "version: v1\\nsharing:\\n  mps:\\n    resources:\\n    - name: nvidia.com/gpu\\n      replicas: 0\\n"\n',
        ),
      'data.mps-0 declares 0 mps replicas, not a whole number from 2 to 48',
    ],
    [
      'a thread percentage of 1000',
      async () => {
        const dir = await planned();
        const file = path.join(dir, MPS_START);
        writeFileSync(
          file,
          readFileSync(file, 'utf8').replace(
            /set_default_active_thread_percentage \d+/,
            'set_default_active_thread_percentage 1000',
          ),
        );
        return dir;
      },
      `${MPS_START}: a thread percentage of 1000, not a whole number from 1 to 100`,
    ],
    [
      'a link to /dev/zero',
      () => edited(MIG_PARTED, (file) => symlinkSync('/dev/zero', file)),
      'is not a regular file',
    ],
    ['a FIFO', () => edited(PLUGIN_CONFIGMAP, (file) => execFileSync('mkfifo', [file])), 'is not a regular file'],
    ['a file of 2 MiB', () => edited(MIG_PARTED, `# ${'x'.repeat(2 * 1024 * 1024)}\n`), 'bytes, more than 1048576'],
  ])('a declaring file that is %s: one line naming it, exit 2, nothing measured', async (_what, make, text) => {
    const dir = await make();
    const out = path.join(tempDir(), 'v');
    const r = await runCli(['verify', dir, '--out', out]);
    expect(r.exitCode).toBe(2);
    expectOneLineError(r.stderr, text);
    expect(existsSync(out)).toBe(false);
  });

  it('refuses a directory that holds no generated files', async () => {
    const r = await runCli(['verify', tempDir()]);
    expect(r.exitCode).toBe(2);
    expectOneLineError(r.stderr, 'holds none of gpushare-mps-start.sh');
  });

  it('says so when the files were made for another GPU model than this node has, and not when they were made for it', async () => {
    const plannedFor = async (gpu: string) => {
      const out = path.join(tempDir(), 'plan');
      expect(
        (await runCli(['plan', '--models', '4', '--mem-gib', '10', '--sm-pct', '20', '--gpu-model', gpu, '--out', out]))
          .exitCode,
      ).toBe(0);
      const dir = path.join(tempDir(), 'verify');
      const r = await runCli(['verify', out, '--out', dir]);
      return { r, report: readFileSync(path.join(dir, 'report.md'), 'utf8') };
    };
    // The simulator's node is an H200.
    const other = await plannedFor('H100-80GB');
    const warning =
      "the files were made for H100-80GB, and this node's GPU is NVIDIA H200: verify checks their limits here, but the fit and costs behind them were for the other GPU";
    expect(unfolded(other.r.stdout)).toContain(`warning: ${warning}`);
    expect(other.report).toContain(`## Warnings\n\n- ${warning}`);
    const same = await plannedFor('H200-141GB');
    expect(same.r.stdout).not.toContain('the files were made for');
    expect(same.report).not.toContain('the files were made for');
  });
});

describe('the GPU the files were made for', () => {
  it.each([
    ['gpushare plan (4 models × 10 GiB, 20% SMs) for H100-80GB', 'NVIDIA H100 80GB HBM3', false],
    ['gpushare plan (4 models × 10 GiB, 20% SMs) for H100-80GB, costs from run r', 'NVIDIA H200', true],
    ['run 2026-11-27-h100-80gb-hbm3-2c8cff on NVIDIA H100 80GB HBM3', 'NVIDIA H100 80GB HBM3', false],
    ['run r on NVIDIA H100 80GB HBM3', 'NVIDIA H100 PCIe 80GB', false],
    ['the built-in table for A100-80GB', 'NVIDIA A100-SXM4-40GB', true],
    ['the built-in table for H200-141GB', 'NVIDIA H200', false],
    ['a source naming no GPU model', 'NVIDIA H200', false],
  ])('%s, on %s: another GPU %s', (source, node, other) => {
    expect(otherGpu(source, node) !== null).toBe(other);
  });
});
