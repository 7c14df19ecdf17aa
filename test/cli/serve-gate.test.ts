/**
 * `gpushare gate` on a server run: each group's throughput and TTFT p99 ratios against the dedicated
 * copy, compared with a baseline server run, on a committed run and edited copies of it (in process).
 */
import { describe, expect, it } from 'vitest';
import type { ServeRun } from '../../harness/serve/record.js';
import { editedCopy, expectOneLineError, runCli, SERVE_CAPACITY_RUN, SERVE_RUN } from '../helpers.js';

/** A copy of the committed server run with its serve.json rewritten by `edit`. */
const editedServeCopy = (edit: (run: ServeRun) => void) => editedCopy<ServeRun>(SERVE_RUN, edit, 'serve.json');

const group = (run: ServeRun, mode: string, copies: number) => {
  const g = run.groups.find((x) => x.mode === mode && x.copies === copies);
  if (!g) throw new Error(`no group ${mode} x${copies} in the fixture`);
  return g;
};

describe('gpushare gate <server run> --baseline <server run>', () => {
  it('a run against itself: every ratio of every group unchanged, exit 0', async () => {
    const r = await runCli(['gate', SERVE_RUN, '--baseline', SERVE_RUN, '--json']);
    expect(r.exitCode).toBe(0);
    const json = JSON.parse(r.stdout) as { changes: Array<{ group: string; ratio: string; status: string }> };
    // 3 modes × 3 copy counts × 2 ratios, each measured in 6 rounds: each has a band.
    expect(json.changes).toHaveLength(18);
    expect(new Set(json.changes.map((c) => c.status))).toEqual(new Set(['unchanged']));
    expect(json.changes.map((c) => `${c.group} ${c.ratio}`)).toContain('mps ×4 throughput');
  });

  it("a group whose shared copies lost 40% of their tokens/s is a regression of that group's throughput: exit 1", async () => {
    const worse = editedServeCopy((run) => {
      for (const r of group(run, 'mps', 4).rounds) r.shared.outputTokensPerS *= 0.6;
    });
    const r = await runCli(['gate', worse, '--baseline', SERVE_RUN]);
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toMatch(/mps ×4 +throughput .* regression/);
    expect(r.stdout).toMatch(/mps ×2 +throughput .* unchanged/);
    expect(r.stdout).toContain('exit 1: regression');
  });

  it('a group the baseline measured and this run did not is a problem: exit 3, naming it', async () => {
    const partial = editedServeCopy((run) => {
      Object.assign(group(run, 'timeslice', 2), { status: 'failed', reason: 'the copies did not start' });
    });
    const r = await runCli(['gate', partial, '--baseline', SERVE_RUN]);
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toContain('problem: timeslice ×2: measured in the baseline, failed in this run');
  });

  it('runs measured at other settings are refused in one line, and compared with --allow-mismatch', async () => {
    const other = editedServeCopy((run) => {
      run.settings.concurrency = 16;
    });
    const refused = await runCli(['gate', other, '--baseline', SERVE_RUN]);
    expect(refused.exitCode).toBe(2);
    expectOneLineError(refused.stderr, 'requests resident per copy: 8 before vs 16 now');
    const allowed = await runCli(['gate', other, '--baseline', SERVE_RUN, '--allow-mismatch']);
    expect(allowed.exitCode).toBe(0);
    expect(allowed.stdout).toContain('measured differently: requests resident per copy: 8 before vs 16 now');
  });

  it.each([
    [['gate', SERVE_RUN], 'give --baseline <server run>'],
    [['gate', SERVE_RUN, '--baseline', SERVE_RUN, '--history', SERVE_RUN], '--history is for bench runs'],
    [['gate', SERVE_CAPACITY_RUN, '--baseline', SERVE_RUN], 'is a capacity --serve run'],
  ])('%j is refused in one line, exit 2', async (args, text) => {
    const r = await runCli(args);
    expect(r.exitCode).toBe(2);
    expectOneLineError(r.stderr, text);
  });
});
