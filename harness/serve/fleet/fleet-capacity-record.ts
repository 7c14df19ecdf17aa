/**
 * `capacity --serve --fleet`'s part of serve.json's fleet section: per mode, the largest size it could
 * hold at all (and what set it), and each step of the search for the largest fleet at the SLO: the
 * size, each kind's count, the servers started, stopped and kept from the step before, each kept
 * window per server, the fleet's totals per window (sent rate: the generator's ceiling check), the
 * verdict, and an early stop's reason.
 */
import { z } from 'zod';
import { ServerWindowSchema } from './fleet-window.js';

const figure = z.number().nonnegative().max(1e12);
const count = z.number().int().nonnegative().max(1e12);
const MAX_SERVERS = 1000;
const MAX_WINDOWS = 1000;
/** A mode's steps at most: the policy's (fleet-capacity.ts SEARCH_MAX_STEPS), with room. */
const MAX_STEPS = 64;

/** A server in a step's window: a fleet window's server and what the early stop reads, requests sent and completed per second. */
export const StepServerWindowSchema = ServerWindowSchema.extend({
  sentPerS: figure,
  completedPerS: figure,
});
export type StepServerWindow = z.infer<typeof StepServerWindowSchema>;

/** The whole fleet in one window of a step: the generator's ceiling is checked against these. */
export const StepTotalsSchema = z.object({
  sentPerS: figure,
  completedPerS: figure,
  outputTokensPerS: figure,
  e2eP50Ms: figure.nullable(),
  ttftP50Ms: figure.nullable(),
  lagP99Ms: figure,
});
export type StepTotals = z.infer<typeof StepTotalsSchema>;

export const FleetStepSchema = z.object({
  /** The fleet's size: servers of the file's kinds in its proportions (fleet-size.ts). */
  servers: z.number().int().positive().max(MAX_SERVERS),
  /** search: the bracket's next size; again: an unclear step measured once more; replicate: the boundary measured again. */
  why: z.enum(['search', 'again', 'replicate']),
  /** The step this one measured again (its verdict is over both steps' requests), or null. */
  again: z.number().int().nonnegative().nullable(),
  counts: z.array(z.object({ kind: z.string(), count })).max(MAX_SERVERS),
  /** Each server of the step by its index (1…): label, kind, requests/s sent to it. */
  fleet: z
    .array(
      z.object({
        label: z.string(),
        kind: z.string(),
        ratePerS: figure,
        /** Its MPS thread cap under mps-threads (fleet-measure.ts threadCap of the sized fleet); absent from runs before it. */
        threadPct: z.number().int().min(1).max(100).optional(),
      }),
    )
    .max(MAX_SERVERS),
  /** The whole fleet's scheduled rate, requests/s. */
  ratePerS: figure,
  /** Servers started for this step, stopped after the one before (not in it, or a changed thread cap), kept running. */
  started: count,
  stopped: count,
  kept: count,
  /** Warm-up windows run before the kept ones (not kept; a warm-up window that stopped the step early is kept). */
  warmupWindows: count,
  windows: z.array(z.array(StepServerWindowSchema).max(MAX_SERVERS)).max(MAX_WINDOWS),
  totals: z.array(StepTotalsSchema).max(MAX_WINDOWS),
  verdict: z.enum(['within', 'over', 'unclear']),
  /** Why the step ended early as over (its latency climbs without end; not every server started, or one stopped answering), or null. */
  earlyStop: z.string().nullable(),
});
export type FleetStep = z.infer<typeof FleetStepSchema>;

export const FleetSearchModeSchema = z.object({
  mode: z.string(),
  /** The largest size the mode can hold at all, and why (memory, the MPS client limit, --max-servers). */
  top: z.object({
    servers: z.number().int().nonnegative().max(MAX_SERVERS),
    limitedBy: z.enum(['memory', 'mps clients', 'max servers', 'size limit']),
    text: z.string(),
  }),
  steps: z.array(FleetStepSchema).max(MAX_STEPS),
});
export type FleetSearchMode = z.infer<typeof FleetSearchModeSchema>;

export const FleetSearchSchema = z.object({
  /** Measurements more of the highest passing and the lowest failing size, once bracketed (--replicates). */
  replicates: z.number().int().nonnegative().max(10),
  maxServers: z.number().int().positive().max(MAX_SERVERS).nullable(),
  modes: z.array(FleetSearchModeSchema).max(8),
});
export type FleetSearch = z.infer<typeof FleetSearchSchema>;
