/**
 * A fleet run's section of serve.json (`bench --serve --fleet`): the fleet as expanded, its seed, the
 * schedule every window sent (written beside the record as a trace), and per server per window what it
 * got: the baseline (each kind's server alone) first, then each mode's windows.
 */
import { z } from 'zod';
import { FleetSearchSchema, StepTotalsSchema } from './fleet-capacity-record.js';
import { FitCheckSchema } from './fleet-fit.js';
import { ServerMemorySchema } from './fleet-memory.js';
import { type ServerWindow, ServerWindowSchema } from './fleet-window.js';

const figure = z.number().nonnegative().max(1e12);
const count = z.number().int().nonnegative().max(1e12);
const MAX_SERVERS = 1000;
const MAX_WINDOWS = 1000;

export const FleetServerRecordSchema = z.object({
  index: z.number().int().positive(),
  label: z.string(),
  kind: z.string(),
  model: z.string(),
  /** Its command line, placeholders unfilled (plan's files show it); absent from runs before it was kept. */
  command: z.string().optional(),
  memFraction: z.number().positive().max(1),
  /** CUDA_MPS_ACTIVE_THREAD_PERCENTAGE under mps-threads; `threadPctFrom` says whence. */
  threadPct: z.number().int().min(1).max(100),
  /** file: the fleet file's thread_pct; share: the server's share of the requests, as a whole percent (at least 1). */
  threadPctFrom: z.enum(['file', 'share']),
  share: z.number().nonnegative().max(1),
  /** Its mean rate, requests/s (a trace's: its requests over the window). */
  ratePerS: figure,
});
export type FleetServerRecord = z.infer<typeof FleetServerRecordSchema>;

export { type ServerWindow, ServerWindowSchema };

const StatusSchema = z.enum(['pending', 'measured', 'failed']);

/** A kind alone on the GPU (timeslice, no other server) with the arrivals its server `server` got. */
export const FleetBaselineSchema = z.object({
  kind: z.string(),
  server: z.number().int().positive(),
  status: StatusSchema,
  reason: z.string().nullable(),
  windows: z.array(ServerWindowSchema).max(MAX_WINDOWS),
});
export type FleetBaseline = z.infer<typeof FleetBaselineSchema>;

export const FleetRecordSchema = z.object({
  /** The fleet file as given. */
  file: z.string(),
  seed: z.number().int().nonnegative(),
  /** generated: from the file's rates and laws under `seed`; trace: the file's trace replayed. */
  source: z.enum(['generated', 'trace']),
  servers: z.array(FleetServerRecordSchema).min(1).max(MAX_SERVERS),
  /** The schedule each window sent, a trace (load/traffic/trace.ts) in the run directory: replay it with traffic.trace. */
  trace: z.object({ file: z.string(), requests: count }),
  baseline: z.array(FleetBaselineSchema).max(MAX_SERVERS),
  /**
   * Each mode's rounds (the run's groups hold its status): per window, each server's, and the whole fleet's
   * totals (its sent rate: the generator's ceiling check; absent from runs before it was kept).
   */
  windows: z
    .array(
      z.object({
        mode: z.string(),
        windows: z.array(z.array(ServerWindowSchema).max(MAX_SERVERS)).max(MAX_WINDOWS),
        totals: z.array(StepTotalsSchema).max(MAX_WINDOWS).optional(),
      }),
    )
    .max(8),
  /** Each server's device memory once warm, per mode and in the baseline (fleet-memory.ts); absent from runs before it was kept. */
  memory: z
    .array(ServerMemorySchema)
    .max(MAX_SERVERS * 8)
    .optional(),
  /** The pre-check before anything started (fleet-fit.ts): memory, MPS clients, host CPUs; absent from runs before it. */
  fit: z.array(FitCheckSchema).max(8).optional(),
  /** capacity --serve --fleet: the search for the largest fleet at the SLO, per mode; absent from bench's runs. */
  search: FleetSearchSchema.optional(),
});
export type FleetRecord = z.infer<typeof FleetRecordSchema>;
