/**
 * `gpushare fleet history`, in process, over committed runs of the evidence store: the first 12
 * default-suite runs of 2026-11-24 of one harness generation (release lead 10 ms, gpushare 0.1.0,
 * protocol loop 1), on 8 H100s, some read as stored runs where they lie and some as run directories,
 * with a 5% slowdown of one headline's shared arm planted from a known run on; and its exit codes.
 */
import { copyFileSync, cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Resvg } from '@resvg/resvg-js';
import { XMLValidator } from 'fast-xml-parser';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../harness/bench/record/schema.js';
import type { HistoryAnalysis } from '../../harness/fleet/history/analyze.js';
import { openRun, STORE_DIR, STORED_RUN_SUFFIX } from '../../harness/record/evidence.js';
import { SIMULATED_TEXT } from '../../harness/record/simulated.js';
import { expectOneLineError, ROOT, runCli, tempDir, unfolded } from '../helpers.js';

type HistoryJson = HistoryAnalysis & { exitCode: number };

/** The first 12 runs of the default suite made on 2026-11-24 at release lead 10 ms, in order of creation. */
const SERIES = [
  'ed51c9',
  '6fbe14',
  'eb00d1',
  '5c93e0',
  '348b58',
  '9f9de4',
  'bf4273',
  '6277d7',
  'c7329b',
  'c9a2f1',
  'bc283a',
  'd64801',
].map((tail) => `2026-11-24-h100-80gb-hbm3-${tail}`);
/** The headline the step is planted on: its floor (±3%) is under 5%, and its runs differ by about 0.7%. */
const PLANTED = 'timeslice/spin/slowdown';
/** The first run of the step, 0-based: run 7 of 12. */
const STEP_AT = 6;

const stored = (id: string) => path.join(ROOT, STORE_DIR, `${id}${STORED_RUN_SUFFIX}`);

/**
 * `comparisonId`'s contended clients 5% slower, exactly: each one's window 1.05 × as long for the same
 * work, so its throughput (iterations ÷ window) is 1/1.05 of what it was, and the slowdown 1.05 ×.
 */
function slowShared(run: Run, comparisonId: string, factor = 1.05): void {
  for (const trial of run.trials) {
    if (trial.status !== 'ok' || trial.comparisonId !== comparisonId || trial.arm !== 'contended') continue;
    for (const c of trial.clients) c.windowEndUs = c.windowStartUs + (c.windowEndUs - c.windowStartUs) * factor;
  }
}

/** Copies stored run `id` into `dir` as a run directory named `name`, its run.json edited. */
async function placeEdited(dir: string, id: string, name: string, edit: (run: Run) => void): Promise<void> {
  const to = path.join(dir, name);
  cpSync(await openRun(stored(id)), to, { recursive: true });
  const file = path.join(to, 'run.json');
  const run = JSON.parse(readFileSync(file, 'utf8')) as Run;
  edit(run);
  writeFileSync(file, JSON.stringify(run));
}

/**
 * A history of the 12 runs: runs before `from` as stored runs (their .tar.br copied), the rest as run
 * directories edited by `edit`, named so that the walk meets them newest first (the command orders them).
 */
async function history(from: number, edit: (run: Run) => void): Promise<string> {
  const dir = tempDir('gpushare-history-');
  for (const [i, id] of SERIES.entries()) {
    if (i < from) copyFileSync(stored(id), path.join(dir, `${id}${STORED_RUN_SUFFIX}`));
    else await placeEdited(dir, id, `run-${String(99 - i)}`, edit);
  }
  return dir;
}

/** The console text with each headline line (indented 2) made whole again: its folds are indented 4. */
const unfoldedHeadlines = (text: string) => text.replace(/\n {4}(?=\S)/g, ' ');

const json = (stdout: string) => JSON.parse(stdout) as HistoryJson;
const headline = (h: HistoryJson, metricId: string, group = 0) =>
  h.groups[group]?.headlines.find((x) => x.metricId === metricId);

describe('gpushare fleet history over 12 committed runs with a 5% step planted on one headline at run 7', () => {
  const out = tempDir('gpushare-history-out-');
  let dir: string;
  let text: { exitCode: number; stdout: string };
  let result: HistoryJson;

  beforeAll(async () => {
    dir = await history(STEP_AT, (run) => slowShared(run, 'timeslice/spin'));
    text = await runCli(['fleet', 'history', dir, '--out', out, '--name', 'test']);
    result = json((await runCli(['fleet', 'history', dir, '--json'])).stdout);
  });

  it('exits 1, naming run 7 as the first changed run of that headline, about 5% worse, p < 0.001', () => {
    expect(text.exitCode).toBe(1);
    expect(result.exitCode).toBe(1);
    expect(result.groups).toHaveLength(1);
    const h = headline(result, PLANTED);
    expect(h?.changes).toHaveLength(1);
    const change = h?.changes[0];
    expect(change).toMatchObject({
      run: STEP_AT + 1,
      runId: SERIES[STEP_AT],
      before: STEP_AT,
      after: SERIES.length - STEP_AT,
      direction: 'worse',
    });
    expect(change?.ratio).toBeGreaterThan(1.035);
    expect(change?.ratio).toBeLessThan(1.065);
    expect(change?.ci[0]).toBeLessThanOrEqual(change?.ratio as number);
    expect(change?.ci[1]).toBeGreaterThanOrEqual(change?.ratio as number);
    expect(change?.p).toBeLessThan(0.001);
    expect(unfoldedHeadlines(text.stdout)).toMatch(
      new RegExp(
        `^ {2}timeslice/spin/slowdown ↓ 12 runs: changed at run 7 of 12, ${SERIES[STEP_AT]}: median after ÷ before ×1\\.0\\d{2} \\[95% CI 1\\.0\\d{2}, 1\\.0\\d{2}\\] \\(\\+[3-6]\\.\\d%, worse\\), Welch p \\d\\.\\de-\\d+, 6 runs before, 6 after$`,
        'm',
      ),
    );
    expect(text.stdout).toMatch(/^exit 1: 1 change\(s\) in 1 series$/m);
  });

  it('orders the runs by creation, whatever the walk met first, and tests every headline of the 12', () => {
    expect(result.groups[0]?.runs.map((r) => r.id)).toEqual(SERIES);
    expect(result.groups[0]?.runs.map((r) => r.path)).toEqual(
      SERIES.map((id, i) => (i < STEP_AT ? id : `run-${99 - i}`)),
    );
    const headlines = result.groups[0]?.headlines ?? [];
    expect(headlines).toHaveLength(8);
    expect(headlines.every((h) => h.tested && h.points.length === 12)).toBe(true);
    expect(result.testedSeries).toBe(8);
  });

  it('writes the markdown with the change and a chart of the group, a valid SVG with the change marked', () => {
    const md = readFileSync(path.join(out, 'history-test.md'), 'utf8');
    expect(md).toMatch(/^\*\*Exit 1: 1 change\(s\) in 1 series\.\*\*$/m);
    expect(md).toMatch(
      new RegExp(
        `^\\| g1 \\| \`timeslice/spin/slowdown\` ↓ \\| 7 of 12: \`${SERIES[STEP_AT]}\` \\| ×1\\.0\\d{2} \\[1\\.0\\d{2}, 1\\.0\\d{2}\\] \\(\\+\\d\\.\\d%, worse\\) \\| \\d\\.\\de-\\d+ \\| 6 / 6 \\|$`,
        'm',
      ),
    );
    const link = /!\[g1\]\(([^)]+)\)/.exec(md)?.[1];
    expect(link).toBe('history-test/g1.svg');
    const svg = readFileSync(path.join(out, link as string), 'utf8');
    expect(XMLValidator.validate(svg)).toBe(true);
    expect(new Resvg(svg).render().width).toBeGreaterThan(300);
    expect(svg).toContain('#e45756'); // the change's mark
  });
});

describe('gpushare fleet history, other histories and exit codes', () => {
  it('the same 12 runs without the step: no change on that headline, and none in the series at all (exit 0)', async () => {
    const dir = await history(STEP_AT, () => undefined);
    const result = await runCli(['fleet', 'history', dir, '--json']);
    const h = json(result.stdout);
    expect(headline(h, PLANTED)?.changes).toEqual([]);
    expect(h.changes).toBe(0);
    expect(result.exitCode).toBe(0);
  });

  it.each([
    ['release lead', (run: Run) => void (run.config.releaseLeadMs = 30)],
    ['gpushare version', (run: Run) => void (run.tool.version = '0.0.0')],
  ])('a new %s from run 7 on starts a group of its own, not a change', async (_what, generation) => {
    const dir = await history(STEP_AT, (run) => {
      generation(run);
      slowShared(run, 'timeslice/spin');
    });
    const result = await runCli(['fleet', 'history', dir, '--json']);
    const h = json(result.stdout);
    expect(h.groups.map((g) => g.runs.map((r) => r.id))).toEqual([SERIES.slice(0, STEP_AT), SERIES.slice(STEP_AT)]);
    expect(h.changes).toBe(0);
    expect(result.exitCode).toBe(0);
  });

  it('a 2% step on a headline whose floor is 3% is not reported; --p 0.000000001 drops the 5% step', async () => {
    const small = await history(STEP_AT, (run) => slowShared(run, 'timeslice/spin', 1.02));
    const h = json((await runCli(['fleet', 'history', small, '--json'])).stdout);
    expect(headline(h, PLANTED)?.changes).toEqual([]);
    // Significant, but under the floor: removed for its size.
    expect(headline(h, PLANTED)?.removed).toMatchObject([{ run: STEP_AT + 1, failed: 'floor' }]);
    const planted = await history(STEP_AT, (run) => slowShared(run, 'timeslice/spin'));
    const strict = await runCli(['fleet', 'history', planted, '--json', '--p', '0.000000001']);
    expect(json(strict.stdout).level).toBe(1e-9);
    expect(headline(json(strict.stdout), PLANTED)?.changes).toEqual([]);
    expect(strict.exitCode).toBe(0);
  });

  it('leaves an unfinished run out of every series, and a ratio a run marks invalid out of its own', async () => {
    const dir = await history(STEP_AT, (run) => {
      if (run.id === SERIES[STEP_AT]) run.status = 'interrupted';
      if (run.id === SERIES[STEP_AT + 1]) run.contamination = ['pid 4242 python3 held 1024 MiB'];
    });
    const h = json((await runCli(['fleet', 'history', dir, '--json'])).stdout);
    expect(h.groups.map((g) => g.runs.length)).toEqual([11]);
    expect(h.notCompared).toEqual([
      {
        path: `run-${99 - STEP_AT}`,
        reason: 'the run is interrupted, not complete: not a point of any series',
        fails: false,
      },
    ]);
    for (const x of h.groups[0]?.headlines ?? []) {
      expect(x.points).toHaveLength(10);
      expect(x.leftOut).toEqual([
        { run: STEP_AT + 1, runId: SERIES[STEP_AT + 1], reason: expect.stringMatching(/^invalid: /) },
      ]);
    }
  });

  it('exits 3 when no series has the 6 runs a test needs', async () => {
    const dir = tempDir('gpushare-history-');
    for (const id of SERIES.slice(0, 5)) copyFileSync(stored(id), path.join(dir, `${id}${STORED_RUN_SUFFIX}`));
    const result = await runCli(['fleet', 'history', dir, '--out', tempDir()]);
    expect(result.exitCode).toBe(3);
    expect(unfolded(result.stdout)).toMatch(
      /^g1 NVIDIA H100 80GB HBM3, 5 run\(s\), .+ UTC: too few to test \(6 needed\)$/m,
    );
    expect(result.stdout).toMatch(/^exit 3: no series had the 6 runs a test needs$/m);
  });

  it.each([
    ['0', '--p 0: needs a level between 0 and 1, both excluded (e.g. --p 0.001)'],
    ['1', '--p 1: needs a level between 0 and 1, both excluded (e.g. --p 0.001)'],
    ['2', '--p 2: needs a number from 0 to 1'],
    ['1e-3', '--p 1e-3: needs a number from 0 to 1'],
  ])('exits 2 with one line for --p %s', async (p, message) => {
    const result = await runCli(['fleet', 'history', tempDir(), '--p', p]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, message);
  });

  it('exits 2 with one line for a directory without bench runs, or no directory', async () => {
    const empty = tempDir('gpushare-history-empty-');
    mkdirSync(path.join(empty, 'cap'));
    writeFileSync(path.join(empty, 'cap', 'capacity.json'), '{}');
    const result = await runCli(['fleet', 'history', empty]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(
      result.stderr,
      `no bench runs under ${empty} (it holds cap, which are not bench runs): fleet history expects run directories made by gpushare bench`,
    );
    const missing = await runCli(['fleet', 'history', path.join(empty, 'nothing-here')]);
    expect(missing.exitCode).toBe(2);
    expectOneLineError(missing.stderr, 'is not a directory');
  });

  it('refuses a simulated run beside real ones (exit 2)', async () => {
    const dir = tempDir('gpushare-history-');
    for (const id of SERIES.slice(0, 3)) copyFileSync(stored(id), path.join(dir, `${id}${STORED_RUN_SUFFIX}`));
    await placeEdited(dir, SERIES[3] as string, 'simulated', (run) => void (run.fingerprint.simulated = true));
    const result = await runCli(['fleet', 'history', dir]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, 'cannot set simulated and real runs in one history: run');
  });

  it('says SIMULATED first, in the console and the report, over simulated runs alone', async () => {
    const dir = tempDir('gpushare-history-');
    for (const id of SERIES.slice(0, 6))
      await placeEdited(dir, id, id, (run) => void (run.fingerprint.simulated = true));
    const out = tempDir();
    const result = await runCli(['fleet', 'history', dir, '--out', out]);
    expect(result.exitCode).toBe(0);
    expect(unfolded(result.stdout).split('\n')[0]).toBe(SIMULATED_TEXT);
    const md = readFileSync(path.join(out, `history-${path.basename(dir)}.md`), 'utf8');
    expect(md.split('\n')[2]).toBe(`**${SIMULATED_TEXT}.**`);
  });
});

describe('gpushare fleet history over a damaged stored run', () => {
  it('lists it as unread and exits 3, where fleet report fails the fleet; neither stops at it', async () => {
    const dir = tempDir('gpushare-history-');
    for (const id of SERIES) copyFileSync(stored(id), path.join(dir, `${id}${STORED_RUN_SUFFIX}`));
    const damaged = path.join(dir, `2026-11-24-h100-80gb-hbm3-000000${STORED_RUN_SUFFIX}`);
    writeFileSync(damaged, readFileSync(stored(SERIES[0] as string)).subarray(0, 400));
    const history = await runCli(['fleet', 'history', dir, '--json', '--out', tempDir()]);
    expect(history.exitCode).toBe(3);
    const h = json(history.stdout);
    expect(h.notCompared).toEqual([
      expect.objectContaining({
        fails: true,
        reason: expect.stringContaining('it is damaged; take it again from git'),
      }),
    ]);
    expect(h.groups.map((g) => g.runs.length)).toEqual([SERIES.length]);
    const report = await runCli(['fleet', 'report', dir, '--json', '--out', tempDir()]);
    expect(report.exitCode).toBe(1);
  });
});
