/**
 * Records a reader computes from are checked for what it computes: a MIG table the solver cannot use,
 * a GPU of no memory, a latency histogram that does not decode or spans another range. Each is one
 * line naming the field, exit 2: never an internal error (exit 70), never planned silently.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as hdr from 'hdr-histogram-js';
import { describe, expect, it } from 'vitest';
import type { Run } from '../../harness/bench/record/schema.js';
import type { RateStep, ServeGroup, ServeRun } from '../../harness/serve/record.js';
import { encodeLatencies } from '../../harness/workload/open-loop.js';
import {
  DEFAULT_RUN,
  editedCopy,
  expectOneLineError,
  H100_MIX_RUN,
  runCli,
  SERVE_CAPACITY_RUN,
  tempDir,
} from '../helpers.js';

const H100 = DEFAULT_RUN;
const MIX = H100_MIX_RUN;
const PLAN = ['plan', '--models', '2', '--mem-gib', '2', '--sm-pct', '20'];

type Gpu = Run['fingerprint']['gpus'][number];
const gpu0 = (run: Run) => run.fingerprint.gpus[0] as Gpu;

describe('plan --run on a crafted run', () => {
  it('plans the committed run (MIG assessed): exit 0', async () => {
    const result = await runCli([...PLAN, '--run', H100]);
    expect(result.exitCode, result.stderr).toBe(0);
  });

  it.each<[string, (g: Gpu) => void, string]>([
    [
      'a MIG placement with no start position',
      (g) => {
        (g.migPlacements[0] as Gpu['migPlacements'][number]).starts = [];
      },
      'fingerprint.gpus[0].migPlacements[0].starts lists no start position',
    ],
    [
      'a MIG placement of a million slots',
      (g) => {
        (g.migPlacements[0] as Gpu['migPlacements'][number]).size = 1_000_000;
      },
      'fingerprint.gpus[0].migPlacements[0].size is 1000000, not 1 to 64 memory slots',
    ],
    [
      'a MIG placement starting past the last slot',
      (g) => {
        (g.migPlacements[0] as Gpu['migPlacements'][number]).starts = [0, 100];
      },
      'fingerprint.gpus[0].migPlacements[0].starts holds 100, which does not fit 64 memory slots',
    ],
    [
      'a MIG profile of negative memory',
      (g) => {
        (g.migProfiles[0] as Gpu['migProfiles'][number]).memoryGiB = -5;
      },
      'fingerprint.gpus[0].migProfiles[0].memoryGiB is -5',
    ],
    [
      'no GPU memory',
      (g) => {
        g.memoryTotalMiB = null;
      },
      "fingerprint.gpus[0].memoryTotalMiB is null: plan needs the GPU's memory",
    ],
    [
      'negative GPU memory',
      (g) => {
        g.memoryTotalMiB = -81559;
      },
      'fingerprint.gpus[0].memoryTotalMiB is -81559',
    ],
  ])('%s: exit 2, one line naming the field', async (_, edit, message) => {
    const run = editedCopy(H100, (r) => edit(gpu0(r)));
    const result = await runCli([...PLAN, '--run', run]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, message);
    const artifacts = await runCli(['artifacts', '--run', run, '--out', tempDir()]);
    expect(artifacts.exitCode).toBe(2);
  });
});

/** A copy of the committed mix run with `histogram` as its first victim window's. */
function mixWith(histogram: string): string {
  const dir = path.join(tempDir(), path.basename(MIX));
  cpSync(MIX, dir, { recursive: true });
  const file = path.join(dir, 'mix.json');
  const text = readFileSync(file, 'utf8');
  const first = /"histogram":"([^"]+)"/.exec(text)?.[1] as string;
  writeFileSync(file, text.replace(first, histogram));
  return dir;
}

describe('report and artifacts --mix on a mix run with a crafted histogram', () => {
  it.each<[string, string, RegExp]>([
    ['one that does not decode', 'HISTFAAAALB4nDWLwU0D', /histogram: not a compressed HdrHistogram \(/],
    ['one cut to nothing', '', /histogram: not a compressed HdrHistogram \(/],
    [
      'a wide one',
      wideHistogram(),
      /histogram: an HdrHistogram of 1 to 9007199254740991 µs at 5 digits, not the 1 to 3600000000 µs at 3 digits gpushare records/,
    ],
  ])('%s: exit 2, one line naming the field', async (_, histogram, message) => {
    const dir = mixWith(histogram);
    const report = await runCli(['report', dir, '--out', tempDir()]);
    expect(report.exitCode).toBe(2);
    expect(report.stderr.trim().split('\n')).toHaveLength(1);
    expect(report.stderr).toMatch(message);
    const artifacts = await runCli(['artifacts', '--mix', dir, '--out', tempDir()]);
    expect(artifacts.exitCode).toBe(2);
    expect(artifacts.stderr).toMatch(message);
  });

  it('the same run with a histogram gpushare records: read as before', async () => {
    const report = await runCli(['report', mixWith(encodeLatencies([1.5, 2, 40])), '--out', tempDir()]);
    expect(report.exitCode, report.stderr).toBe(0);
  });
});

/** 1 µs to 2^53 µs at 5 digits: what made a mix report take minutes. */
function wideHistogram(): string {
  // Built with the library gpushare decodes with, as a crafted record would be.
  const h = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: Number.MAX_SAFE_INTEGER,
    numberOfSignificantValueDigits: 5,
    useWebAssembly: false,
  });
  h.recordValue(1);
  h.recordValue(2 ** 50);
  const text = hdr.encodeIntoCompressedBase64(h);
  h.destroy();
  return text;
}

/** A copy of the committed capacity --serve run with its serve.json edited by `edit` (and its status, to resume it). */
function editedServe(edit: (run: ServeRun) => void, status: ServeRun['status'] = 'complete'): string {
  const copy = path.join(tempDir(), path.basename(SERVE_CAPACITY_RUN));
  cpSync(SERVE_CAPACITY_RUN, copy, { recursive: true });
  const file = path.join(copy, 'serve.json');
  const run = JSON.parse(readFileSync(file, 'utf8')) as ServeRun;
  run.status = status;
  edit(run);
  writeFileSync(file, JSON.stringify(run));
  return copy;
}

const firstStep = (run: ServeRun) => (run.groups[1] as ServeGroup).steps[0] as RateStep;

describe('a server run read back: its figures and lists within bounds, its settings within the flags', () => {
  it('the committed run reads: show and plan', async () => {
    expect((await runCli(['show', SERVE_CAPACITY_RUN])).exitCode).toBe(0);
  });

  it.each<[string, (run: ServeRun) => void, string]>([
    [
      'a throughput of 1e308',
      (run) => {
        firstStep(run).window.outputTokensPerS = 1e308;
      },
      'groups.1.steps.0.window.outputTokensPerS',
    ],
    [
      'a negative TTFT p99',
      (run) => {
        firstStep(run).window.ttft.p99Ms = -5;
      },
      'groups.1.steps.0.window.ttft.p99Ms',
    ],
    [
      'a rate search of 65 steps (a search takes 8)',
      (run) => {
        const step = firstStep(run);
        (run.groups[1] as ServeGroup).steps = Array.from({ length: 65 }, () => step);
      },
      'groups.1.steps: Too big: expected array to have <=64 items',
    ],
    [
      'a --window-s past the flag (windowMs 10^9)',
      (run) => {
        run.settings.windowMs = 1e9;
      },
      "its settings are none gpushare's flags allow (--window-s 1000000: needs a number from 0.05 to 3600)",
    ],
    [
      'a ready path that leaves the copy’s host',
      (run) => {
        run.settings.readyPath = '//127.0.0.2:9/health';
      },
      '--ready-path //127.0.0.2:9/health: it names another host',
    ],
  ])('%s: one line naming it, exit 2 (show, report, plan)', async (_what, edit, text) => {
    const dir = editedServe(edit);
    for (const args of [
      ['show', dir],
      ['report', dir, '--out', tempDir()],
      ['plan', '--run', dir],
    ]) {
      const result = await runCli(args);
      expect(result.exitCode, args[0]).toBe(2);
      expectOneLineError(result.stderr, text);
    }
  });

  it('--resume re-validates the record against the flags: an edited one is refused, exit 2, nothing run', async () => {
    const dir = editedServe((run) => {
      run.settings.rounds = 1_000_000;
      run.settings.measure = 'bench';
    }, 'running');
    const result = await runCli(['bench', '--resume', dir]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, '--rounds 1000000: needs a number from 1 to 1000');
  });
});
