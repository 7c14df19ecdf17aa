/**
 * gpushare as a user installs it: the packed tarball installed into an empty project, every command
 * run there with the fakes on PATH. Output lands under the project's working directory, and nothing
 * is written inside the installed package.
 */
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import { fakePath, QUICK, ROOT, tempDir } from '../helpers.js';

/** Every file under `dir` with its size and modification time: what "unchanged" is checked against. */
function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => {
      const stat = statSync(path.join(dir, name));
      return `${name} ${stat.isDirectory() ? 'dir' : stat.size} ${stat.mtimeMs}`;
    })
    .sort();
}

describe('the packed package, installed in another project', () => {
  const project = tempDir('gpushare-project-');
  const installed = path.join(project, 'node_modules', 'gpushare');
  let before: string[] = [];
  const gpushare = (args: string[]) =>
    execa(path.join(project, 'node_modules', '.bin', 'gpushare'), args, {
      cwd: project,
      reject: false,
      env: { PATH: fakePath() },
      timeout: 120_000,
    });

  beforeAll(async () => {
    // dist/ is already built by `npm test`; the tarball holds it, as `npm publish` would.
    const packed = await execa('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', project], {
      cwd: ROOT,
    });
    const tarball = path.join(project, (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]?.filename ?? '');
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'user-project', private: true }));
    // The dependencies come from npm's cache, which `npm ci` filled.
    await execa('npm', ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund', '--no-package-lock'], {
      cwd: project,
    });
    before = listing(installed);
  }, 300_000);

  it('runs every command there, writes under the working directory, and leaves the package alone', async () => {
    const doctor = await gpushare(['doctor']);
    expect(doctor.exitCode, String(doctor.stderr)).toBe(0);

    const bench = await gpushare(['bench', '--modes', 'streams,timeslice', '--workloads', 'spin', ...QUICK, '--quiet']);
    expect(bench.exitCode, String(bench.stderr)).toBe(0);
    const [run] = readdirSync(path.join(project, 'results'));
    expect(run).toMatch(/^\d{4}-\d{2}-\d{2}-/);
    const runDir = path.join('results', run as string);
    expect(readdirSync(path.join(project, 'reports'))).toContain(`${run}.md`);

    const report = await gpushare(['report', runDir, '--out', 'again']);
    expect(report.exitCode, String(report.stderr)).toBe(0);
    expect(readdirSync(path.join(project, 'again'))).toContain(`${run}.md`);
    expect((await gpushare(['report', runDir, '--format', 'json'])).exitCode).toBe(0);

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
    const [probeRun] = readdirSync(path.join(project, 'results')).filter((name) => name.includes('-probe-'));
    expect(readdirSync(path.join(project, 'reports'))).toContain(`${probeRun}.md`);

    expect(listing(installed)).toEqual(before);
  }, 300_000);
});
