/** mix's console summary: a header names its columns before the rows. */
import { describe, expect, it } from 'vitest';
import { mixCells } from '../../harness/mix/analysis.js';
import { loadMixRun } from '../../harness/mix/record.js';
import { mixSummary } from '../../harness/mix/report.js';
import { H100_MIX_RUN } from '../helpers.js';

describe("mix's console summary", () => {
  it('starts with a header over the load, aggressor, mode and cell columns', async () => {
    const run = await loadMixRun(H100_MIX_RUN);
    if (run === null) throw new Error(`no mix run in ${H100_MIX_RUN}`);
    const lines = mixSummary(run, mixCells(run)).split('\n');
    expect(lines[0]).toMatch(/^load aggressor +mode +victim p99 ÷ alone \[95% CI\] \(n\); aggressor's kept$/);
    // The header's columns start where the rows' do.
    const row = lines.find((l) => /^ +\d+% /.test(l)) as string;
    expect(row.indexOf(row.trim().split(/ +/)[1] as string)).toBe((lines[0] as string).indexOf('aggressor'));
  });
});
