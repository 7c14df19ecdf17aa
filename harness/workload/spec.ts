/** What the harness asks of a workload process: which command, and what each trial asks of it. */
import path from 'node:path';
import { z } from 'zod';

const ParamValue = z.union([z.string(), z.number(), z.boolean()]);

/** A workload as the harness launches it: `argv` is exact (never given to a shell). */
export const WorkloadSpecSchema = z.object({
  name: z.string(),
  builtin: z.boolean(),
  argv: z.array(z.string()),
  params: z.record(z.string(), ParamValue),
});
export type WorkloadSpec = z.infer<typeof WorkloadSpecSchema>;

/** Per-trial settings sent to a client with its run command. */
export const VariantSchema = z.object({
  streams: z.number().int().positive(),
  pinned: z.boolean().optional(),
  /** A green process's tenant alone on the whole GPU (its twin outside any green context): every mode's baseline. */
  whole: z.literal(true).optional(),
});
export type Variant = z.infer<typeof VariantSchema>;
/** What a trial asks of its clients: a fixed amount of work, or a fixed-duration window. */
export const WorkSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('fixed-work'), iterations: z.number().int().positive().nullable() }),
  z.object({ kind: z.literal('fixed-duration'), durationMs: z.number().positive() }),
]);
export type Work = z.infer<typeof WorkSchema>;

/** Exact statistics of the wall time of each synchronized chunk of a window, ms (per request when chunks are 1 iteration). */
export const LatencySummarySchema = z.object({
  count: z.number().int().positive(),
  meanMs: z.number().nonnegative(),
  p50Ms: z.number().nonnegative(),
  p90Ms: z.number().nonnegative(),
  p99Ms: z.number().nonnegative(),
  maxMs: z.number().nonnegative(),
});
export type LatencySummary = z.infer<typeof LatencySummarySchema>;

/** A workload's command as a report shows it: built-in scripts by their place in the package, never a machine's absolute path. */
export function workloadText(w: WorkloadSpec): string {
  const [, script = '', ...args] = w.argv;
  return w.builtin ? [`workloads/${path.basename(script)}`, ...args].join(' ') : w.argv.join(' ');
}
