/**
 * The gate's verdicts as CI acts on them: the exit code for every verdict kind and change status, a
 * threshold's edges (judge), and the status each output shows. Boundary tables: each threshold at, just
 * below and just above. verdicts-gate-run.test.ts moves a threshold across a committed run's CI.
 */
import { describe, expect, it } from 'vitest';
import { judge } from '../../harness/bench/analysis/analyze.js';
import type { MetricAnalysis, Verdict } from '../../harness/bench/analysis/types.js';
import type { Band } from '../../harness/bench/gate/bands.js';
import type { GateResult } from '../../harness/bench/gate/gate.js';
import { gateJson, gateJunit, gateMarkdown, gateText } from '../../harness/bench/gate/outputs.js';
import { type ChangeStatus, classifyChange, gateExitCode } from '../../harness/bench/gate/verdicts.js';
import { ExitCode } from '../../harness/core/errors.js';
import type { MetricStats } from '../../harness/stats/statistics.js';

const VERDICTS: Verdict[] = ['pass', 'none', 'fail', 'invalid', 'inconclusive'];
const STATUSES: ChangeStatus[] = ['unchanged', 'improvement', 'unclear', 'regression'];

/** The exit code the gate documents: 1 fail or regression; else 3 doubt (problem, invalid, inconclusive); else 0. */
function expectedExit(verdict: Verdict, status: ChangeStatus, problems: number): number {
  if (verdict === 'fail' || status === 'regression') return ExitCode.fail;
  if (problems > 0 || verdict === 'invalid' || verdict === 'inconclusive') return ExitCode.inconclusive;
  return ExitCode.ok;
}

describe('the gate exit code for every verdict kind, change status and problem count', () => {
  const table = VERDICTS.flatMap((v) => STATUSES.flatMap((s) => [0, 1].map((p) => [v, s, p] as const)));
  it.each(table)('verdict %s, change %s, %i problem(s)', (verdict, status, problems) => {
    // The verdict beside a passing one, so the kind alone decides (order in the list must not matter).
    expect(gateExitCode(['pass', verdict], [status, 'unchanged'], problems)).toBe(
      expectedExit(verdict, status, problems),
    );
    expect(gateExitCode([verdict, 'pass'], ['unchanged', status], problems)).toBe(
      expectedExit(verdict, status, problems),
    );
  });

  it('the documented codes: 0 pass, 1 fail, 3 inconclusive', () => {
    expect(gateExitCode(['inconclusive'], [], 0)).toBe(3);
    expect(gateExitCode(['invalid'], [], 0)).toBe(3);
    expect(gateExitCode(['fail'], [], 0)).toBe(1);
    expect(gateExitCode(['fail', 'inconclusive'], [], 2)).toBe(1);
    expect(gateExitCode([], ['regression'], 0)).toBe(1);
    expect(gateExitCode([], [], 0)).toBe(0);
    expect(gateExitCode([], [], 1)).toBe(3);
  });
});

describe('judge: a CI against a threshold', () => {
  const stats = (ci: [number, number] | null, value: number | null = 2): MetricStats => ({
    n: 6,
    value,
    ci,
    confidence: 0.96875,
    method: 'order-statistic',
    halfWidth: null,
    mad: null,
    cv: null,
    outliers: [],
  });
  const e = 1e-9;
  it.each([
    // min = 1.5 against a CI [1.5, 2.5]: at the CI's low end, just inside, just outside.
    [{ min: 1.5 }, [1.5, 2.5], 'pass'],
    [{ min: 1.5 + e }, [1.5, 2.5], 'inconclusive'],
    [{ min: 1.5 - e }, [1.5, 2.5], 'pass'],
    [{ min: 2.5 }, [1.5, 2.5], 'inconclusive'],
    [{ min: 2.5 + e }, [1.5, 2.5], 'fail'],
    [{ min: 2.5 - e }, [1.5, 2.5], 'inconclusive'],
    // max = 2.5 against the same CI: at its high end, just inside, just outside; and at its low end.
    [{ max: 2.5 }, [1.5, 2.5], 'pass'],
    [{ max: 2.5 - e }, [1.5, 2.5], 'inconclusive'],
    [{ max: 2.5 + e }, [1.5, 2.5], 'pass'],
    [{ max: 1.5 }, [1.5, 2.5], 'inconclusive'],
    [{ max: 1.5 - e }, [1.5, 2.5], 'fail'],
    [{ max: 1.5 + e }, [1.5, 2.5], 'inconclusive'],
    // Both bounds.
    [{ min: 1.5, max: 2.5 }, [1.5, 2.5], 'pass'],
    [{ min: 1.5 + e, max: 2.5 - e }, [1.5, 2.5], 'inconclusive'],
    [{}, [1.5, 2.5], 'pass'],
  ] as const)('bounds %j, CI %j: %s', (bounds, ci, verdict) => {
    expect(judge(stats([ci[0], ci[1]]), bounds).verdict).toBe(verdict);
  });

  it('no CI (too few rounds) or no value is inconclusive, never pass', () => {
    expect(judge(stats(null), { min: 1 })).toMatchObject({ verdict: 'inconclusive' });
    expect(judge(stats(null), { min: 1 }).reason).toContain('at least 6');
    expect(judge(stats(null, null), { min: 1 })).toEqual({ verdict: 'inconclusive', reason: 'no usable round' });
  });
});

describe('what each output says for each verdict kind', () => {
  const metric = (verdict: Verdict): MetricAnalysis =>
    ({
      metric: { id: `mps/gemm/slowdown-${verdict}`, better: 'lower', perRound: [] },
      stats: { n: 6, value: 1.5, ci: [1.4, 1.6], confidence: 0.97, method: 'order-statistic' },
      threshold: null,
      verdict,
      reasons: [],
      warnings: [],
      target: null,
      diagnosis: [],
    }) as unknown as MetricAnalysis;
  const result = (verdicts: Verdict[], problems: string[] = [], regression = false): GateResult => {
    const band: Band = {
      source: { kind: 'floor' },
      betweenLog: 0.01,
      betweenSdLog: 0.004,
      withinLog: 0.01,
      halfWidthLog: 0.05,
      caughtLog: 0.06,
    };
    const changes = regression
      ? [
          {
            metricId: 'mps/gemm/slowdown-pass',
            better: 'lower' as const,
            value: 2,
            baselineValue: 1,
            baselineRuns: 1,
            change: 2,
            ci: [1.9, 2.1] as [number, number],
            band,
            status: 'regression' as const,
          },
        ]
      : [];
    return {
      runId: 'r',
      baselineId: regression ? 'b' : null,
      baselineIds: regression ? ['b'] : [],
      setAside: [],
      historyIds: [],
      verdicts: verdicts.map(metric),
      changes,
      mismatches: [],
      problems,
      noiseBand: 0.05,
      exitCode: gateExitCode(
        verdicts,
        changes.map((c) => c.status),
        problems.length,
      ),
    };
  };
  const outcome = (xml: string, verdict: string) => {
    const block = xml.split('<testcase').find((c) => c.includes(`slowdown-${verdict}"`)) ?? '';
    return block.includes('<failure')
      ? 'failure'
      : block.includes('<error')
        ? 'error'
        : block.includes('<skipped')
          ? 'skipped'
          : 'passed';
  };

  it.each([
    ['pass', 'passed', 0, 'pass'],
    ['none', 'passed', 0, 'pass'],
    ['fail', 'failure', 1, 'FAIL'],
    ['invalid', 'error', 3, 'inconclusive'],
    ['inconclusive', 'skipped', 3, 'inconclusive'],
  ] as const)('%s: JUnit %s, exit %i, summary %s', (verdict, junit, exitCode, header) => {
    const r = result([verdict]);
    expect(r.exitCode).toBe(exitCode);
    expect(outcome(gateJunit(r), verdict)).toBe(junit);
    expect(gateMarkdown(r)).toContain(`### gpushare gate: ${header}\n`);
    expect(gateText(r)).toContain(`exit ${exitCode}: `);
  });

  it('a regression is a JUnit failure and exit 1; a run-wide problem a JUnit error and exit 3', () => {
    const regressed = result(['pass'], [], true);
    expect(regressed.exitCode).toBe(1);
    expect(outcome(gateJunit(regressed), 'pass')).toBe('failure');
    expect(gateJunit(regressed)).toContain('type="regression"');
    const problem = result(['pass'], ['run r is interrupted, not complete']);
    expect(problem.exitCode).toBe(3);
    expect(gateJunit(problem)).toMatch(/<testcase classname="gpushare.run" name="r"[^>]*>\s*<error/);
    expect(gateText(problem)).toContain('exit 3: inconclusive or invalid measurements');
  });

  it('every output states the band, where it came from, and the smallest change it catches in 95% of runs', () => {
    // Half-width 0.05 and caughtLog 0.06 on the log scale: ±5.1%, a slowdown ratio caught at +6.2%.
    const regressed = result(['pass'], [], true);
    const text = gateText(regressed).split('\n');
    expect(text[text.findIndex((l) => l.startsWith('mps/gemm/slowdown-pass ')) + 1]?.trim().split(/ {2,}/)).toEqual([
      '+100.0% [1.900, 2.100]',
      '±5.1% (floor)',
      '+6.2%',
      'regression',
    ]);
    expect(gateMarkdown(regressed)).toContain(
      '| +100.0% [1.900, 2.100] | ±5.1% (default floor) | +6.2% | regression |',
    );
    expect(gateJunit(regressed)).toContain('outside its band ±5.1% (default floor), catches +6.2% at 95%');
    const json = JSON.parse(gateJson(regressed)) as { changes: Array<{ band: Record<string, unknown> }> };
    expect(json.changes[0]?.band).toMatchObject({ betweenSd: Math.expm1(0.004), halfWidth: Math.expm1(0.05) });
    expect(json.changes[0]?.band.smallestCaught).toEqual({ power: 0.95, change: Math.expm1(0.06) });
    // A ratio where higher is better is caught falling: −5.8%.
    const speedup = result(['pass'], [], true);
    for (const c of speedup.changes) c.better = 'higher';
    expect(gateMarkdown(speedup)).toContain('| ±5.1% (default floor) | -5.8% | regression |');
    expect(JSON.parse(gateJson(speedup)).changes[0].band.smallestCaught.change).toBeCloseTo(Math.expm1(-0.06), 12);
  });

  it('a change without a band is unclear, whatever its size', () => {
    for (const change of [0.5, 1, 2]) expect(classifyChange(change, 'lower', null)).toBe('unclear');
  });
});
