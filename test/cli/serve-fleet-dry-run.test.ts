/** bench --serve --fleet --dry-run (#49): the fleet's pre-check against the simulated H200 and this host's cores. */
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { joined, runCli, tempDir } from '../helpers.js';

describe('bench --serve --fleet --dry-run', () => {
  it('lists the pre-check with its figures: memory, MPS clients and cores, each with its figures', async () => {
    const file = path.join(tempDir('gpushare-fleet-'), 'fleet.yaml');
    writeFileSync(
      file,
      "traffic: {rate_per_s: 10, popularity: {law: zipf, s: 1}}\nservers:\n  - {model: m, command: 'x --port {port}', mem_fraction: 0.01, count: 40}\n",
    );
    const result = await runCli(['bench', '--serve', '--fleet', file, '--load-workers', '2', '--dry-run']);
    expect(result.exitCode, result.stderr).toBe(0);
    // The fleet's modes, not the copies' groups (×1, ×2, ×4) of a plain server run.
    expect(result.stdout).toContain('gpushare bench --serve --fleet --dry-run');
    expect(result.stdout).not.toMatch(/×[124]:/);
    const cores = availableParallelism();
    // The simulated GPU is the recorded H200: 143771 MiB.
    expect(joined(result.stdout)).toContain(
      joined(
        [
          `fleet ${file}: 40 servers of 1 kind`,
          'pre-check (a mode a check rules out is skipped, with these figures):',
          '  fits (timeslice, mps, mps-threads): memory: Σ mem_fraction 0.400 × 143771 MiB = 57508 MiB, plus 40 CUDA contexts × 768 MiB = 30720 MiB: 88228 of 143771 MiB (61.4%), fits',
          '  fits (mps, mps-threads): MPS clients: 40 servers within the 48 clients an MPS server accepts per GPU',
          `  ${42 <= cores ? 'fits' : 'warning'} (timeslice, mps, mps-threads): host CPUs: 40 servers + 2 load generator workers = 42 processes on ${cores} cores`,
        ].join('\n'),
      ),
    );
    // 10 req/s over 40 servers, Zipf: the coldest gets a few requests in 6 windows of 5 s; the line names a --window-s.
    expect(joined(result.stdout)).toMatch(
      /requests per server in a mode's 6 windows of 5 s: \d+ \(m-\d+\) to \d+ \(m-1\)/,
    );
    expect(joined(result.stdout)).toMatch(/40 of 40 servers get fewer: .*--window-s \d+ gives each of them enough/);
    // The load: the ceiling, then the one kind's baseline and the three modes, each a warm-up and 6 windows of 5 s.
    expect(joined(result.stdout)).toMatch(
      /load: at least \d+ s: the generator's ceiling \(22 s\), then 4 arms \(1 baseline, 3 modes\)/,
    );
  });

  it('under capacity, says the search sizes the fleet: the pre-check skips no mode there', async () => {
    const file = path.join(tempDir('gpushare-fleet-'), 'fleet.yaml');
    writeFileSync(
      file,
      "servers:\n  - {model: m, command: 'x --port {port}', mem_fraction: 0.01, count: 4, rate_per_s: 1}\n",
    );
    const result = await runCli(['capacity', '--serve', '--fleet', file, '--dry-run']);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(joined(result.stdout)).toContain("per mode a search over the fleet's size");
    expect(joined(result.stdout)).toContain("pre-check of the file's fleet (the search tries sizes up to its top");
    expect(result.stdout).not.toContain('a mode a check rules out is skipped');
    // A search's sizes scale the rates: no count of the file's size is claimed.
    expect(result.stdout).not.toContain('requests per server');
    expect(joined(result.stdout)).toMatch(
      /load: at most \d+ s: the generator's ceiling \(22 s\), then per mode at most 24 steps/,
    );
  });
});
