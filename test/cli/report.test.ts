/**
 * gpushare report and show on real runs (fixture copies of committed ones), in process. That every
 * committed report regenerates byte for byte is test/e2e/committed-reports.test.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Resvg } from '@resvg/resvg-js';
import { parse as parseCsv } from 'csv-parse/sync';
import { XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RUN, expectOneLineError, H200_RUN, H200_STREAMS_RUN, runCli, tempDir } from '../helpers.js';

const real = DEFAULT_RUN;
const cli = (args: string[]) => runCli(args);

describe('gpushare report (markdown)', () => {
  it('matches the snapshot for a committed real run, with its charts beside it', async () => {
    const out = tempDir();
    const result = await cli(['report', real, '--out', out]);
    expect(result.exitCode).toBe(0);
    const id = path.basename(real);
    const md = readFileSync(path.join(out, `${id}.md`), 'utf8').replace(/gpushare \d+\.\d+\.\d+/, 'gpushare <version>');
    await expect(md).toMatchFileSnapshot(`__snapshots__/report-${id}.md`);
    expect(md.indexOf('## Verdicts')).toBeLessThan(md.indexOf('## Environment'));
    for (const link of md.matchAll(/!\[[^\]]*\]\(([^)]+)\)/g))
      expect(readdirSync(path.join(out, id))).toContain(path.basename(link[1] as string));
  });

  // Runs of each shape: schema 1 with every mode, the streams mode alone, schema 2. Every committed
  // run's charts are checked in test/e2e/committed-reports.test.ts.
  it('every chart of runs of each shape is valid XML without scripts and renders to PNG', async () => {
    const out = tempDir();
    const runs = [H200_RUN, H200_STREAMS_RUN, DEFAULT_RUN];
    for (const run of runs) expect((await cli(['report', run, '--out', out])).exitCode).toBe(0);
    const svgs = runs.flatMap((run) =>
      readdirSync(path.join(out, path.basename(run))).map((f) => path.join(out, path.basename(run), f)),
    );
    expect(svgs.length).toBeGreaterThanOrEqual(runs.length * 3);
    for (const file of svgs) {
      const svg = readFileSync(file, 'utf8');
      expect([file, XMLValidator.validate(svg)]).toEqual([file, true]);
      expect(svg).not.toMatch(/<script|javascript:/i);
      const png = new Resvg(svg).render();
      expect(png.width).toBeGreaterThan(300);
      expect(png.asPng().length).toBeGreaterThan(1000);
    }
  });

  it('compares two runs side by side with each change and its CI', async () => {
    const out = tempDir();
    const result = await cli(['report', H200_RUN, H200_STREAMS_RUN, '--out', out]);
    expect(result.exitCode).toBe(0);
    const md = readFileSync(result.stdout.trim(), 'utf8');
    expect(md).toMatch(
      /^\| `streams\/spin\/speedup-k2` \| 1\.99\d \| 1\.99\d \| [-+]0\.\d% \| \[0\.99\d, 1\.00\d\] \| ±\d+\.\d% \| unchanged \|$/m,
    );
  });
});

describe('gpushare report --format csv and json share their columns', () => {
  it('CSV header = the keys of each JSON metric (plus perRound and roundIndices)', async () => {
    const csv = await cli(['report', real, '--format', 'csv']);
    const json = await cli(['report', real, '--json']);
    const rows = parseCsv(csv.stdout, { columns: true }) as Array<Record<string, string>>;
    const metrics = (JSON.parse(json.stdout) as { metrics: Array<Record<string, unknown>> }).metrics;
    expect(rows).toHaveLength(metrics.length);
    expect([...Object.keys(rows[0] ?? {}), 'perRound', 'roundIndices']).toEqual(Object.keys(metrics[0] ?? {}));
    const gemm = rows.find((r) => r.metric === 'timeslice/gemm/slowdown');
    expect(gemm).toMatchObject({ verdict: 'pass', threshold: '1.2–3.5', headline: 'true' });
  });
});

describe('gpushare show', () => {
  it('prints the headline summary of a saved run, every ratio with --all, and writes nothing', async () => {
    const cwd = tempDir();
    const show = (args: string[]) => runCli(['show', ...args], {}, { cwd });
    const run = await show([DEFAULT_RUN]);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(
      /^timeslice\/gemm \(8 rounds, time budget spent\)\n {2}slowdown +2\.074× +\[2\.031, 2\.126\] +2\.29% {2}lower {3}pass \(1\.2–3\.5\)$/m,
    );
    expect(run.stdout).toContain('more ratios in the report and in gpushare show --all');
    const all = await show([DEFAULT_RUN, '--all']);
    expect(all.stdout).toMatch(/^ {2}fairness +[\d.]+× .* lower +none$/m);
    // --json is what report --format json prints.
    const json = JSON.parse(String((await show([DEFAULT_RUN, '--json'])).stdout)) as unknown;
    const report = JSON.parse(String((await cli(['report', DEFAULT_RUN, '--json'])).stdout)) as unknown;
    expect(json).toEqual(report);
    expect(readdirSync(cwd)).toEqual([]);
    const missing = await show([path.join(cwd, 'nowhere')]);
    expect(missing.exitCode).toBe(2);
    expectOneLineError(String(missing.stderr), `cannot read ${path.join(cwd, 'nowhere', 'run.json')}`);
  });
});

describe('gpushare report --format html', () => {
  it('writes one self-contained page: the markdown report as HTML, every chart inlined as an image', async () => {
    const out = tempDir();
    const result = await cli(['report', real, '--format', 'html', '--out', out]);
    expect(result.exitCode).toBe(0);
    const id = path.basename(real);
    expect(readdirSync(out)).toEqual([`${id}.html`]);
    const html = readFileSync(path.join(out, `${id}.html`), 'utf8');
    expect(html).toMatch(/^<!doctype html>\n<html lang="en">/);
    expect(html).toContain(`<title>gpushare run ${id}</title>`);
    expect(html).toContain('<h2>Verdicts</h2>');
    // Nothing fetched: every src and href is an inlined image or a link within the page or to the web.
    const targets = [...html.matchAll(/(?:src|href)="([^"]*)"/g)].map((m) => m[1] as string);
    expect(targets.filter((t) => !/^(data:image\/svg\+xml;base64,|#|https:)/.test(t))).toEqual([]);
    expect(html).not.toMatch(/<script|<link|<iframe|javascript:/i);
    const images = [...html.matchAll(/<img src="data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)"/g)];
    const md = await cli(['report', real, '--out', out]);
    expect(md.exitCode).toBe(0);
    expect(images).toHaveLength(readdirSync(path.join(out, id)).length);
    for (const [, data] of images) {
      const svg = Buffer.from(data as string, 'base64').toString('utf8');
      expect(XMLValidator.validate(svg)).toBe(true);
      expect(new Resvg(svg).render().width).toBeGreaterThan(300);
    }
  });

  it('--json is the JSON spelling, --format json its deprecated old one', async () => {
    const json = await cli(['report', real, '--json']);
    expect(json.exitCode).toBe(0);
    expect(json.stderr).toBe('');
    const old = await cli(['report', real, '--format', 'json']);
    expect(old.exitCode).toBe(0);
    expect(old.stdout).toBe(json.stdout);
    expect(old.stderr).toBe('gpushare: warning: --format json is deprecated: use --json');
    const both = await cli(['report', real, '--json', '--format', 'csv']);
    expect(both.exitCode).toBe(2);
    expectOneLineError(both.stderr, '--json and --format csv: give one');
  });
});

describe('a verdict in one word everywhere', () => {
  it('a ratio no threshold grades is "none" in show, gate and the report alike', async () => {
    const id = 'timeslice/infer/slowdown';
    const shown = await cli(['show', real]);
    const row = shown.stdout.split('\n').findIndex((l) => l.startsWith('timeslice/infer '));
    expect(shown.stdout.split('\n')[row + 1]).toMatch(/^ {2}slowdown .* lower +none$/);
    expect((await cli(['gate', real])).stdout).toMatch(new RegExp(`^${id} .* — +none$`, 'm'));
    const out = tempDir();
    const md = readFileSync((await cli(['report', real, '--out', out])).stdout.trim(), 'utf8');
    expect(md).toMatch(new RegExp(`^\\| \`${id}\` \\|.*\\| — \\| none \\|$`, 'm'));
  });
});

describe('gpushare report given a file', () => {
  it("a run's file given for its directory (run.json, or a second run's): one line naming the directory, exit 2", async () => {
    for (const args of [[path.join(real, 'run.json')], [real, path.join(H200_RUN, 'run.json')]]) {
      const result = await cli(['report', ...args, '--out', tempDir()]);
      expect(result.exitCode).toBe(2);
      const file = args.at(-1) as string;
      expectOneLineError(
        result.stderr,
        `gpushare: ${file} is a file, not a run directory: give the directory that holds it (gpushare report ${path.dirname(file)})`,
      );
    }
  });
});
