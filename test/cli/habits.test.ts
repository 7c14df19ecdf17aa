/**
 * CLI habits as gh and kubectl have them: `help <command>`, examples in every command's --help, and
 * "did you mean" for a misspelt flag of any command, even where a required flag is then missing.
 * And the one-line refusals of a bad choice and of `--` with nothing after it.
 */
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../harness/cli/registry.js';
import type { Flags } from '../../harness/core/command.js';
import { DEFAULT_RUN, expectOneLineError, runCli } from '../helpers.js';

describe.concurrent('help <command>', () => {
  it.each(COMMANDS.map((c) => [c.name]))('%s: help <command> prints its --help', async (name) => {
    const words = name.split(' ');
    const help = await runCli(['help', ...words]);
    const flag = await runCli([...words, '--help']);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toBe(flag.stdout);
    expect(help.stdout).toContain(`gpushare ${name}`);
  });

  it('-v is the version, as --version (and -h the help, as --help)', async () => {
    const version = await runCli(['--version']);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+/);
    expect(await runCli(['-v'])).toEqual(version);
    expect((await runCli(['-h'])).stdout).toBe((await runCli(['--help'])).stdout);
  });

  it('gpushare help alone prints the root help', async () => {
    const help = await runCli(['help']);
    expect([help.exitCode, help.stdout]).toEqual([0, (await runCli(['--help'])).stdout]);
  });
});

describe.concurrent("every command's --help", () => {
  it.each(COMMANDS.map((c) => [c.name]))('%s shows examples', async (name) => {
    const help = await runCli([...name.split(' '), '--help']);
    expect(help.stdout).toMatch(new RegExp(`\\nExamples:\\n {2}gpushare ${name}`));
  });
});

/** Every flag of every command, but old names kept for compatibility. */
const FLAGS = (
  await Promise.all(
    COMMANDS.map(async (c) => {
      const flags = Object.entries((await c.load()).flags as Flags).filter(([, f]) => !f.renamedTo && !f.deprecated);
      return flags.map(([flag]) => [c.name, flag] as const);
    }),
  )
).flat();

describe.concurrent('a misspelt flag of any command: did you mean', () => {
  it.each(FLAGS)('%s --%s, misspelt', async (name, flag) => {
    const misspelt = `${flag}x`;
    const result = await runCli([...name.split(' '), `--${misspelt}`, '1']);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, `unknown flag --${misspelt} for ${name}: did you mean --`);
  });

  it('plan --model 40 names --models, not the flags then missing', async () => {
    const result = await runCli(['plan', '--model', '40']);
    expectOneLineError(
      result.stderr,
      'unknown flag --model for plan: did you mean --models? (see gpushare plan --help)',
    );
  });
});

describe.concurrent('one-line refusals', () => {
  it('a choice not offered: the value and the choices, no escaped newline', async () => {
    const result = await runCli(['report', DEFAULT_RUN, '--format', 'pdf']);
    expect(result.exitCode).toBe(2);
    expectOneLineError(
      result.stderr,
      '--format pdf: choose md, html, csv, json, bencher or github-action-benchmark (see gpushare report --help)',
    );
    expect(result.stderr).not.toContain('\\u');
  });

  it('bench -- with nothing after it is refused, not run as the default bench', async () => {
    const result = await runCli(['bench', '--']);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, 'nothing after --: give the workload command there');
  });
});
