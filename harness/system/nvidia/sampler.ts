import type { Clock } from '../../core/clock.js';
import type { ChildHandle, ProcessRunner } from '../../core/process.js';
import type { Sample } from './schema.js';
import { parseCsvRow, queryArg, SAMPLE_FIELDS } from './smi-csv.js';

/** The nvidia-smi sampler seam: one long-lived process per run, samples kept in arrival order. */
/** Whether the sampler ran to the end, and why not. */
export interface SamplerStatus {
  status: 'ok' | 'failed';
  error: string | null;
}

export interface Sampler {
  /** Every sample so far; the scheduler tags those inside a trial's window with its id. */
  readonly samples: Sample[];
  status(): SamplerStatus;
  stop(): Promise<void>;
}

export interface SamplerOptions {
  gpuIndex: number;
  intervalMs: number;
  /** Samples of an earlier part of the run (--resume): new ones are appended. */
  initial?: Sample[];
}

/** Starts `nvidia-smi --query-gpu=... -lms <ms>` and parses each line into a typed sample. */
export function startSmiSampler(runner: ProcessRunner, clock: Clock, options: SamplerOptions): Sampler {
  const samples: Sample[] = options.initial ?? [];
  let error: string | null = null;
  let stopping = false;
  const child: ChildHandle = runner.spawn(
    [
      'nvidia-smi',
      `--query-gpu=${queryArg(SAMPLE_FIELDS)}`,
      '--format=csv,noheader,nounits',
      '-i',
      String(options.gpuIndex),
      '-lms',
      String(options.intervalMs),
    ],
    { maxLineBytes: 64 * 1024 },
  );
  child.onLine((line, tooLong) => {
    if (!line.trim()) return;
    const parsed = tooLong ? { ok: false as const, error: 'a line over 64 KiB' } : parseCsvRow(line, SAMPLE_FIELDS);
    if (parsed.ok) samples.push({ ...parsed.row, tUs: clock.monotonicUs(), trialId: null });
    else error ??= `nvidia-smi sampler printed an unreadable line (${parsed.error}); such lines are skipped`;
  });
  void child.exited.then((exit) => {
    if (stopping) return;
    error =
      exit.spawnError ??
      `nvidia-smi sampler exited early (code ${exit.exitCode ?? exit.signal}): ${child.stderrTail().trim().slice(0, 300)}`;
  });
  return {
    samples,
    status: () => ({ status: error === null ? 'ok' : 'failed', error }),
    async stop() {
      stopping = true;
      child.killGroup('SIGTERM');
      const timer = setTimeout(() => child.killGroup('SIGKILL'), 2000);
      await child.exited;
      clearTimeout(timer);
    },
  };
}

/** Tags the samples that fall inside [startUs, endUs] with a trial id. */
export function tagSamples(samples: Sample[], trialId: string, startUs: number, endUs: number): void {
  for (const sample of samples) {
    if (sample.trialId === null && sample.tUs >= startUs && sample.tUs <= endUs) sample.trialId = trialId;
  }
}
