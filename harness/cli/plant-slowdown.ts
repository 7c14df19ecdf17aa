/**
 * A planted change, for calibrating the gate: a copy of a run in which the arm each headline ratio
 * measures under sharing ran slower by a factor. The copy is re-analysed by bench's own analysis, so
 * what the gate sees is what a run that slow would have recorded.
 */
import { fixedWorkStreams, type Run } from '../bench/record/schema.js';

/**
 * A copy of `run` in which the shared arm did `fraction` (0.1 = 10%) less work per second: contended
 * clients' iterations × (1 − fraction) (their throughput), K-stream work's GPU time ÷ (1 − fraction).
 * Not rounded, so every per-round ratio moves by exactly that factor.
 */
export function plantSlowdown(run: Run, fraction: number): Run {
  const keep = 1 - fraction;
  const fixedWork = new Map(run.plan.map((c) => [c.id, fixedWorkStreams(c)]));
  const trials = run.trials.map((trial) => {
    if (trial.status !== 'ok') return trial;
    const streams = fixedWork.get(trial.comparisonId) === true;
    const slowed = (variantStreams: number) => (streams ? variantStreams > 1 : trial.arm === 'contended');
    return {
      ...trial,
      clients: trial.clients.map((client) => {
        if (!slowed(client.variant.streams)) return client;
        return streams
          ? { ...client, gpuMs: client.gpuMs / keep }
          : { ...client, iterations: client.iterations * keep };
      }),
    };
  });
  return { ...run, trials };
}
