/**
 * The summary bench ends with (and gpushare show prints) reads on an 80-column terminal: ratios
 * grouped under their comparison, the better direction of each, how each comparison stopped said
 * once, and a plain-English verdict that agrees with bench's exit code.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { wrapLine } from '../../harness/core/wrap.js';
import { DEFAULT_RUN, fixtureRunsDir, H200_RUN, runCli, tempDir } from '../helpers.js';

// bench's runs (a run.json): the mix run among the fixtures has a summary of its own.
const FIXTURE_RUNS = await fixtureRunsDir();
const runs = readdirSync(FIXTURE_RUNS).filter((name) => existsSync(path.join(FIXTURE_RUNS, name, 'run.json')));

describe('the console summary', () => {
  it.each(runs)('of %s fits 80 columns, every ratio with its better direction', async (name) => {
    const result = await runCli(['show', path.join(FIXTURE_RUNS, name), '--all']);
    const lines = result.stdout.split('\n');
    // Only a single word longer than a line (a path) may pass the edge, and the last line, the run's
    // directory whole for a reader to copy (its length is the checkout's, not the summary's).
    expect(lines.filter((l) => [...l].length > 80 && l.trim().includes(' ') && !l.startsWith('results: '))).toEqual([]);
    const rows = lines.filter((l) => /^ {2}\S+ +(\d+\.\d{3}×|n\/a) /.test(l));
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row).toMatch(/ (higher|lower)( |$)/);
    expect(result.stdout).not.toContain('stopped:');
    expect(result.stdout).not.toMatch(/^\* /m);
    expect(lines.filter((l) => l.startsWith('verdict: '))).toHaveLength(1);
  });

  it('says PASS, FAIL or INCONCLUSIVE as bench would exit, and which mode measured cheaper', async () => {
    const pass = await runCli(['show', DEFAULT_RUN]);
    expect(pass.stdout).toContain('verdict: PASS (exit 0): all 2 graded ratios passed their thresholds');
    expect(pass.stdout).toMatch(/^MPS measured cheaper here: 2 infer clients each slowed 1\.09× under MPS and 9\.02×/m);
    const strict = path.join(tempDir(), 'strict.yaml');
    writeFileSync(strict, 'thresholds:\n  "timeslice/gemm/slowdown": { max: 1.5 }\n');
    const fail = await runCli(['show', DEFAULT_RUN, '--config', strict]);
    expect(fail.stdout).toContain('verdict: FAIL (exit 1): 1 of 1 graded ratios failed its threshold');
    expect(fail.stdout).toMatch(/^- timeslice\/gemm\/slowdown failed its threshold ≤ 1\.5/m);
    // The H200 runs of format 1 have 5 rounds: no 95% CI, so the graded ratios are inconclusive.
    const inconclusive = await runCli(['show', H200_RUN]);
    expect(inconclusive.stdout).toContain('verdict: INCONCLUSIVE (exit 3): 2 problems');
  });

  it('folds a long line at spaces, never inside a word', () => {
    const line = `mig: skipped: ${'word '.repeat(30)}/a/path/${'x'.repeat(90)}`;
    const folded = wrapLine(line);
    expect(folded.join(' ').replace(/ {2,}/g, ' ')).toBe(line);
    for (const l of folded.slice(0, -1)) expect([...l].length).toBeLessThanOrEqual(80);
    expect(folded.slice(1).every((l) => l.startsWith('  '))).toBe(true);
    expect(folded.at(-1)).toBe(`  /a/path/${'x'.repeat(90)}`);
  });
});
