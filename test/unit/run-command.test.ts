/**
 * The run command factory (session/run-command.ts) on a product of its own: what a new run and
 * --resume do before any machine is touched. The products' runs through it are the e2e tests'.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../harness/core/clock.js';
import type { ArgsOf } from '../../harness/core/command.js';
import type { AppDeps } from '../../harness/core/deps.js';
import { UserError } from '../../harness/core/errors.js';
import type { ProcessRunner } from '../../harness/core/process.js';
import { jsonBinding, type MachineRecord } from '../../harness/session/lifecycle.js';
import { defineRunCommand, type RunOptions } from '../../harness/session/run-command.js';
import { tempDir } from '../helpers.js';

interface ToyOptions extends RunOptions {
  size: string;
}

interface ToyRun extends MachineRecord {
  schema: 'gpushare.toy/1';
  createdAt: string;
}

const FLAGS = {
  size: { type: 'number', describe: 'a setting' },
  json: { type: 'boolean', describe: 'print JSON' },
  resume: { type: 'string', describe: 'continue the run in this directory' },
  'dry-run': { type: 'boolean', describe: 'measure nothing' },
} as const;

/** A capacity-kind product whose resume finds no record of its own anywhere, and whose measure is never reached here. */
const toy = defineRunCommand({
  flags: FLAGS,
  kind: 'capacity',
  schema: 'gpushare.toy/1',
  verb: 'toy',
  resolve: (args): ToyOptions => ({
    size: args.size ?? '1',
    gpuIndex: 0,
    out: null,
    python: 'python3',
    allowBusy: false,
    json: args.json ?? false,
    dryRun: args.dryRun ?? false,
  }),
  dryRun: (options, deps) => {
    deps.out(`dry run of size ${options.size}\n`);
    return 0;
  },
  binding: (dir) => jsonBinding<ToyRun>(dir, 'capacity', 0, { daemons: () => [], done: () => 0, windDown: 'stopping' }),
  create: (header): ToyRun => ({ ...header, warnings: [] }),
  resume: { load: async () => null, resumed: () => undefined, options: (_run, given) => ({ ...given, size: '1' }) },
  measure: async () => {
    throw new Error('measure is not reached in these tests');
  },
});

/** Deps whose runner fails the test if the factory touches the machine (the fingerprint, nvidia-smi). */
function depsWithoutMachine(): AppDeps & { printed: string[] } {
  const printed: string[] = [];
  const runner = new Proxy({} as ProcessRunner, {
    get: () => () => {
      throw new Error('the machine was touched');
    },
  });
  return {
    printed,
    runner,
    clock: systemClock,
    out: (text) => printed.push(text),
    err: (text) => printed.push(text),
    cwd: tempDir(),
    terminal: { isTty: false, columns: 80, nowMs: () => 0 },
  };
}

const args = (given: ArgsOf<typeof FLAGS>) => ({ rest: [], ...given });

async function refusal(given: ArgsOf<typeof FLAGS>): Promise<string> {
  const deps = depsWithoutMachine();
  try {
    await toy.run(await toy.resolve(args(given)), deps);
  } catch (error) {
    if (error instanceof UserError) return error.message;
    throw error;
  }
  throw new Error('not refused');
}

describe('defineRunCommand', () => {
  it('refuses --resume of a directory of another kind of run in one line, naming what it is', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'mix.json'), '{}');
    expect(await refusal({ resume: dir })).toBe(
      `${dir} is a mix run (mix.json), not a capacity run: give a directory made by gpushare capacity`,
    );
  });

  it('refuses --resume of a directory a kill left without a record: start afresh there', async () => {
    const dir = path.join(tempDir(), 'gone');
    expect(await refusal({ resume: dir })).toBe(
      `${dir} holds no capacity run to resume: it does not exist (a capacity run killed before its first save leaves none); start it afresh with gpushare capacity --out ${dir}`,
    );
    mkdirSync(dir);
    expect(await refusal({ resume: dir })).toContain('no capacity.json was saved there');
  });

  it('refuses a setting beside --resume, naming the flag; printing flags may come with it', async () => {
    expect(await refusal({ resume: tempDir(), size: '3' })).toBe(
      '--resume continues a run with its own settings: drop --size',
    );
    expect(await toy.resolve(args({ resume: 'somewhere', json: true }))).toEqual({ resume: 'somewhere', json: true });
  });

  it('prints a dry run and touches neither the machine nor the disk', async () => {
    const deps = depsWithoutMachine();
    const options = await toy.resolve(args({ size: '4', dryRun: true }));
    expect(await toy.run(options, deps)).toBe(0);
    expect(deps.printed).toEqual(['dry run of size 4\n']);
  });
});
