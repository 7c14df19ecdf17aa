/** What a server run would do, and the load time it would take, as --dry-run prints it: nothing started, nothing measured. */
import { CEILING_RATES } from './ceiling.js';
import { memFraction } from './copies.js';
import type { ServeGroup, ServeSettings } from './record.js';
import { searchPolicy, shortStepWarning } from './steps.js';
import { WARMUP_TREND_WINDOWS } from './verdicts.js';
import { WARMUP_MAX_S, WARMUP_S, warmupWindowMs } from './warmup.js';

type Planned = Omit<ServeSettings, 'serverCpus' | 'generatorCpu'>;

/** The generator's ceiling before the first measurement: its rates and one warm-up step, s. */
export const ceilingS = (ceilingStepMs: number): number => ((CEILING_RATES.length + 1) * ceilingStepMs) / 1000;

/**
 * How long an arm's warm-up of `windowMs` windows takes, s, as verdicts.ts warmupStop ends it after whole windows:
 * one window with --warmup-s 0; else at the soonest once the trend test has its windows and the minimum has
 * passed, at the latest once --warmup-max-s has.
 */
export function warmupBoundsS(
  windowMs: number,
  s: { warmupMs?: number | undefined; warmupMaxMs?: number | undefined },
): { leastS: number; mostS: number } {
  const windowS = windowMs / 1000;
  const minMs = s.warmupMs ?? WARMUP_S * 1000;
  if (minMs === 0) return { leastS: windowS, mostS: windowS };
  const maxMs = s.warmupMaxMs ?? WARMUP_MAX_S * 1000;
  const mostS = windowS * Math.max(1, Math.ceil(maxMs / windowMs));
  const steadyS = windowS * Math.max(WARMUP_TREND_WINDOWS, Math.ceil(minMs / windowMs));
  return { leastS: Math.min(steadyS, mostS), mostS };
}

/** The groups a run measures, in order, with the seconds of load each takes: bench, exactly; capacity, at most. */
export function dryRunText(settings: Planned, groups: ReadonlyArray<Pick<ServeGroup, 'mode' | 'copies'>>): string {
  const s = settings;
  const windowS = s.windowMs / 1000;
  const ceilingSeconds = ceilingS(s.ceilingStepMs);
  const lines = [
    `gpushare ${s.measure} --serve --dry-run: nothing is started or measured`,
    `server: ${s.serve}`,
    `ceiling: the load generator against a null server at ${CEILING_RATES.length} rates × ${s.ceilingStepMs / 1000} s after one warm-up step (at most ${ceilingSeconds} s)`,
  ];
  let loadS = ceilingSeconds;
  const { leastS, mostS } = warmupBoundsS(warmupWindowMs(s.windowMs), s);
  const warmup = `a warm-up until steady (${leastS}–${mostS} s)`;
  if (s.measure === 'bench') {
    lines.push(
      `dedicated copy: a plain process, {mem_fraction} ${memFraction('bench', 'dedicated', 1).toFixed(2)}, resident all run`,
    );
    for (const g of groups) {
      const seconds = 2 * leastS + 2 * s.rounds * windowS;
      loadS += seconds;
      lines.push(
        `${g.mode} ×${g.copies}: {mem_fraction} ${memFraction('bench', g.mode, g.copies).toFixed(2)} each; ${s.concurrency} requests per copy against ${g.copies * s.concurrency} on the dedicated copy; each arm ${warmup}, then ${2 * s.rounds} measured windows of ${windowS} s: at least ${seconds} s`,
      );
    }
  } else {
    const maxStepS = Math.max(windowS, s.maxStepMs / 1000);
    const short = shortStepWarning(Math.min(...groups.map((g) => g.copies)), s.windowMs, s.maxStepMs);
    if (short !== null) lines.push(`warning: ${short}`);
    for (const g of groups) {
      const policy = searchPolicy(g.copies);
      const seconds = policy.maxSteps * maxStepS + mostS;
      loadS += seconds;
      lines.push(
        `${g.mode} ×${g.copies}: {mem_fraction} ${memFraction('capacity', g.mode, g.copies).toFixed(2)} each; ${warmup} at ${policy.startQps} req/s, then a rate search from there, at most ${policy.maxSteps} steps of ${windowS}–${maxStepS} s: at most ${seconds} s`,
      );
    }
  }
  lines.push(
    `load: ${s.measure === 'bench' ? 'at least' : 'at most'} ${Math.round(loadS)} s, plus each copy's start-up (one at a time, each up to ${s.readyTimeoutMs / 1000} s) and each MPS daemon's`,
  );
  return `${lines.join('\n')}\n`;
}
