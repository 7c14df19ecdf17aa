/**
 * "Which mode" where the intervals overlap: the committed H100 run with its MPS arm's contended work
 * scaled to time-slicing's slowdown (2.70×), so the two 95% intervals overlap. The summary, the
 * report, plan and artifacts each say "measured the same here" and what then decided.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { editedCopy, H100_MIX_RUN, H100_RUN, runCli, tempDir, unfolded } from '../helpers.js';

/** MPS's contended iterations scaled by 1.738 / 2.701: its slowdown becomes time-slicing's, its interval overlaps. */
const overlapping = () =>
  editedCopy(H100_RUN, (run) => {
    for (const t of run.trials)
      if (t.status === 'ok' && t.comparisonId === 'mps/infer' && t.arm === 'contended')
        for (const c of t.clients) c.iterations = Math.round((c.iterations * 1.738) / 2.701);
  });
const unwrapped = (text: string) => text.replaceAll('\n  ', ' ');
const TIE =
  'Time-slicing and MPS measured the same here: 2 infer clients each slowed 2.70× [2.651, 2.725] time-sliced and 2.70× [2.664, 2.733] under MPS (the 95% intervals overlap). What then decided: isolation: time-slicing isolates faults (each client its own process and context); a fatal fault in one MPS client ends its neighbours, so time-slicing; memory: the same, one CUDA context per client.';

describe('which mode, where the intervals overlap', () => {
  it('the summary says "measured the same here" and what decided, not "MPS measured cheaper"', async () => {
    const shown = await runCli(['show', overlapping()]);
    expect(shown.exitCode).toBe(0);
    expect(unwrapped(shown.stdout)).toContain(`\n${TIE}\n`);
    expect(shown.stdout).not.toContain('measured cheaper');
    // The same run unedited: the intervals separate, and MPS measured cheaper.
    const separated = await runCli(['show', H100_RUN]);
    expect(unwrapped(separated.stdout)).toContain(
      '\nMPS measured cheaper here: 2 infer clients each slowed 1.74× under MPS and 2.70× time-sliced\n',
    );
  });

  it('the report\'s "Which mode" says the same', async () => {
    const out = tempDir();
    const result = await runCli(['report', overlapping(), '--out', out]);
    expect(result.exitCode, result.stderr).toBe(0);
    const md = readFileSync(path.join(out, `${path.basename(H100_RUN)}.md`), 'utf8');
    const section = md.slice(md.indexOf('## Which mode'), md.indexOf('## Environment'));
    expect(section).toContain(
      'Measured with 2 `infer` clients (the small-inference probe): time-slicing and MPS **measured the same here**: their 95% intervals of the slowdown overlap (2.70× [2.651, 2.725] time-sliced and 2.70× [2.664, 2.733] under MPS). What then decided: isolation:',
    );
    expect(section).not.toContain('shared this GPU better');
  });

  it('plan recommends by isolation among the tied, and says so', async () => {
    // An A10 has no MIG table: the choice is between the modes the run measured.
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
      'A10',
      '--gpu-mem-gib',
      '24',
    ];
    const result = await runCli([...args, '--run', overlapping()]);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(unfolded(result.stdout)).toContain(
      `recommendation: time-slicing — fits; time-slicing and MPS measured the same here: 2 infer clients each slowed 2.70× [2.651, 2.725] time-sliced and 2.70× [2.664, 2.733] under MPS (the 95% intervals overlap). What then decided: isolation:`,
    );
    expect(unfolded(result.stdout)).toContain(
      'runner-up: MPS — fits, and measured the same as time-slicing here (the 95% intervals of the slowdown overlap): 2.70× [2.664, 2.733] at 2 clients; isolation put time-slicing first',
    );
    // Unedited, MPS's interval lies below: it is recommended on the measurement.
    const separated = await runCli([...args, '--run', H100_RUN]);
    expect(unfolded(separated.stdout)).toContain(
      "recommendation: MPS — fits, and measured the lowest per-model slowdown of the options that fit, its 95% interval below every other's: 1.74× [1.713, 1.757] at 2 clients",
    );
  });

  it("artifacts' ClusterPolicy default is time-slicing, with why", async () => {
    const out = path.join(tempDir(), 'artifacts');
    const result = await runCli(['artifacts', '--run', overlapping(), '--out', out]);
    expect(result.exitCode, result.stderr).toBe(0);
    const policy = parse(readFileSync(path.join(out, 'gpushare-clusterpolicy-patch.yaml'), 'utf8'));
    expect(policy.spec.devicePlugin.config.default).toBe('timeslicing-4');
    expect(readFileSync(path.join(out, 'README.md'), 'utf8')).toContain(
      `The ClusterPolicy default is \`timeslicing-4\`. ${TIE}`,
    );
    const separated = path.join(tempDir(), 'artifacts');
    await runCli(['artifacts', '--run', H100_RUN, '--out', separated]);
    expect(
      parse(readFileSync(path.join(separated, 'gpushare-clusterpolicy-patch.yaml'), 'utf8')).spec.devicePlugin.config
        .default,
    ).toBe('mps-4');
  });
});

describe("mix's protection, where the throughput kept measured the same", () => {
  it('says so in the protection table, and takes the least restrictive of the settings that hold', async () => {
    const out = tempDir();
    const result = await runCli(['report', H100_MIX_RUN, '--out', out]);
    expect(result.exitCode, result.stderr).toBe(0);
    const md = readFileSync(path.join(out, `${path.basename(H100_MIX_RUN)}.md`), 'utf8');
    // Beside training at 25% load, 50% kept 0.98 [0.87, 1.08] and 25% kept 0.72 [0.56, 0.88]: they overlap.
    expect(md).toContain(
      "| train | 25% | 2.854 | 50% | 2.149 | 0.98 [0.87, 1.08] | p99 ≤ 2.85 ms holds at 95% over 1784 requests; 50%, 25% measured the same here (the aggressor's throughput kept: the intervals overlap), and each holds the target: the least restrictive is taken, since a cap also limits the aggressor when it runs alone |",
    );
    // Beside memory bandwidth only 25% held: nothing to tie.
    expect(md).toMatch(
      /\| bandwidth \| 25% \| 2\.854 \| 25% \| [^|]+\| [^|]+\| p99 ≤ 2\.85 ms holds at 95% over \d+ requests \|/,
    );
  });
});
