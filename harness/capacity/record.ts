/** What `gpushare capacity` records (capacity.json): every step of every search, as measured. */
import { z } from 'zod';
import { MpsDaemonRecordSchema } from '../record/daemon-record.js';
import { loadRecord, machineRecordHeaderSchema } from '../record/record-file.js';
import { type TimeAccount, TimeAccountSchema, timeAccount, WallSpanSchema } from '../session/time-account.js';
import { StepSchema } from '../workload/open-loop.js';
import { WorkloadSpecSchema } from '../workload/spec.js';

export const CAPACITY_SCHEMA_ID = 'gpushare-capacity/1';

/** timeslice and mps: a process per client; streams and green: one process of N tenants (protocol 3). */
export const CAPACITY_MODES = ['timeslice', 'mps', 'streams', 'green'] as const;
const ModeSchema = z.enum(CAPACITY_MODES);
/** A mode of capacity. */
export type CapacityMode = z.infer<typeof ModeSchema>;

/** The settings of a capacity run. */
const CapacitySettingsSchema = z.object({
  sloP99Ms: z.number(),
  modes: z.array(ModeSchema),
  clientCounts: z.array(z.number().int().positive()),
  workload: WorkloadSpecSchema,
  load: z.enum(['poisson', 'constant']),
  windowMs: z.number(),
  startQps: z.number(),
  tolerance: z.number(),
  maxSteps: z.number(),
});
export type CapacitySettings = z.infer<typeof CapacitySettingsSchema>;

const pointKey = { mode: ModeSchema, clients: z.number().int().positive() };

/**
 * One mode and client count: its steps, or why it could not run (a client that never became ready)
 * or did not finish its search (a signal; the steps before it stand).
 */
/** When the point's clients were started, all said ready and had exited, CLOCK_MONOTONIC µs (null: never). Absent before 2026-11-24. */
const ClientSpanSchema = z.object({
  startedUs: z.number(),
  readyUs: z.number().nullable(),
  endUs: z.number().nullable(),
});
const pointFields = { ...pointKey, clientSpan: ClientSpanSchema.optional() };
const CapacityPointSchema = z.union([
  z.object({ ...pointFields, status: z.literal('measured'), steps: z.array(StepSchema) }),
  z.object({
    ...pointFields,
    status: z.enum(['skipped', 'failed', 'interrupted']),
    reason: z.string(),
    steps: z.array(StepSchema),
  }),
]);
export type CapacityPoint = z.infer<typeof CapacityPointSchema>;

/** capacity.json's schema, the one source of its types; checked when a record is read. */
export const CapacityRunSchema = z.object({
  ...machineRecordHeaderSchema(CAPACITY_SCHEMA_ID),
  settings: CapacitySettingsSchema,
  points: z.array(CapacityPointSchema),
  warnings: z.array(z.string()),
  /** Every MPS daemon the run started, recorded before it started. Absent before 2026-11-24. */
  daemons: z.array(MpsDaemonRecordSchema).optional(),
  /** The point being measured when the record was saved, or null between points: --resume measures it again. */
  current: z.object(pointKey).nullable().optional(),
  /** Each --resume: when, and how many finished points it kept. */
  resumes: z.array(z.object({ at: z.string(), pointsKept: z.number().int().nonnegative() })).optional(),
  /** Each start of the command (the run, each --resume), CLOCK_MONOTONIC µs. Absent before 2026-11-24. */
  wallSpans: z.array(WallSpanSchema).optional(),
  /** Where the wall time went (session/time-account.ts), each point a part. Absent before 2026-11-24. */
  timeAccount: TimeAccountSchema.optional(),
});
export type CapacityRun = z.infer<typeof CapacityRunSchema>;

/** A capacity run's time account: each point's clients a part, its steps' windows its windows; null before wall spans were recorded. */
export function capacityTimeAccount(run: Pick<CapacityRun, 'points' | 'wallSpans'>): TimeAccount | null {
  if (run.wallSpans === undefined) return null;
  const parts = run.points.flatMap((p) =>
    p.clientSpan === undefined
      ? []
      : [
          {
            id: `${p.mode}@${p.clients}`,
            ...p.clientSpan,
            // Steps record their window's length, not its place: laid end to end from ready.
            windows: p.steps.map((step) => ({ startUs: 0, endUs: step.windowS * 1e6 })),
          },
        ],
  );
  return timeAccount(run.wallSpans, parts);
}

/** The capacity run saved in `dir`, read through its schema, or null when `dir` holds none. */
export async function loadCapacityRun(dir: string): Promise<CapacityRun | null> {
  const run: CapacityRun | null = await loadRecord(dir, 'capacity', CapacityRunSchema);
  return run;
}
