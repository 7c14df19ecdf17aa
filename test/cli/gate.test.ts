/**
 * The gate and report on a real run (a fixture copy of a committed one), and on copies of it made
 * worse, in process. $GITHUB_STEP_SUMMARY, which the gate reads from the environment, is checked on
 * the built CLI in test/e2e/smoke.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import type { Run } from '../../harness/bench/record/schema.js';
import {
  DEFAULT_RUN,
  degrade,
  editedCopy,
  expectOneLineError,
  H100_RUN,
  REPEAT_RUN,
  runCli,
  tempDir,
  unfolded,
} from '../helpers.js';

const real = DEFAULT_RUN;
const cli = (args: string[]) => runCli(args);

interface GateJson {
  exitCode: number;
  verdicts: Array<{ metric: string; verdict: string; ci: [number, number] | null }>;
  changes: Array<{
    metricId: string;
    status: string;
    change: number;
    band: { source: string; runs: number | null; between: number; within: number; halfWidth: number } | null;
  }>;
  setAside: string[];
  history: string[];
}

describe(`gpushare gate on ${path.basename(real)}`, () => {
  it('passes the run against itself, and writes JUnit that validates as XML', async () => {
    const junit = path.join(tempDir(), 'gate.xml');
    const result = await cli(['gate', real, '--baseline', real, '--junit', junit]);
    expect(result.exitCode).toBe(0);
    expect(unfolded(result.stdout)).toMatch(
      /^streams\/spin\/speedup-k2 +1\.99\d +\[1\.99\d, 1\.99\d\] +≥ 1\.05 +pass +[-+]0\.0% \[0\.99\d, 1\.00\d\] +±2\.0% \(floor\) +-2\.\d% +unchanged$/m,
    );
    expect(unfolded(result.stdout)).toMatch(/^metric +value +within-run 95% CI +threshold/m);
    expect(unfolded(result.stdout)).toContain('bands: between-run part the default floor per ratio');
    expect(unfolded(result.stdout)).toContain('exit 0: pass');
    const xml = readFileSync(junit, 'utf8');
    expect(XMLValidator.validate(xml)).toBe(true);
    const suite = new XMLParser({ ignoreAttributes: false }).parse(xml).testsuites.testsuite;
    expect(suite['@_failures']).toBe('0');
    expect(suite.testcase.length).toBeGreaterThanOrEqual(8);
  });

  it('exits 1 against a copy whose ratios were made 10% worse, naming each regression', async () => {
    const worse = editedCopy(real, (run) => degrade(run, 1.1));
    const junit = path.join(tempDir(), 'gate.xml');
    const result = await cli(['gate', worse, '--baseline', real, '--json', '--junit', junit]);
    expect(result.exitCode).toBe(1);
    const gate = JSON.parse(result.stdout) as GateJson;
    const status = Object.fromEntries(gate.changes.map((c) => [c.metricId, c.status]));
    // Ratios whose runs agree across H100s within a few per cent are caught; the noisy ones' floors
    // (±9–11%, docs/gate-calibration.md) are wider than 10%, and they say so rather than cry wolf.
    for (const id of [
      'streams/spin/speedup-k2',
      'timeslice/spin/slowdown',
      'timeslice/gemm/slowdown',
      'mps/spin/slowdown',
      'mps/gemm/slowdown',
    ]) {
      expect([id, status[id]]).toEqual([id, 'regression']);
    }
    for (const c of gate.changes.filter((x) => x.status !== 'regression')) {
      expect([c.metricId, c.status, c.band?.source]).toEqual([c.metricId, 'unchanged', 'floor']);
      expect(Math.abs(Math.log(c.change))).toBeLessThanOrEqual(Math.log1p(c.band?.halfWidth ?? 0));
    }
    const xml = readFileSync(junit, 'utf8');
    expect(XMLValidator.validate(xml)).toBe(true);
    expect(xml).toMatch(/<failure type="regression" message="timeslice\/gemm\/slowdown regressed \+10\.\d%/);
  });

  it('a 1% change stays inside the noise band: no regression', async () => {
    const result = await cli(['gate', editedCopy(real, (run) => degrade(run, 1.01)), '--baseline', real, '--json']);
    const gate = JSON.parse(result.stdout) as GateJson;
    expect(gate.changes.some((c) => c.status === 'regression')).toBe(false);
  });

  it('fails a threshold when the whole CI lies outside it', async () => {
    const config = path.join(tempDir(), 'strict.yaml');
    writeFileSync(config, 'thresholds:\n  "timeslice/gemm/slowdown": { max: 1.5 }\n');
    const result = await cli(['gate', real, '--config', config]);
    expect(result.exitCode).toBe(1);
    expect(unfolded(result.stdout)).toMatch(
      /timeslice\/gemm\/slowdown: fail: the whole CI \[2\.\d{3}, 2\.\d{3}\] lies outside ≤ 1\.5/,
    );
  });

  it('refuses to compare runs of different drivers unless --allow-mismatch', async () => {
    const other = editedCopy(real, (run) => {
      run.fingerprint.driverVersion = '570.00.00';
    });
    const refused = await cli(['gate', real, '--baseline', other]);
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr.trim()).toBe(
      'gpushare: refusing to compare runs measured differently: driver: 570.00.00 before vs 580.159.04 now; --allow-mismatch compares them anyway, listing every difference',
    );
    const allowed = await cli(['gate', real, '--baseline', other, '--allow-mismatch']);
    expect(allowed.exitCode).toBe(0);
    expect(unfolded(allowed.stdout)).toContain('warning: measured differently: driver');
  });

  it('a bad thresholds file: exit 2, one line naming the path and the value', async () => {
    const config = path.join(tempDir(), 'bad.yaml');
    writeFileSync(config, 'thresholds:\n  "timeslice/gemm/slowdown": { min: lots }\n');
    const result = await cli(['gate', real, '--config', config]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr.trim()).toBe(
      `gpushare: ${config}: thresholds.timeslice/gemm/slowdown.min: Invalid input: expected number, received string (got "lots")`,
    );
  });

  it.each([
    ['a FIFO', (file: string) => execFileSync('mkfifo', [file])],
    ['a link to /dev/zero', (file: string) => symlinkSync('/dev/zero', file)],
  ])('--config %s: refused at once, one line, exit 2 (it never blocks the gate)', async (_what, make) => {
    const config = path.join(tempDir(), 'thresholds.yaml');
    make(config);
    const result = await cli(['gate', real, '--config', config]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, `${config} is not a regular file: give a thresholds file (YAML or JSON)`);
  });

  it.each([
    ['windows', (run: Run) => void (run.config.windowMs = 300), 'window: 500 ms before vs 300 ms now'],
    ['client counts', (run: Run) => void (run.config.clients = 4), 'clients: 2 before vs 4 now'],
    ['CPU pinning', (run: Run) => void (run.config.cpuPin = 'auto'), 'CPU pinning: off before vs auto now'],
    [
      'workload parameters',
      (run: Run) =>
        void ((run.plan.find((c) => c.id === 'timeslice/gemm') as Run['plan'][number]).workload.params.size = 8192),
      'timeslice/gemm size: 4096 before vs 8192 now',
    ],
  ])('refuses a baseline measured with other %s unless --allow-mismatch', async (_, edit, message) => {
    const other = editedCopy(real, edit);
    const refused = await cli(['gate', other, '--baseline', real]);
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain(message);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr.length).toBeLessThan(200);
    expect(refused.stderr).not.toContain('{');
    expect((await cli(['gate', other, '--baseline', real, '--allow-mismatch'])).stdout).toContain(
      `warning: measured differently: ${message}`,
    );
  });

  it('a thresholds pattern that matches no metric is an error naming the nearest ids (a typo no longer turns the gate off)', async () => {
    const config = path.join(tempDir(), 'typo.yaml');
    writeFileSync(config, 'thresholds:\n  "mps/infre/slowdown": { max: 1.2 }\n');
    const result = await cli(['gate', real, '--config', config]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr.trim()).toBe(
      `gpushare: ${config}: thresholds pattern "mps/infre/slowdown" matches no metric of this run; nearest: mps/infer/slowdown, mps/spin/slowdown, mps/gemm/slowdown`,
    );
  });

  it('an interrupted run is not graded: exit 3 with the reason', async () => {
    const interrupted = editedCopy(real, (run) => {
      run.status = 'interrupted';
      run.trials = run.trials.slice(0, 100);
    });
    const result = await cli(['gate', interrupted, '--baseline', real]);
    expect(result.exitCode).toBe(3);
    expect(unfolded(result.stdout)).toContain(
      'is interrupted, not complete: finish it with gpushare bench --resume before gating it',
    );
  });

  it('ratios of the baseline the run lacks make it inconclusive (exit 3), named', async () => {
    const fewer = editedCopy(real, (run) => {
      run.trials = run.trials.filter((t) => t.comparisonId !== 'mps/infer');
    });
    const result = await cli(['gate', fewer, '--baseline', real]);
    expect(result.exitCode).toBe(3);
    expect(unfolded(result.stdout)).toContain(
      'inconclusive: ratios of the baseline this run did not measure: mps/infer/slowdown',
    );
  });

  it('the repeat run straight after the default run: no ratio regressed (exit 0)', async () => {
    const result = await cli(['gate', REPEAT_RUN, '--baseline', real, '--json']);
    expect(result.exitCode).toBe(0);
    const gate = JSON.parse(result.stdout) as GateJson;
    expect(gate.changes.filter((c) => c.status === 'regression')).toEqual([]);
  });

  it('a run directory that is not one: exit 2, one line', async () => {
    const result = await cli(['gate', tempDir()]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(
      /^gpushare: cannot read .*run\.json \(ENOENT\): give a run directory made by gpushare bench$/,
    );
  });
});

describe('gpushare report --format json', () => {
  it('prints verdicts with value, CI, threshold and verdict, and every metric with its statistics', async () => {
    const result = await cli(['report', real, '--json']);
    expect(result.exitCode).toBe(0);
    const report = JSON.parse(result.stdout) as {
      verdicts: Array<{
        metric: string;
        value: number;
        ci: [number, number];
        threshold: { min?: number; max?: number } | null;
        verdict: string;
      }>;
      metrics: Array<{ metric: string; perRound: number[]; ci: [number, number] | null; mad: number; cv: number }>;
    };
    const gemm = report.verdicts.find((v) => v.metric === 'timeslice/gemm/slowdown');
    expect(gemm).toMatchObject({
      threshold: { min: 1.2, max: 3.5, pattern: 'timeslice/gemm/slowdown' },
      verdict: 'pass',
    });
    expect(gemm?.ci[0]).toBeLessThanOrEqual(gemm?.value as number);
    // timeslice/infer ran 2 rounds beyond the minimum of 6: every one of them counts.
    expect(report.metrics.find((m) => m.metric === 'timeslice/infer/p99-latency-ratio')?.perRound).toHaveLength(8);
  });
});

describe('gate names what differs in a few words, not JSON', () => {
  it('two committed H100 runs of other suite versions: each difference named, the refusal one short line', async () => {
    const refused = await cli(['gate', H100_RUN, '--baseline', DEFAULT_RUN]);
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr.trim()).toBe(
      'gpushare: refusing to compare runs measured differently: window: 500 ms before vs 250 ms now; streams/pipeline matmuls: unset before vs 2 now; streams/pipeline pageable: unset before vs false now (and 7 more); --allow-mismatch compares them anyway, listing every difference',
    );
    const allowed = await cli(['gate', H100_RUN, '--baseline', DEFAULT_RUN, '--allow-mismatch']);
    const warnings = allowed.stdout.split('\n').filter((l) => l.startsWith('warning: measured differently: '));
    // Nine settings and the harness generation: the release lead before each window.
    expect(warnings).toHaveLength(10);
    expect(warnings).toContain('warning: measured differently: release lead: 100 ms before vs 30 ms now');
    expect(allowed.stdout).toContain(
      'warning: measured differently: timeslice/infer model: mlp before vs transformer\n  now\n',
    );
    const lines = allowed.stdout.split('\n');
    const first = lines.findIndex((l) => l.startsWith('warning: '));
    const differences = lines.slice(
      first,
      lines.findIndex((l) => l.startsWith('metric ')),
    );
    expect(differences.filter((l) => [...l].length > 80)).toEqual([]);
  });
});
