/**
 * The GitHub Actions example (examples/github-actions/gpushare.yml): valid YAML of the workflow's
 * shape, and every gpushare command in it is one the CLI accepts, so the example cannot drift from
 * the flags.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseArgv } from '../../harness/cli/parse.js';
import { ROOT } from '../helpers.js';

interface Step {
  run?: string;
  uses?: string;
  if?: string;
  with?: Record<string, string>;
}

const workflow = parse(readFileSync(path.join(ROOT, 'examples', 'github-actions', 'gpushare.yml'), 'utf8')) as {
  on: Record<string, unknown>;
  jobs: Record<string, { 'runs-on': string[]; steps: Step[] }>;
};
const steps = Object.values(workflow.jobs).flatMap((job) => job.steps);
// A command's own words: a shell redirection after it (`> file`) is the shell's, not gpushare's.
const commands = steps
  .flatMap((s) => (s.run ?? '').split('\n'))
  .filter((line) => /\bnpx gpushare\b/.test(line))
  .map((line) => line.replace(/\s+>\s+\S+\s*$/, ''));

describe('the GitHub Actions example', () => {
  it('runs on a self-hosted GPU runner, benches and gates with JUnit, and keeps the results whatever happened', () => {
    expect(Object.values(workflow.jobs)[0]?.['runs-on']).toEqual(expect.arrayContaining(['self-hosted', 'gpu']));
    // The gate against the baseline, and on the first night (no baseline yet) the gate that seeds it: one JUnit file.
    expect(commands.map((c) => c.trim().split(/\s+/)[2])).toEqual(['bench', 'gate', 'gate', 'report', 'report']);
    const [gate = '', seed = ''] = commands.filter((c) => c.includes(' gate '));
    expect(gate).toMatch(/--baseline \S+/);
    expect(seed).not.toMatch(/--baseline/);
    const junit = /--junit (\S+)/.exec(gate)?.[1];
    expect(/--junit (\S+)/.exec(seed)?.[1]).toBe(junit);
    const publish = steps.find((s) => s.with?.report_paths === junit);
    expect(publish?.if).toBe('always()');
    expect(steps.find((s) => s.uses?.startsWith('actions/upload-artifact'))?.if).toBe('always()');
  });

  it('charts and tracks the files the export writes: each tool gets the file of its kind', () => {
    const lines = steps.flatMap((s) => (s.run ?? '').split('\n'));
    const dir = /--format github-action-benchmark --out (\S+)/.exec(lines.join('\n'))?.[1];
    const bencher = /--format bencher > (\S+)/.exec(lines.join('\n'))?.[1];
    const chart = (tool: string) => steps.find((s) => s.with?.tool === tool)?.with?.['output-file-path'];
    expect(chart('customSmallerIsBetter')).toBe(`${dir}/smaller-is-better.json`);
    expect(chart('customBiggerIsBetter')).toBe(`${dir}/bigger-is-better.json`);
    expect(steps.find((s) => s.run?.includes('bencher run'))?.run).toContain(`--adapter json --file ${bencher}`);
  });

  it.each(commands)('the CLI accepts: %s', async (line) => {
    const args = line.trim().split(/\s+/).slice(2);
    const parsed = await parseArgv(args, 80);
    expect(parsed.kind === 'command' ? parsed.entry.name : null).toBe(args[0]);
  });
});
