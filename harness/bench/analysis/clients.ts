/** What a comparison's clients held on the GPU, from nvidia-smi's memory.used around their start, and why a comparison measured nothing. */
import { median } from 'simple-statistics';
import type { Comparison, Run } from '../record/schema.js';
import type { Round } from './rounds.js';

/**
 * MiB per client: memory.used while the comparison's trials ran (median of the samples inside its
 * windows) less the last sample before its clients started, over the client count. Context and
 * workload together; under MPS it includes the server's share. Null without samples on both sides.
 */
export function memoryPerClientMiB(run: Pick<Run, 'samples' | 'clientStarts'>, comparison: Comparison): number | null {
  const start = run.clientStarts?.find((s) => s.comparisonId === comparison.id);
  if (start === undefined) return null;
  const before = run.samples.filter((s) => s.tUs <= start.startedUs && s.memoryUsedMiB !== null).at(-1)?.memoryUsedMiB;
  const during = run.samples
    .filter((s) => s.trialId?.startsWith(`${comparison.id}#`) && s.memoryUsedMiB !== null)
    .map((s) => s.memoryUsedMiB as number);
  if (before === undefined || before === null || during.length === 0) return null;
  return (median(during) - before) / comparison.clientEnv.length;
}

/** Why a comparison's rounds measured nothing: the first failed trial's reason (a client that never became ready). */
export function roundsFailure(rounds: readonly Round[]): string | null {
  for (const round of rounds)
    for (const t of round.trials.values()) if (t.status === 'failed' || t.status === 'timeout') return t.reason;
  return null;
}
