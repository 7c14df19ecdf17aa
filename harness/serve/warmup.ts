/**
 * Warm-up until steady: windows of load that are not kept, repeated until the rule of serve/verdicts.ts
 * (`warmupStop`: a minimum time, then no trend in the last windows' throughput and TTFT p50; a maximum)
 * says stop. How long it took, how many windows and why it stopped go in the group's record.
 */
import { z } from 'zod';
import type { WindowStats } from './record.js';
import { WARMUP_TREND_ALPHA, WARMUP_TREND_WINDOWS, type WarmupPoint, warmupStop } from './verdicts.js';

/** --warmup-s's default: at least this long, s. */
export const WARMUP_S = 10;
/** --warmup-max-s's default: at most this long, s (then on, with a warning). */
export const WARMUP_MAX_S = 60;
/** The longest a warm-up window lasts, ms: short enough that the trend test's 5 windows fit the default minimum. */
export const WARMUP_WINDOW_MAX_MS = 2000;

const MAX_POINTS = 10_000;

/** One arm's warm-up in a group's record. */
export const WarmupSchema = z.object({
  /** bench: the arm warmed (each before its group's rounds); capacity: before the first step, at its rate. */
  arm: z.enum(['dedicated', 'shared', 'step']),
  windows: z.number().int().nonnegative().max(MAX_POINTS),
  /** From its first window's release to its last window's end, ms. */
  durationMs: z.number().nonnegative().max(1e12),
  stop: z.enum(['one window', 'steady', 'max']),
  /** Mann–Kendall's two-sided p over the last windows (throughput, TTFT p50); null where the test did not run. */
  trend: z.object({ tokensP: z.number().min(0).max(1), ttftP50P: z.number().min(0).max(1) }).nullable(),
  /** Each window's output tokens/s and TTFT p50: the series the test read. */
  points: z
    .array(
      z.object({
        outputTokensPerS: z.number().nonnegative().max(1e12),
        ttftP50Ms: z.number().nonnegative().max(1e12).nullable(),
      }),
    )
    .max(MAX_POINTS),
});
export type Warmup = z.infer<typeof WarmupSchema>;

/** A window as measure.ts gives it: its stats, or why there are none. */
export type WarmupWindow = { stats: WindowStats; problem: null } | { stats: null; problem: string };

export interface WarmupRule {
  minMs: number;
  maxMs: number;
}

/** The warm-up windows' length: the run's window, at most WARMUP_WINDOW_MAX_MS. */
export const warmupWindowMs = (windowMs: number): number => Math.min(windowMs, WARMUP_WINDOW_MAX_MS);

/**
 * Runs warm-up windows (`window(i)`, the i-th) until the rule stops them; a window that failed ends it
 * with its problem. `nowMs` is a monotonic clock.
 */
export async function warmUp(
  arm: Warmup['arm'],
  rule: WarmupRule,
  window: (index: number) => Promise<WarmupWindow>,
  nowMs: () => number,
): Promise<{ warmup: Warmup; problem: null } | { warmup: null; problem: string }> {
  const startMs = nowMs();
  const points: WarmupPoint[] = [];
  for (;;) {
    const w = await window(points.length);
    if (w.stats === null) return { warmup: null, problem: w.problem };
    points.push({ outputTokensPerS: w.stats.outputTokensPerS, ttftP50Ms: w.stats.ttft.p50Ms });
    const durationMs = nowMs() - startMs;
    const stop = warmupStop(points, durationMs, rule);
    if (stop !== null) return { warmup: { arm, windows: points.length, durationMs, ...stop, points }, problem: null };
  }
}

/** The warning a warm-up cut at its maximum leaves in the run, or null. */
export function warmupWarning(group: string, w: Warmup): string | null {
  if (w.stop !== 'max') return null;
  const why =
    w.trend === null
      ? 'too few windows for the trend test'
      : `a trend in the last windows' ${[...(w.trend.tokensP < WARMUP_TREND_ALPHA ? ['throughput'] : []), ...(w.trend.ttftP50P < WARMUP_TREND_ALPHA ? ['TTFT p50'] : [])].join(' and ') || 'figures'} (Mann–Kendall p ${w.trend.tokensP.toFixed(3)}, ${w.trend.ttftP50P.toFixed(3)})`;
  return `${group}, ${w.arm} arm: warm-up stopped at its maximum (${(w.durationMs / 1000).toFixed(1)} s, ${w.windows} windows) with ${why}: the server may not have been steady when measured (raise --warmup-max-s)`;
}

/** The warm-up rule a run followed, in words (runs before it: one window of each arm). */
export function warmupText(s: { warmupMs?: number; warmupMaxMs?: number }): string {
  if (s.warmupMs === undefined || s.warmupMs === 0) return 'one warm-up window of each arm not kept';
  return `each arm's warm-up until steady not kept (at least ${s.warmupMs / 1000} s, then until Mann–Kendall finds no trend at ${WARMUP_TREND_ALPHA * 100}% in the last ${WARMUP_TREND_WINDOWS} windows' output tokens/s and TTFT p50; at most ${(s.warmupMaxMs ?? WARMUP_MAX_S * 1000) / 1000} s)`;
}

/** One line per group: how long each arm's warm-up took and why it stopped. */
export function warmupLines(groups: ReadonlyArray<{ mode: string; copies: number; warmup?: Warmup[] }>): string[] {
  return groups
    .filter((g) => (g.warmup ?? []).length > 0)
    .map(
      (g) =>
        `- ${g.mode} ×${g.copies}: ${(g.warmup ?? []).map((w) => `${w.arm} ${(w.durationMs / 1000).toFixed(1)} s, ${w.windows} windows (${w.stop})`).join('; ')}`,
    );
}
