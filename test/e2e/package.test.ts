/**
 * gpushare as a user installs it: the packed tarball installed into an empty project, and used there
 * with nothing but what the package ships. The fake GPU is the package's own simulator
 * (GPUSHARE_SIMULATE=1, gpushare demo): nothing of this repository's test/ is on PATH. Output lands
 * under the project's working directory, and nothing is written inside the installed package. A
 * Python workload written from docs/bring-your-own-workload.md alone (real Python, on a fake torch)
 * imports the helper without touching sys.path. Then the GitHub Actions example runs as written.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { Run } from '../../harness/bench/record/schema.js';
import { FAKE_TORCH, NPM_ENV, QUICK, ROOT, tempDir, unfolded } from '../helpers.js';

/** This machine's PATH: node, npm and a real python3, and no fake nvidia-smi, MPS daemon or python3. */
const PLAIN_PATH = process.env.PATH ?? '';

/** Every file under `dir` with its size and modification time: what "unchanged" is checked against. */
function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => {
      const stat = statSync(path.join(dir, name));
      return `${name} ${stat.isDirectory() ? 'dir' : stat.size} ${stat.mtimeMs}`;
    })
    .sort();
}

/** The tarball `npm pack` makes of this checkout (dist/ is already built by `npm test`), made once. */
let tarball = '';
beforeAll(async () => {
  const dir = tempDir('gpushare-pack-');
  const packed = await execa('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], {
    cwd: ROOT,
    env: NPM_ENV,
  });
  tarball = path.join(dir, (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]?.filename ?? '');
}, 120_000);

describe('the packed package, installed in another project', () => {
  const project = tempDir('gpushare-project-');
  const installed = path.join(project, 'node_modules', 'gpushare');
  let before: string[] = [];
  /** gpushare as the project runs it: on the simulator shipped in the package, unless `simulate` is false. */
  const gpushare = (args: string[], env: Record<string, string> = {}, simulate = true) =>
    execa(path.join(project, 'node_modules', '.bin', 'gpushare'), args, {
      cwd: project,
      reject: false,
      env: { PATH: PLAIN_PATH, ...(simulate ? { GPUSHARE_SIMULATE: '1' } : {}), ...env },
      timeout: 120_000,
    });
  const runsNamed = (part: string) =>
    readdirSync(path.join(project, 'runs', 'results')).filter((n) => n.includes(part));

  beforeAll(async () => {
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'user-project', private: true }));
    // Nothing else comes with it: the package has no runtime dependencies (dist/ is one bundle).
    await execa('npm', ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund', '--no-package-lock'], {
      cwd: project,
      env: NPM_ENV,
    });
    before = listing(installed);
  }, 300_000);

  it('runs every command there on the shipped simulator, and writes under the working directory', async () => {
    const doctor = await gpushare(['doctor']);
    expect(doctor.exitCode, String(doctor.stderr)).toBe(0);

    const bench = await gpushare(['bench', '--modes', 'streams,timeslice', '--workloads', 'spin', ...QUICK, '--quiet']);
    expect(bench.exitCode, String(bench.stderr)).toBe(0);
    const [run] = readdirSync(path.join(project, 'runs', 'results'));
    expect(run).toMatch(/^\d{4}-\d{2}-\d{2}-simulated-h200-[0-9a-f]{6}$/);
    const runDir = path.join('runs', 'results', run as string);
    expect(readdirSync(path.join(project, 'runs', 'reports'))).toContain(`${run}.md`);

    const report = await gpushare(['report', runDir, '--out', 'again']);
    expect(report.exitCode, String(report.stderr)).toBe(0);
    expect(readdirSync(path.join(project, 'again'))).toContain(`${run}.md`);
    expect((await gpushare(['report', runDir, '--json'])).exitCode).toBe(0);

    const gate = await gpushare(['gate', runDir, '--baseline', runDir, '--junit', 'gate.xml']);
    expect(gate.exitCode, String(gate.stderr)).toBe(0);
    expect(readdirSync(project)).toContain('gate.xml');

    const plan = await gpushare([
      'plan',
      '--models',
      '4',
      '--mem-gib',
      '2',
      '--sm-pct',
      '20',
      '--run',
      runDir,
      '--out',
      'plan',
    ]);
    expect(plan.exitCode, String(plan.stderr)).toBe(0);
    const artifacts = await gpushare(['artifacts', '--run', runDir, '--out', 'artifacts']);
    expect(artifacts.exitCode, String(artifacts.stderr)).toBe(0);
    expect(readdirSync(path.join(project, 'artifacts'))).toContain('README.md');

    const probe = await gpushare(['probe', '--probes', 'sm-cap,default-stream']);
    expect(probe.exitCode, String(probe.stderr)).toBe(0);
    const [probeRun] = runsNamed('-probe-');
    expect(readdirSync(path.join(project, 'runs', 'reports'))).toContain(`${probeRun}.md`);

    const capacity = await gpushare([
      'capacity',
      '--slo-p99-ms',
      '2',
      '--clients',
      '1',
      '--modes',
      'timeslice',
      '--window-ms',
      '200',
      '--start-qps',
      '1000',
    ]);
    expect(capacity.exitCode, String(capacity.stderr)).toBe(0);
    const [capacityRun] = runsNamed('-capacity-');
    expect(capacityRun).toMatch(/-simulated-h200-capacity-/);
    expect((await gpushare(['report', path.join('runs', 'results', capacityRun as string)])).exitCode).toBe(0);
  }, 300_000);

  it('gpushare demo is listed first in --help, and tries it without a GPU, without GPUSHARE_SIMULATE, and says what next', async () => {
    const help = await gpushare(['--help'], {}, false);
    expect(help.stdout).toMatch(/gpushare demo +try gpushare without a GPU/);
    const demo = await gpushare(['demo', '--quiet', '--out', 'demo'], {}, false);
    expect(demo.exitCode, String(demo.stderr)).toBe(0);
    expect(demo.stdout.split('\n')[0]).toMatch(/^SIMULATED: made on gpushare's simulator/);
    // Commands that work as printed from a project (and a clone): npx finds the installed bin.
    expect(unfolded(String(demo.stderr))).toContain(
      'Try any command the same way: GPUSHARE_SIMULATE=1 npx gpushare doctor, GPUSHARE_SIMULATE=1 npx gpushare capacity --slo-p99-ms 10',
    );
    const record = JSON.parse(readFileSync(path.join(project, 'demo', 'run.json'), 'utf8')) as Run;
    expect(record.fingerprint.simulated).toBe(true);
    expect(record.fingerprint.nvidiaSmi.path).toBe(path.join(installed, 'simulator', 'bin', 'nvidia-smi'));
    expect(record.modes.map((m) => `${m.mode} ${m.status}`)).toEqual([
      'streams ran',
      'timeslice ran',
      'mps ran',
      'mig skipped',
    ]);
    expect(record.trials.every((t) => t.status === 'ok')).toBe(true);
    expect(existsSync(path.join(project, 'demo', 'report', `${record.id}.md`))).toBe(true);
  }, 300_000);

  it('brings a model written from the README alone: the helper imports without sys.path, and check, bench, report (markdown and HTML) and plan take it', async () => {
    const readme = readFileSync(path.join(installed, 'README.md'), 'utf8');
    const code = /```python\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    expect(code).toContain('from gpushare_protocol import serve');
    expect(code).not.toMatch(/sys\.path\.(insert|append)/);
    writeFileSync(path.join(project, 'my_model.py'), code);
    const torch = { PYTHONPATH: FAKE_TORCH };

    const helper = await gpushare(['check', '--print-helper-path']);
    expect(helper.stdout.trim()).toBe(path.join(installed, 'workloads'));
    expect(readdirSync(helper.stdout.trim())).toContain('gpushare_protocol');

    const check = await gpushare(['check', '--', 'python3', 'my_model.py', '--batch', '4'], torch);
    expect(check.exitCode, `${check.stdout}${check.stderr}`).toBe(0);
    expect(check.stdout).toMatch(/^check passed: "my-model" \(protocol 3, /);

    const bench = await gpushare(
      ['bench', '--modes', 'timeslice,mps', ...QUICK, '--quiet', '--', 'python3', 'my_model.py', '--batch', '4'],
      torch,
    );
    expect(bench.exitCode, String(bench.stderr)).toBe(0);
    const run = (/^results: (.+)$/m.exec(bench.stdout)?.[1] ?? '').trim();
    expect(path.basename(run)).toMatch(/-simulated-/);
    const report = await gpushare(['report', run, '--out', 'custom-report']);
    expect(report.exitCode, String(report.stderr)).toBe(0);
    // The answer names the user's command; it picks a mode only where the intervals separate, and a loaded
    // machine's invalid windows can leave too few rounds for one.
    expect(readFileSync(path.join(project, report.stdout.trim()), 'utf8')).toMatch(
      /^(Measured with 2 `custom` clients \(your own command\)|This run does not say which sharing mode is cheaper for your own command: .* at 2 custom clients)/m,
    );
    const html = await gpushare(['report', run, '--format', 'html', '--out', 'custom-report']);
    expect(html.exitCode, String(html.stderr)).toBe(0);
    const page = readFileSync(path.join(project, html.stdout.trim()), 'utf8');
    expect(page).toMatch(/^<!doctype html>/i);
    expect(page).toContain('your own command');
    const plan = await gpushare([
      'plan',
      '--explain',
      '--models',
      '2',
      '--mem-gib',
      '2',
      '--sm-pct',
      '20',
      '--run',
      run,
    ]);
    expect(plan.exitCode, String(plan.stderr)).toBe(0);
    expect(unfolded(String(plan.stdout))).toMatch(/with 2 custom clients: slowdown/);
    expect(plan.stdout).not.toContain('no run given');
  }, 300_000);

  it("a user's own script imports the typed helper package by the path the docs give, and serves", async () => {
    const doc = readFileSync(path.join(installed, 'docs', 'bring-your-own-workload.md'), 'utf8');
    const block = /```sh\n(export PYTHONPATH=[^\n]*--print-helper-path[^\n]*\n[\s\S]*?)```/.exec(doc)?.[1] ?? '';
    const [exportLine] = block.split('\n');
    // The helper's directory first, and the user's own PYTHONPATH after it where they have one.
    expect(exportLine).toBe(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
      'export PYTHONPATH="$(npx gpushare check --print-helper-path)${PYTHONPATH:+:$PYTHONPATH}"',
    );
    expect(existsSync(path.join(installed, 'workloads', 'gpushare_protocol', 'py.typed'))).toBe(true);
    // The user's script in a folder of their project, run by hand (not by gpushare), on the fake torch.
    const dir = path.join(project, 'scripts');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      path.join(dir, 'my_model.py'),
      [
        'import sys',
        'import gpushare_protocol',
        'from gpushare_protocol import serve',
        'print(f"HELPER {gpushare_protocol.__file__}", file=sys.stderr)',
        'def add_arguments(p):',
        '    p.add_argument("--batch", type=int, default=8)',
        'def setup(args):',
        '    import torch',
        '    x = torch.randn(args.batch, args.batch, device="cuda")',
        '    return lambda i, lane, variant: torch.matmul(x, x)',
        'sys.exit(serve("user-script", setup, add_arguments=add_arguments, description="a user\'s model"))',
        '',
      ].join('\n'),
    );
    const bash = (script: string, input = '') =>
      execa('bash', ['-euo', 'pipefail', '-c', script], {
        cwd: dir,
        reject: false,
        input,
        env: { PATH: PLAIN_PATH, PYTHONPATH: FAKE_TORCH },
        timeout: 120_000,
      });
    // The documented block as written: the helper's own --help.
    const help = await bash(block);
    expect(help.exitCode, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/--warmup-ms[\s\S]*--batch/);
    // And the script served: ready, one window, exit, the helper imported from the installed package.
    const window = JSON.stringify({
      cmd: 'run',
      trial: 't',
      startAtUs: 0,
      durationMs: 5,
      iterations: null,
      variant: { streams: 1 },
    });
    const served = await bash(
      `${exportLine}\npython3 my_model.py --warmup-ms 1 --batch 2`,
      `${window}\n{"cmd":"exit"}\n`,
    );
    expect(served.exitCode, served.stderr).toBe(0);
    expect(served.stdout.split('\n').map((l) => (JSON.parse(l) as { event: string }).event)).toEqual([
      'ready',
      'result',
    ]);
    expect(served.stdout).toContain('"workload":"user-script"');
    expect(served.stderr).toContain(`HELPER ${path.join(installed, 'workloads', 'gpushare_protocol', '__init__.py')}`);
  }, 300_000);

  it('capacity takes the same workload as a command', async () => {
    // A target of a second: a step is invalid where the host delays the generator by a fifth of the target, and the
    // real python3 serving the fake torch here shares a busy CI machine (50 ms let 12–27 ms of host lag through).
    const args = ['capacity', '--slo-p99-ms', '1000', '--clients', '1', '--modes', 'timeslice', '--max-steps', '3'];
    const capacity = await gpushare([...args, '--', 'python3', 'my_model.py'], { PYTHONPATH: FAKE_TORCH });
    expect(capacity.exitCode, String(capacity.stderr)).toBe(0);
    expect(unfolded(String(capacity.stderr))).toMatch(/: p99 ≤ 1000 ms, custom, timeslice at 1 clients/);
  }, 300_000);

  it("runs docs/serving.md's no-GPU recipe as printed: the packaged simulated server as the user's, every copy measured", async () => {
    const docs = readFileSync(path.join(installed, 'docs', 'serving.md'), 'utf8');
    expect(docs).toContain("gpushare bench --serve '");
    const recipe = /## Without a GPU[\s\S]*?```sh\n([\s\S]*?)```/.exec(docs)?.[1] ?? '';
    expect(recipe).toMatch(
      /^GPUSHARE_SIMULATE=1 npx gpushare bench --serve 'node node_modules\/gpushare\/simulator\/openai-server\.cjs/,
    );
    // As a shell reads it, in the project, with nothing of gpushare's checkout on PATH and GPUSHARE_SIMULATE unset.
    const result = await execa('bash', ['-euo', 'pipefail', '-c', recipe], {
      cwd: project,
      reject: false,
      env: { PATH: PLAIN_PATH, npm_config_prefer_offline: 'true', ...NPM_ENV },
      timeout: 240_000,
    });
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(0);
    expect(result.stdout.split('\n')[0]).toMatch(/^SIMULATED: made on gpushare's simulator/);
    const [id] = runsNamed('-serve-');
    const run = JSON.parse(readFileSync(path.join(project, 'runs', 'results', id as string, 'serve.json'), 'utf8')) as {
      groups: Array<{ mode: string; copies: number; status: string }>;
    };
    expect(run.groups.map((g) => `${g.mode}×${g.copies} ${g.status}`)).toEqual([
      'timeslice×1 measured',
      'mps×1 measured',
      'timeslice×2 measured',
      'mps×2 measured',
    ]);
    expect(readFileSync(path.join(project, 'runs', 'reports', `${id}.md`), 'utf8').split('\n')[0]).toMatch(
      /^> \*\*SIMULATED: /,
    );
  }, 300_000);

  it('ships the examples without sys.path tricks, and was left as it was installed', () => {
    const example = readFileSync(path.join(installed, 'examples', 'torchvision_model.py'), 'utf8');
    expect(example).toContain('from gpushare_protocol import');
    expect(example).not.toMatch(/sys\.path\.(insert|append)/);
    expect(readdirSync(path.join(installed, 'examples', 'github-actions'))).toContain('gpushare.yml');
    expect(readdirSync(path.join(installed, 'workloads'))).toContain('protocol.schema.json');
    expect(listing(installed)).toEqual(before);
  });
});

describe('the GitHub Actions example, run as written', () => {
  it('two nights in an empty repository, on the simulator: the first seeds the baseline and passes, the second gates against it', async () => {
    const workflow = parse(readFileSync(path.join(ROOT, 'examples', 'github-actions', 'gpushare.yml'), 'utf8')) as {
      jobs: Record<string, { steps: Array<{ run?: string; uses?: string; with?: { path?: string } }> }>;
    };
    const steps = Object.values(workflow.jobs).flatMap((job) => job.steps);
    const runs = steps.flatMap((s) => (s.run ? [s.run] : []));
    const install = runs[0] ?? '';
    expect(install).toMatch(/^npm install --no-save \.\/vendor\/gpushare-\S+\.tgz$/);
    // What the run is kept as: every path of the upload step must exist after the steps.
    const kept = (steps.find((s) => s.uses?.startsWith('actions/upload-artifact'))?.with?.path ?? '')
      .split('\n')
      .map((p) => p.trim())
      .filter(Boolean);
    expect(kept.length).toBeGreaterThan(0);
    // The repository as GitHub holds it: an empty project with only the committed tarball.
    const root = tempDir('gpushare-ci-');
    const home = path.join(root, 'home');
    mkdirSync(home);
    const git = (cwd: string, ...args: string[]) => execa('git', args, { cwd, env: { PATH: PLAIN_PATH, HOME: home } });
    const origin = path.join(root, 'origin.git');
    await execa('git', ['init', '--bare', '--initial-branch', 'main', origin]);
    const first = path.join(root, 'first');
    await execa('git', ['clone', origin, first], { env: { PATH: PLAIN_PATH, HOME: home } });
    mkdirSync(path.join(first, 'vendor'));
    cpSync(tarball, path.join(first, install.split(' ').at(-1) as string));
    await git(first, 'add', 'vendor');
    await git(first, '-c', 'user.name=u', '-c', 'user.email=u@example.com', 'commit', '-m', 'gpushare tarball');
    await git(first, 'push', 'origin', 'HEAD:main');
    const night = async (n: number) => {
      // actions/checkout: a fresh clone of what the repository holds now.
      const repo = path.join(root, `night-${n}`);
      await execa('git', ['clone', origin, repo], { env: { PATH: PLAIN_PATH, HOME: home } });
      const out: string[] = [];
      for (const command of runs) {
        // Bencher's own CLI (installed by its action, with a token from the repository's secrets) is not
        // run here: test/cli/ci-exports.test.ts checks the file it sends with a port of Bencher's parser.
        if (/^bencher\s/.test(command.trim())) continue;
        const result = await execa('bash', ['-euo', 'pipefail', '-c', command], {
          cwd: repo,
          reject: false,
          env: {
            PATH: PLAIN_PATH,
            HOME: home,
            CI: 'true',
            GPUSHARE_SIMULATE: '1',
            npm_config_prefer_offline: 'true',
            ...NPM_ENV,
          },
          timeout: 300_000,
        });
        expect(result.exitCode, `night ${n}: ${command}\n${result.stdout}\n${result.stderr}`).toBe(0);
        out.push(String(result.stdout));
      }
      for (const p of kept) expect([n, p, existsSync(path.join(repo, p))]).toEqual([n, p, true]);
      expect(readdirSync(repo)).toContain('gpushare-junit.xml');
      return { repo, out: out.join('\n') };
    };
    // Night 1: no baseline; graded by its thresholds alone, the run becomes the baseline, committed.
    const one = await night(1);
    expect(unfolded(one.out)).toMatch(/^gate: run \S+$/m);
    const seeded = path.join(root, 'seeded');
    await execa('git', ['clone', origin, seeded], { env: { PATH: PLAIN_PATH, HOME: home } });
    const [baseline] = readdirSync(path.join(seeded, 'gpushare-baselines'));
    expect(readdirSync(path.join(seeded, 'gpushare-baselines', baseline as string))).toContain('run.json');
    // Night 2: gated against it.
    const two = await night(2);
    expect(unfolded(two.out)).toMatch(/^gate: run \S+ against baseline \S+ \(noise band/m);
    expect(readFileSync(path.join(two.repo, 'gpushare-junit.xml'), 'utf8')).toContain('gpushare gate');
    const log = await git(seeded, 'log', '--format=%s', 'origin/main');
    expect(log.stdout.split('\n')).toEqual(['gpushare: the first baseline run', 'gpushare tarball']);
  }, 900_000);

  it('names the tarball of this version', () => {
    const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    expect(path.basename(tarball)).toBe(`gpushare-${version}.tgz`);
    expect(readFileSync(path.join(ROOT, 'examples', 'github-actions', 'gpushare.yml'), 'utf8')).toContain(
      `./vendor/gpushare-${version}.tgz`,
    );
  });
});
