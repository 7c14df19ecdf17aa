/** `gpushare artifacts` and `gpushare plan` through run(argv, deps), in process. */
import { lstatSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  expectOneLineError,
  H100_RUN,
  H100_SWEEP_RUN,
  H200_RUN,
  LOOP2_RUN,
  ROOT,
  runCli,
  tempDir,
  unfolded,
} from '../helpers.js';

/** The H200 run: every mode, 5 rounds each, too few for a 95% interval, so no mode measured cheaper. */
const real = H200_RUN;
const cli = (args: string[]) => runCli(args);

describe('gpushare artifacts', () => {
  it("writes the MPS scripts (executable), the Kubernetes files and the GPU's MIG geometries for a real run", async () => {
    const out = path.join(tempDir(), 'artifacts');
    const result = await cli(['artifacts', '--run', real, '--out', out]);
    expect(result.exitCode).toBe(0);
    expect(readdirSync(out).sort()).toEqual([
      '.gpushare-files.json',
      'README.md',
      'gpushare-clusterpolicy-patch.yaml',
      'gpushare-device-plugin-configmap.yaml',
      'gpushare-mig-parted.yaml',
      'gpushare-mps-start.sh',
      'gpushare-mps-stop.sh',
      'gpushare-mps.service',
      'gpushare-node-label.yaml',
      'gpushare-shared-gpu-pod.yaml',
    ]);
    expect(statSync(path.join(out, 'gpushare-mps-start.sh')).mode & 0o777).toBe(0o755);
    // Its medians (MPS 1.12×, time-sliced 5.09×) have no 95% intervals: no mode measured cheaper, so no default.
    expect(
      parse(readFileSync(path.join(out, 'gpushare-clusterpolicy-patch.yaml'), 'utf8')).spec.devicePlugin.config.default,
    ).toBeUndefined();
    expect(readFileSync(path.join(out, 'README.md'), 'utf8')).toContain(
      'No ClusterPolicy default: fewer than two modes measured with a 95% interval at 2 infer clients: time-slicing: no 95% interval (too few rounds); MPS: no 95% interval (too few rounds).',
    );
    const mig = parse(readFileSync(path.join(out, 'gpushare-mig-parted.yaml'), 'utf8'));
    expect(mig['mig-configs']['all-3g']).toEqual([
      { devices: 'all', 'mig-enabled': true, 'mig-devices': { '3g.71gb': 2 } },
    ]);
  });

  it('says what its files set: the MPS limits the run measured with (none here), and the shares --replicas makes', async () => {
    // The default suite measured MPS without a thread percentage or memory limit: the scripts set neither, and say so.
    const out = path.join(tempDir(), 'artifacts');
    expect((await cli(['artifacts', '--run', LOOP2_RUN, '--out', out, '--replicas', '8'])).exitCode).toBe(0);
    const start = readFileSync(path.join(out, 'gpushare-mps-start.sh'), 'utf8');
    expect(start).not.toMatch(/set_default_(active_thread_percentage|device_pinned_mem_limit)/);
    expect(start).toContain(
      "# Left at the daemon's defaults (these scripts set only the limits their source ran MPS with:\n# gpushare bench --mps-thread-pct and --mps-mem-limit; gpushare plan sets both):\n#   the active thread percentage: every client may use every SM\n#   the pinned memory limit: every client may use all of the GPU's memory\n",
    );
    const readme = readFileSync(path.join(out, 'README.md'), 'utf8');
    expect(readme).toContain(
      '`gpushare-mps-start.sh` sets no default thread percentage and no pinned memory limit: run 2026-11-27-h100-80gb-hbm3-2c8cff measured MPS without them',
    );
    expect(readme).toContain(
      'The device-plugin configs share each GPU 8 ways (`--replicas`, 4 unless given): `timeslicing-8` and `mps-8`, whose own MPS daemon gives each share 12% of the SMs and 10194 MiB of memory.',
    );
    expect(readme).toContain('The ClusterPolicy default is `mps-8`.');
    // docs/plan-and-artifacts.md says the same of them.
    const docs = unfolded(readFileSync(path.join(ROOT, 'docs', 'plan-and-artifacts.md'), 'utf8')).replace(
      /\n\s*/g,
      ' ',
    );
    expect(docs).toContain('set the default thread percentage and pinned memory limit the run measured MPS with');
    expect(docs).toContain("the daemon's defaults stand (every SM, all of the memory)");
    expect(docs).toContain('each sharing a GPU `--replicas` ways (4 unless given: `timeslicing-4`, `mps-4`)');
  });

  it('needs --run or --gpu, and names an unknown GPU', async () => {
    const none = await cli(['artifacts', '--out', tempDir()]);
    expect(none.exitCode).toBe(2);
    expect(none.stderr.trim()).toBe(
      'gpushare: artifacts needs --run <run-dir> (the GPU it measured), --mix <mix-run-dir> or --gpu-model <model>',
    );
    const unknown = await cli(['artifacts', '--out', tempDir(), '--gpu-model', 'V100']);
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr.trim()).toBe(
      'gpushare: unknown GPU "V100" for --gpu-model: choose from A100-40GB, A100-80GB, H100-80GB, H200-141GB, or give --run with a measured run',
    );
  });
});

describe('gpushare plan', () => {
  it('36 small models on one A100-80GB: MPS (its measured slowdown interval the lowest of those that fit), with the measured costs, and writes its artifacts', async () => {
    const out = path.join(tempDir(), 'plan');
    const result = await cli([
      'plan',
      '--explain',
      '--models',
      '36',
      '--mem-gib',
      '1.5',
      '--sm-pct',
      '10',
      '--gpu-model',
      'A100-80GB',
      '--run',
      H100_RUN,
      '--out',
      out,
    ]);
    expect(result.exitCode).toBe(0);
    expect(unfolded(result.stdout)).toMatch(
      /^recommendation: MPS — fits, and measured the lowest per-model slowdown of the options that fit, its 95% interval below every other's: 1\.74× \[1\.713, 1\.757\] at 2 clients$/m,
    );
    expect(unfolded(result.stdout)).toMatch(
      /^runner-up: time-slicing — fits, and measured the next lowest per-model slowdown/m,
    );
    // The run measured 2 clients: quoted for 36, and marked as such.
    expect(unfolded(result.stdout)).toMatch(
      /time-slicing: fits\n[\s\S]*! measured on run .* with 2 infer clients \(the most measured, fewer than the 36 asked: more cost more\): slowdown \d\.\d\d×/,
    );
    expect(readdirSync(out)).toContain('gpushare-mps-start.sh');
    const configMap = parse(readFileSync(path.join(out, 'gpushare-device-plugin-configmap.yaml'), 'utf8'));
    expect(parse(configMap.data['mps-36']).sharing.mps.resources).toEqual([{ name: 'nvidia.com/gpu', replicas: 36 }]);
    expect(readFileSync(path.join(out, 'gpushare-mps-start.sh'), 'utf8')).toContain(
      'set_default_active_thread_percentage 2',
    );
  });

  it("the device-plugin config and the host scripts agree on each client's SM share and memory", async () => {
    const out = path.join(tempDir(), 'plan');
    const result = await cli([
      'plan',
      '--explain',
      '--models',
      '36',
      '--mem-gib',
      '1.5',
      '--sm-pct',
      '10',
      '--gpu-model',
      'A100-80GB',
      '--out',
      out,
    ]);
    expect(result.exitCode).toBe(0);
    const configMap = parse(readFileSync(path.join(out, 'gpushare-device-plugin-configmap.yaml'), 'utf8'));
    const [resource] = parse(configMap.data['mps-36']).sharing.mps.resources as Array<{ replicas: number }>;
    const replicas = resource?.replicas ?? 0;
    // What NVIDIA's mps-control-daemon sets for its replicas (cmd/mps-control-daemon/mps/daemon.go):
    // 100 / replicas percent of the threads, and the GPU's memory / replicas (MiB), both rounded down.
    const a100MiB = 80 * 1024;
    const start = readFileSync(path.join(out, 'gpushare-mps-start.sh'), 'utf8');
    expect(start).toContain(`set_default_active_thread_percentage ${Math.floor(100 / replicas)}"`);
    expect(start).toContain(`set_default_device_pinned_mem_limit $i ${Math.floor(a100MiB / replicas)}M"`);
    // The plan says what the plugin's split costs against the 10% asked, and the README that the two never run together.
    expect(unfolded(result.stdout)).toContain(
      'each client is capped at 2% of the SMs, below the 10% asked: at 10% one GPU takes at most 10 replicas',
    );
    expect(readFileSync(path.join(out, 'README.md'), 'utf8')).toContain('use one per node, never both');
    expect(start).toContain('Not on a node whose NVIDIA device plugin shares GPUs with MPS');
    // Every GPU of the node by default; a list gives those GPUs, whose limits go by position.
    expect(start).toContain('mapfile -t GPUS < <(nvidia-smi --query-gpu=index --format=csv,noheader)');
    const listed = path.join(tempDir(), 'plan');
    await cli([
      'plan',
      '--explain',
      '--models',
      '36',
      '--mem-gib',
      '1.5',
      '--sm-pct',
      '10',
      '--gpu-model',
      'A100-80GB',
      '--gpus',
      '1,3',
      '--out',
      listed,
    ]);
    expect(readFileSync(path.join(listed, 'gpushare-mps-start.sh'), 'utf8')).toContain('GPUS=(1 3)');
  });

  it('a few larger models get MIG slices and a mig-parted geometry', async () => {
    const out = path.join(tempDir(), 'plan');
    const result = await cli([
      'plan',
      '--explain',
      '--models',
      '3',
      '--mem-gib',
      '12',
      '--sm-pct',
      '20',
      '--gpu-model',
      'H100-80GB',
      '--out',
      out,
    ]);
    expect(unfolded(result.stdout)).toMatch(/^recommendation: MIG — every model gets its own 2g\.20gb slice/m);
    const mig = parse(readFileSync(path.join(out, 'gpushare-mig-parted.yaml'), 'utf8'));
    expect(mig['mig-configs']['gpushare-plan']).toEqual([
      { devices: 'all', 'mig-enabled': true, 'mig-devices': { '2g.20gb': 3 } },
    ]);
  });

  it('bad numbers: exit 2, one line', async () => {
    const result = await cli(['plan', '--models', '0', '--mem-gib', '1', '--sm-pct', '10', '--gpu-model', 'A100-80GB']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr.trim()).toBe('gpushare: --models 0: needs a number from 1 to 100000');
  });
});

describe('gpushare artifacts without a run', () => {
  it('chooses no ClusterPolicy default, and writes the operator namespace and policy name it is given', async () => {
    const out = path.join(tempDir(), 'artifacts');
    const result = await cli([
      'artifacts',
      '--gpu-model',
      'A100-80GB',
      '--out',
      out,
      '--namespace',
      'nvidia-gpu-operator',
      '--cluster-policy',
      'gpu-cluster-policy',
    ]);
    expect(result.exitCode).toBe(0);
    const read = (name: string) => readFileSync(path.join(out, name), 'utf8');
    expect(parse(read('gpushare-clusterpolicy-patch.yaml'))).toEqual({
      spec: { devicePlugin: { config: { name: 'gpushare-device-plugin-config' } } },
    });
    expect(read('gpushare-clusterpolicy-patch.yaml')).toContain(
      'kubectl patch clusterpolicies.nvidia.com/gpu-cluster-policy ',
    );
    expect(parse(read('gpushare-device-plugin-configmap.yaml')).metadata.namespace).toBe('nvidia-gpu-operator');
    expect(parse(read('gpushare-node-label.yaml'))).toEqual({ metadata: { labels: {} } });
    expect(read('README.md')).toContain('No ClusterPolicy default: no run measured which sharing mode costs less');
    const bad = await cli(['artifacts', '--gpu-model', 'A100-80GB', '--out', out, '--namespace', 'GPU_Operator']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr.trim()).toBe(
      'gpushare: --namespace GPU_Operator: needs a Kubernetes name (lower-case letters, digits and "-", at most 63), e.g. nvidia-gpu-operator',
    );
  });
});

describe('gpushare plan --slo-p99-ms', () => {
  const args = [
    'plan',
    '--explain',
    '--models',
    '4',
    '--mem-gib',
    '2',
    '--sm-pct',
    '10',
    '--gpu-model',
    'H100-80GB',
    '--run',
    real,
  ];
  it("is capacity's name; --latency-slo-ms still works, with a warning, and means the same", async () => {
    const now = await cli([...args, '--slo-p99-ms', '0.05']);
    const old = await cli([...args, '--latency-slo-ms', '0.05']);
    expect(now.exitCode).toBe(0);
    // The H200 run's costs planned for an H100: that warning alone.
    expect(unfolded(now.stderr)).toMatch(
      /^gpushare plan: warning: run \S+ was measured on NVIDIA H200 .*H100-80GB[^\n]*$/,
    );
    expect(old.stderr).toContain('warning: --latency-slo-ms is deprecated: use --slo-p99-ms');
    expect(old.stdout).toBe(now.stdout);
    // The fit and the target are said apart: a mode that fits but misses the target says both.
    expect(unfolded(now.stdout)).toMatch(
      /^time-slicing: fits, but misses the 0\.05 ms p99 target: missed at 2 clients \(0\.\d ms\)$/m,
    );
  });
});

describe('gpushare plan for a GPU without a built-in table', () => {
  it('fits time-slicing and MPS from the memory given, leaves MIG out, and asks for the memory when it is missing', async () => {
    const out = path.join(tempDir(), 'plan');
    const result = await cli([
      'plan',
      '--explain',
      '--models',
      '4',
      '--mem-gib',
      '2',
      '--sm-pct',
      '10',
      '--gpu-model',
      'A10',
      '--gpu-mem-gib',
      '24',
      '--out',
      out,
    ]);
    expect(result.exitCode).toBe(0);
    expect(unfolded(result.stdout)).toMatch(
      /^recommendation: MPS — fits; its cost was not measured, so it is ranked by isolation .*; the better isolated options cannot: MIG does not fit$/m,
    );
    expect(unfolded(result.stdout)).toContain(
      'memory: 4 × 2 GiB + 4 contexts × 0.5 GiB assumed overhead = 10 GiB of 22.8 GiB usable (24 GiB less 5% headroom): 12.8 GiB left',
    );
    expect(unfolded(result.stdout)).toContain('A10 has no MIG profile table');
    expect(readdirSync(out)).not.toContain('gpushare-mig-parted.yaml');
    const json = JSON.parse(
      String(
        (
          await cli([
            'plan',
            '--models',
            '4',
            '--mem-gib',
            '2',
            '--sm-pct',
            '10',
            '--gpu-model',
            'A10',
            '--gpu-mem-gib',
            '24',
            '--json',
          ])
        ).stdout,
      ),
    );
    expect(json).toMatchObject({
      request: { models: 4, memGiB: 2, smPct: 10, sloP99Ms: null, headroomPct: 5 },
      gpu: { name: 'A10', memoryGiB: 24, mig: null },
      recommendation: 'mps',
      mpsThreadPct: 25,
      mpsMemLimit: '6144M',
    });
    expect(json.assessments.map((a: { mode: string; fits: boolean }) => [a.mode, a.fits])).toEqual([
      ['streams', true],
      ['green', true],
      ['timeslice', true],
      ['mps', true],
      ['mig', false],
    ]);
    const missing = await cli(['plan', '--models', '4', '--mem-gib', '2', '--sm-pct', '10', '--gpu-model', 'A10']);
    expect(missing.exitCode).toBe(2);
    // --gpu names a GPU index (bench's): here it is refused, not read as a model.
    const index = await cli(['plan', '--models', '4', '--mem-gib', '2', '--sm-pct', '10', '--gpu', 'A100-80GB']);
    expect([index.exitCode, index.stderr.trim()]).toEqual([
      2,
      'gpushare: --gpu A100-80GB: --gpu is a GPU index (bench); name a GPU model with --gpu-model, e.g. --gpu-model H100-80GB',
    ]);
    expect(missing.stderr.trim()).toBe(
      'gpushare: unknown GPU "A10" for --gpu-model: choose from A100-40GB, A100-80GB, H100-80GB, H200-141GB, give its memory with --gpu-mem-gib (time-slicing and MPS need no MIG table), or give --run with a measured run',
    );
  });
});

describe('--out: gpushare replaces only what it wrote there, and never writes through a link', () => {
  const artifacts = (out: string, ...more: string[]) =>
    cli(['artifacts', '--gpu-model', 'H100-80GB', '--k8s', 'dra', '--out', out, ...more]);
  const plan = (out: string, ...more: string[]) =>
    cli([
      'plan',
      '--models',
      '4',
      '--mem-gib',
      '10',
      '--sm-pct',
      '20',
      '--gpu-model',
      'H100-80GB',
      '--out',
      out,
      ...more,
    ]);

  it('writes again over its own files, and refuses one the user changed since, naming it: exit 2', async () => {
    const out = path.join(tempDir(), 'files');
    expect((await artifacts(out)).exitCode).toBe(0);
    expect((await artifacts(out)).exitCode).toBe(0);
    const edited = path.join(out, 'gpushare-mps-start.sh');
    writeFileSync(edited, '# my own changes\n');
    const again = await artifacts(out);
    expect(again.exitCode).toBe(2);
    expectOneLineError(
      again.stderr,
      'refusing to replace gpushare-mps-start.sh (not written by gpushare, or changed since)',
    );
    expect(readFileSync(edited, 'utf8')).toBe('# my own changes\n');
  });

  it.each([
    ['artifacts --k8s dra', artifacts, 'gpushare-dra-claims.yaml'],
    ['plan', plan, 'README.md'],
  ])('%s over a user file: refused before anything is written; --force replaces it', async (_name, write, name) => {
    const out = tempDir('gpushare-user-dir-');
    writeFileSync(path.join(out, name), 'the user’s own\n');
    const refused = await write(out);
    expect(refused.exitCode).toBe(2);
    expectOneLineError(refused.stderr, `refusing to replace ${name} (not written by gpushare, or changed since)`);
    expect(readdirSync(out)).toEqual([name]);
    expect(readFileSync(path.join(out, name), 'utf8')).toBe('the user’s own\n');
    const forced = await write(out, '--force');
    expect(forced.exitCode, forced.stderr).toBe(0);
    expect(readFileSync(path.join(out, name), 'utf8')).not.toBe('the user’s own\n');
  });

  it.each([
    ['artifacts --k8s dra', artifacts, 'gpushare-dra-claims.yaml'],
    ['plan', plan, 'gpushare-mps-start.sh'],
  ])(
    '%s never writes through a link to a file outside --out; --force replaces the link itself',
    async (_name, write, name) => {
      const outside = path.join(tempDir(), 'precious.txt');
      writeFileSync(outside, 'outside --out\n');
      const out = tempDir('gpushare-linked-dir-');
      symlinkSync(outside, path.join(out, name));
      const refused = await write(out);
      expect(refused.exitCode).toBe(2);
      expectOneLineError(refused.stderr, `refusing to replace ${name} (a link)`);
      const forced = await write(out, '--force');
      expect(forced.exitCode, forced.stderr).toBe(0);
      expect(readFileSync(outside, 'utf8')).toBe('outside --out\n');
      expect(lstatSync(path.join(out, name)).isFile()).toBe(true);
    },
  );

  it('a folder on the way that is a link out of --out (a Triton model folder) is refused, even with --force', async () => {
    const out = tempDir('gpushare-linked-folder-');
    const elsewhere = tempDir('gpushare-elsewhere-');
    const streams = [
      'plan',
      '--run',
      H100_SWEEP_RUN,
      '--models',
      '40',
      '--mem-gib',
      '1',
      '--sm-pct',
      '2',
      '--out',
      out,
    ];
    const first = await cli(streams);
    expect(first.exitCode, first.stderr).toBe(0);
    const folder = readdirSync(out).find((n) => lstatSync(path.join(out, n)).isDirectory()) as string;
    rmSync(path.join(out, folder), { recursive: true });
    symlinkSync(elsewhere, path.join(out, folder));
    for (const more of [[], ['--force']]) {
      const refused = await cli([...streams, ...more]);
      expect(refused.exitCode).toBe(2);
      expectOneLineError(refused.stderr, `refusing to replace ${folder} (a link, where gpushare writes a folder)`);
    }
    expect(readdirSync(elsewhere)).toEqual([]);
  });
});

describe('plan --run with --gpu-model: costs of one GPU on another', () => {
  const PLAN = ['plan', '--models', '2', '--mem-gib', '4', '--sm-pct', '20', '--run', H100_RUN];
  it('an H100 run planned for an A100-40GB: one warning line naming both GPUs, the plan still made', async () => {
    const result = await cli([...PLAN, '--gpu-model', 'A100-40GB']);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(
      unfolded(result.stderr)
        .split('\n')
        .filter((l) => l.includes('warning')),
    ).toEqual([
      expect.stringMatching(
        /^gpushare plan: warning: run 2026-11-22-h100-80gb-hbm3-e4176e was measured on NVIDIA H100 80GB HBM3 \(80 GiB\), and the plan is for the A100-40GB \(40 GiB\): its measured costs .* may not hold on this one/,
      ),
    ]);
  });
  it.each([
    ['the same model', ['--gpu-model', 'H100-80GB']],
    ['its own GPU (no --gpu-model)', []],
  ])('%s: no warning', async (_what, more) => {
    const result = await cli([...PLAN, ...more]);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stderr).not.toContain('warning');
  });
  it('a model named by a word of the run’s GPU but of other memory (H100 with --gpu-mem-gib 40): warned', async () => {
    const result = await cli([...PLAN, '--gpu-model', 'H100-PCIe', '--gpu-mem-gib', '40']);
    expect(unfolded(result.stderr)).toContain('and the plan is for the H100-PCIe (40 GiB)');
  });
});
