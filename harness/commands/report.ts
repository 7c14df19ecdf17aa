/** `gpushare report <run> --format json`: the machine-readable summary users script against. */
import type { AppDeps } from '../deps.js';
import { ExitCode } from '../errors.js';
import { verdictsJson } from '../export/gate-outputs.js';
import { loadRun } from '../run/store.js';
import { runMetrics } from '../stats/metrics.js';
import { metricStats } from '../stats/summary.js';
import { runVerdicts } from '../stats/verdicts.js';
import { loadThresholds } from '../thresholds.js';

export interface ReportOptions {
  run: string;
  format: 'json';
  config?: string;
}

export async function reportCommand(options: ReportOptions, deps: AppDeps): Promise<number> {
  const run = await loadRun(options.run);
  const thresholds = options.config ? await loadThresholds(options.config) : run.config.thresholds;
  const gpu = run.fingerprint.gpus.find((g) => g.index === run.config.gpuIndex);
  const summary = {
    run: { id: run.id, status: run.status, createdAt: run.createdAt, finishedAt: run.finishedAt, gpu: gpu?.name ?? null, driver: run.fingerprint.driverVersion, cuda: run.fingerprint.cudaVersion },
    verdicts: verdictsJson(runVerdicts(run, thresholds)),
    metrics: runMetrics(run).map((m) => {
      const { outliers, ...stats } = metricStats(m);
      return { metric: m.id, description: m.description, better: m.better, headline: m.headline, perRound: m.perRound, ...stats, outlierRounds: outliers };
    }),
    modes: run.modes.map((m) => ({ mode: m.mode, status: m.status, reason: m.reason })),
    stops: run.stops,
  };
  deps.out(`${JSON.stringify(summary, null, 2)}\n`);
  return ExitCode.ok;
}
