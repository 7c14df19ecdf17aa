/**
 * `report --format bencher` and `--format github-action-benchmark` on the committed H100 sweep, each
 * file read by a faithful port of the tool's own parser (neither installs from npm: Bencher's is Rust,
 * github-action-benchmark is a GitHub Action).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { editedCopy, H100_MIX_RUN, H100_SWEEP_RUN, LOOP2_RUN, runCli, tempDir } from '../helpers.js';

/**
 * Bencher's `json` adapter at BMF v0 (bencherdev/bencher, lib/bencher_adapter/src/adapters/json/v0.rs):
 * serde parses HashMap<BenchmarkName, HashMap<MeasureNameId, JsonNewMetric>>. A BenchmarkName is
 * 1 to 1024 bytes (bencher_valid, is_valid_benchmark_name); a measure is a name, slug or UUID of 1
 * to 64 characters; JsonNewMetric is { value: f64, lower_value: Option<f64>, upper_value: Option<f64> }
 * (bencher_json, JsonNewMetric). Any failure and the adapter returns None: the report is refused.
 */
function bencherParse(text: string): Map<string, Map<string, { value: number; lower?: number; upper?: number }>> {
  const json: unknown = JSON.parse(text);
  const object = (x: unknown, what: string) => {
    if (typeof x !== 'object' || x === null || Array.isArray(x)) throw new Error(`${what}: not a JSON object`);
    return x as Record<string, unknown>;
  };
  const f64 = (x: unknown, what: string) => {
    if (typeof x !== 'number') throw new Error(`${what}: not a number`);
    return x;
  };
  const results = new Map<string, Map<string, { value: number; lower?: number; upper?: number }>>();
  for (const [benchmark, measures] of Object.entries(object(json, 'the report'))) {
    const bytes = Buffer.byteLength(benchmark, 'utf8');
    if (bytes === 0 || bytes > 1024) throw new Error(`benchmark name "${benchmark}": 1 to 1024 bytes`);
    const parsed = new Map<string, { value: number; lower?: number; upper?: number }>();
    for (const [measure, metric] of Object.entries(object(measures, benchmark))) {
      if (measure.length === 0 || [...measure].length > 64) throw new Error(`measure "${measure}": 1 to 64 characters`);
      const m = object(metric, `${benchmark}.${measure}`);
      const optional = (key: string) => (m[key] === undefined || m[key] === null ? undefined : f64(m[key], key));
      const lower = optional('lower_value');
      const upper = optional('upper_value');
      parsed.set(measure, {
        value: f64(m.value, `${benchmark}.${measure}.value`),
        ...(lower !== undefined ? { lower } : {}),
        ...(upper !== undefined ? { upper } : {}),
      });
    }
    results.set(benchmark, parsed);
  }
  return results;
}

/**
 * github-action-benchmark's reading of a custom tool's file (benchmark-action/github-action-benchmark,
 * src/extract.ts: extractCustomBenchmarkResult, then extractResult's "No benchmark result was found"),
 * with the types its BenchmarkResult interface declares: name, unit and value required, range and extra
 * optional strings. The action parses the JSON array and maps each entry to those five fields.
 */
function actionParse(
  text: string,
): Array<{ name: string; value: number; unit: string; range?: string; extra?: string }> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(
      `Output file for 'custom-(bigger|smaller)-is-better' must be JSON file containing an array of entries in BenchmarkResult format: ${(err as Error).message}`,
    );
  }
  if (!Array.isArray(json)) throw new Error('json.map is not a function');
  const benches = json.map((entry: Record<string, unknown>) => {
    const { name, value, unit, range, extra } = entry;
    if (typeof name !== 'string') throw new Error('BenchmarkResult.name: a string');
    if (typeof value !== 'number') throw new Error(`${name}: BenchmarkResult.value: a number`);
    if (typeof unit !== 'string') throw new Error(`${name}: BenchmarkResult.unit: a string`);
    if (range !== undefined && typeof range !== 'string') throw new Error(`${name}: range: a string`);
    if (extra !== undefined && typeof extra !== 'string') throw new Error(`${name}: extra: a string`);
    return { name, value, unit, ...(range !== undefined ? { range } : {}), ...(extra !== undefined ? { extra } : {}) };
  });
  if (benches.length === 0) throw new Error('No benchmark result was found');
  return benches;
}

describe('report --format bencher', () => {
  it("the sweep's ratios as BMF: benchmark mode/workload@clients, measure the ratio, its 95% interval as the bounds", async () => {
    const result = await runCli(['report', H100_SWEEP_RUN, '--format', 'bencher']);
    expect(result.exitCode, result.stderr).toBe(0);
    const parsed = bencherParse(result.stdout);
    expect(parsed.get('streams/infer@8')?.get('slowdown')).toEqual({
      value: 6.450538550276873,
      lower: 6.408128629261146,
      upper: 6.528249129352767,
    });
    expect(parsed.get('timeslice/infer@2')?.get('aggregate-throughput')?.value).toBeCloseTo(0.7066, 4);
    // Every metric the CSV has with a value, each within its bounds.
    const csv = await runCli(['report', H100_SWEEP_RUN, '--format', 'csv']);
    const rows = csv.stdout.trim().split('\n').length - 1;
    const metrics = [...parsed.values()].flatMap((m) => [...m.values()]);
    expect(metrics).toHaveLength(rows);
    for (const m of metrics) expect((m.lower ?? m.value) <= m.value && m.value <= (m.upper ?? m.value)).toBe(true);
  });

  it("a simulated run's benchmarks are named SIMULATED, in both formats, so no dashboard files them beside a GPU's", async () => {
    const simulated = editedCopy(LOOP2_RUN, (run) => void (run.fingerprint.simulated = true));
    const bencher = bencherParse((await runCli(['report', simulated, '--format', 'bencher'])).stdout);
    expect([...bencher.keys()].every((name) => name.startsWith('SIMULATED '))).toBe(true);
    const out = tempDir();
    await runCli(['report', simulated, '--format', 'github-action-benchmark', '--out', out]);
    const smaller = actionParse(readFileSync(path.join(out, 'smaller-is-better.json'), 'utf8'));
    expect(smaller.every((b) => b.name.startsWith('SIMULATED ') && b.extra?.includes('SIMULATED:'))).toBe(true);
  });

  it('the port of the adapter refuses what Bencher refuses', () => {
    expect(() => bencherParse('{"b": {"slowdown": {"value": "1.2"}}}')).toThrow('not a number');
    expect(() => bencherParse('{"b": {"slowdown": {"lower_value": 1}}}')).toThrow('value: not a number');
    expect(() => bencherParse('{"": {"slowdown": {"value": 1}}}')).toThrow('1 to 1024 bytes');
    expect(() => bencherParse(`{"b": {"${'m'.repeat(65)}": {"value": 1}}}`)).toThrow('1 to 64 characters');
    expect(() => bencherParse('[]')).toThrow('not a JSON object');
  });

  it('refuses a run that is not one bench run: one line, exit 2', async () => {
    const mix = await runCli(['report', H100_MIX_RUN, '--format', 'bencher']);
    expect([mix.exitCode, mix.stderr.trim().split('\n').length]).toEqual([2, 1]);
    expect(mix.stderr).toContain('is a mix run: give one bench run directory');
    const two = await runCli(['report', LOOP2_RUN, H100_SWEEP_RUN, '--format', 'github-action-benchmark']);
    expect([two.exitCode, two.stderr]).toEqual([2, expect.stringContaining('are two runs')]);
  });
});

describe('report --format github-action-benchmark', () => {
  it('writes a customSmallerIsBetter and a customBiggerIsBetter file that the action reads', async () => {
    const out = tempDir();
    const result = await runCli(['report', H100_SWEEP_RUN, '--format', 'github-action-benchmark', '--out', out]);
    expect(result.exitCode, result.stderr).toBe(0);
    const id = path.basename(H100_SWEEP_RUN);
    expect(result.stdout.trim().split('\n')).toEqual([
      path.join(out, 'smaller-is-better.json'),
      path.join(out, 'bigger-is-better.json'),
    ]);
    const smaller = actionParse(readFileSync(path.join(out, 'smaller-is-better.json'), 'utf8'));
    const bigger = actionParse(readFileSync(path.join(out, 'bigger-is-better.json'), 'utf8'));
    expect(smaller[0]?.extra).toContain(`run ${id}, `);
    expect(smaller.find((b) => b.name === 'mps/infer@8/slowdown')).toMatchObject({
      unit: 'ratio',
      range: expect.stringMatching(/^95% CI \[\d\.\d{4}, \d\.\d{4}\]$/),
    });
    expect(smaller.every((b) => !/speedup|aggregate-throughput|gain-over-timeslice/.test(b.name))).toBe(true);
    expect(bigger.map((b) => b.name)).toContain('streams/infer/speedup-k2');
    expect(bigger.every((b) => /speedup|aggregate-throughput|gain-over-timeslice/.test(b.name))).toBe(true);
  });

  it('the port of the extractor refuses what the action refuses', () => {
    expect(() => actionParse('{')).toThrow(
      'must be JSON file containing an array of entries in BenchmarkResult format',
    );
    expect(() => actionParse('[]')).toThrow('No benchmark result was found');
    expect(() => actionParse('[{"name": "x", "value": "1", "unit": "ratio"}]')).toThrow('value: a number');
    expect(() => actionParse('[{"name": "x", "value": 1}]')).toThrow('unit: a string');
  });
});
