/**
 * The workload protocol, version 3 (documented in the README; versions 1 and 2 are still accepted). A workload prints JSON lines on
 * stdout and nothing else; the harness writes JSON lines to its stdin.
 *
 *   workload → harness  {"event":"ready","protocol":3,"workload":"gemm","pid":123,"tenants":1,"memoryReservedMiB":…,...}
 *   harness → workload  {"cmd":"run","trial":"…","startAtUs":…,"durationMs":500|null,"iterations":N|null,"variant":{…},"load":null|{"kind":"poisson"|"constant","qps":…},"tenants":[0,1,…]?}
 *   workload → harness  {"event":"result","trial":"…","windowStartUs":…,"windowEndUs":…,"iterations":…,"gpuMs":…,…,"tenants":[{"tenant":0,…},…]?}
 *                       with a load (version 2): latenciesMs from each request's scheduled time, and scheduleLagMs
 *   harness → workload  {"cmd":"exit"}   (or stdin closes: the workload exits either way)
 *   workload → harness  {"event":"holding","pid":123}  (only with GPUSHARE_HOLD=1: imported, waiting for start)
 *   harness → workload  {"cmd":"start"}  (first, and only to a process started with GPUSHARE_HOLD=1)
 *   harness → workload  {"cmd":"switch","argv":["…/gemm.py",…]}  (only to a process that said switches: it serves that workload next)
 *   workload → harness  {"event":"error","message":"…","unsupported":true?}   (then exits non-zero)
 *
 * Version 3: a process may hold several tenants (GPUSHARE_TENANTS=N in its environment; each tenant a
 * model instance with its own stream and host thread): its ready line says how many it built, a run
 * command names the tenants it releases, and the result carries one entry per tenant. An error marked
 * unsupported is something this machine cannot do (green contexts here): skipped, not failed.
 *
 * Times are CLOCK_MONOTONIC microseconds, comparable across processes of one host.
 */
import { z } from 'zod';
import type { Variant, Work } from './spec.js';

export const PROTOCOL_VERSION = 3;
/** Versions a workload may speak: 1 knows no open-loop load, 2 no tenants. */
export const PROTOCOL_VERSIONS = [1, 2, 3] as const;

/** The environment variable that asks a workload process for N tenants (protocol 3). */
export const TENANTS_ENV = 'GPUSHARE_TENANTS';
/** The environment variable that puts each tenant in a green context of that share of the SMs, % ("even": an even split). */
export const GREEN_ENV = 'GPUSHARE_GREEN_SM_PCT';

const finite = z.number().refine(Number.isFinite, 'must be a finite number');

const nonnegative = finite.pipe(z.number().nonnegative());

export const ReadyMessageSchema = z.object({
  event: z.literal('ready'),
  protocol: z.union([z.literal(1), z.literal(2), z.literal(3)]),
  workload: z.string(),
  pid: z.number().int(),
  device: z.string().nullish(),
  params: z.record(z.string(), z.unknown()).optional(),
  /** Protocol 3: the tenants the process built (1 unless GPUSHARE_TENANTS asked for more). */
  tenants: z.number().int().positive().optional(),
  /** Protocol 3: what the process's own allocator holds once warmed up (PyTorch: torch.cuda.memory_reserved()), MiB. */
  memoryReservedMiB: nonnegative.nullish(),
  /** Protocol 3: the part of it in CUDA-graph pools, MiB; null where the framework cannot say. */
  graphPoolMiB: nonnegative.nullish(),
  /** Protocol 3, green contexts: the SM ids each tenant's work ran on, checked disjoint. */
  tenantSms: z.array(z.array(z.number().int().nonnegative())).optional(),
  /** gpushare_protocol.serve: started with HOLD_ENV=1 the process waits for start (held), so it may be prestarted. */
  holds: z.boolean().optional(),
  /** gpushare_protocol.serve: the process takes a switch command, so the next comparison of its mode and clients may reuse it. */
  switches: z.boolean().optional(),
  /** After a switch: what the previous workload's allocator held and what it still held once released, MiB. */
  released: z
    .object({ workload: z.string(), memoryReservedMiB: nonnegative.nullable(), leftMiB: nonnegative.nullable() })
    .optional(),
});

/** What the protocol's window loop costs a request beyond a bare loop of the same step, measured back to back in the process. */
export const LoopOverheadSchema = z.object({
  /** Per request, µs: a bare loop (step, synchronize) and the protocol's window loop as a trial's window pays it, medians over the pairs. */
  bareUsPerRequest: finite.pipe(z.number().positive()),
  loopUsPerRequest: finite.pipe(z.number().positive()),
  /** The median over ABBA pairs of (loop − bare) ÷ bare, %: negative when the difference is noise. */
  overheadPct: finite,
  /** The smallest and largest pair's difference, %: with 8 pairs an interval holding the median at 99.2% (absent before 8 pairs). */
  overheadPctLow: finite.optional(),
  overheadPctHigh: finite.optional(),
  pairs: z.number().int().positive(),
  requestsPerBlock: z.number().int().positive(),
  /** The trial window the loop's once-per-window cost is spread over, ms, and that cost, µs (absent before 2026-11-27 08:40 UTC). */
  windowMs: finite.pipe(z.number().positive()).optional(),
  windowOnceUs: finite.optional(),
});
export type LoopOverhead = z.infer<typeof LoopOverheadSchema>;

/** What one window measured: of the process, or of one of its tenants. */
const resultFields = {
  windowStartUs: finite,
  windowEndUs: finite,
  iterations: z.number().int().nonnegative(),
  gpuMs: nonnegative,
  latenciesMs: z.array(nonnegative).default([]),
  chunkIterations: z.number().int().positive().default(1),
  /** Open loop only: how late the generator issued requests while its worker was idle, ms: p99 and max. */
  scheduleLagMs: nonnegative.optional(),
  scheduleLagMaxMs: nonnegative.optional(),
  /** Open loop only: requests still queued a window after the window ended, not served. */
  droppedRequests: z.number().int().nonnegative().optional(),
  /** Host time of one step() call (one request enqueued), mean, µs: with tenants on threads, the GIL's share shows here. */
  stepHostUs: nonnegative.optional(),
  /** Asked for (the run command's loopCheckMs): what the protocol's window loop costs a request beyond a bare loop of the same step. */
  loopOverhead: LoopOverheadSchema.optional(),
};
const inOrder = (m: { windowStartUs: number; windowEndUs: number }) => m.windowEndUs >= m.windowStartUs;
const BACKWARDS = 'windowEndUs is before windowStartUs';

/** One tenant's share of a result (protocol 3). */
export const TenantResultSchema = z
  .object({ tenant: z.number().int().nonnegative(), ...resultFields })
  .refine(inOrder, BACKWARDS);
export type TenantResult = z.infer<typeof TenantResultSchema>;

export const ResultMessageSchema = z
  .object({
    event: z.literal('result'),
    trial: z.string(),
    ...resultFields,
    /** Protocol 3, a command that named tenants: one entry per tenant named; the fields above are the process's as a whole. */
    tenants: z.array(TenantResultSchema).optional(),
  })
  .refine(inOrder, BACKWARDS);

export const ErrorMessageSchema = z.object({
  event: z.literal('error'),
  message: z.string(),
  /** This machine cannot run what was asked (e.g. green contexts): the comparison is skipped with the message, not failed. */
  unsupported: z.boolean().optional(),
});

/** A held process (HOLD_ENV) has imported its libraries and waits for start: its core is free again. */
export const HoldingMessageSchema = z.object({ event: z.literal('holding'), pid: z.number().int() });

const MessageSchema = z.discriminatedUnion('event', [
  ReadyMessageSchema,
  ResultMessageSchema,
  ErrorMessageSchema,
  HoldingMessageSchema,
]);
/** A message a workload may print. */
export type WorkloadMessage = z.infer<typeof MessageSchema>;
export type ResultMessage = z.infer<typeof ResultMessageSchema>;
export type ReadyMessage = z.infer<typeof ReadyMessageSchema>;

export type ParsedLine = { ok: true; message: WorkloadMessage } | { ok: false; error: string };

/** Parses one stdout line; anything that is not a valid protocol message is an error saying why. */
export function parseWorkloadLine(line: string): ParsedLine {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { ok: false, error: `printed a line that is not JSON: "${clip(line)}"` };
  }
  const parsed = MessageSchema.safeParse(value);
  if (parsed.success) return { ok: true, message: parsed.data };
  const issue = parsed.error.issues[0];
  const where = issue && issue.path.length > 0 ? `field "${issue.path.join('.')}": ` : '';
  return {
    ok: false,
    error: `printed an invalid protocol message (${where}${issue?.message ?? 'invalid'}): "${clip(line)}"`,
  };
}

/**
 * The run command for one trial; `clients` is how many clients are released together (informational);
 * `tenants`, the tenants of the process it releases (protocol 3), null for a process of one.
 */
export function runCommand(
  trial: string,
  startAtUs: number,
  work: Work,
  variant: Variant,
  clients = 1,
  load: Load | null = null,
  tenants: readonly number[] | null = null,
  loopCheckMs: number | null = null,
): string {
  return JSON.stringify({
    cmd: 'run',
    trial,
    startAtUs,
    durationMs: work.kind === 'fixed-duration' ? work.durationMs : null,
    iterations: work.kind === 'fixed-work' ? work.iterations : null,
    variant,
    clients,
    ...(load !== null ? { load } : {}),
    ...(tenants !== null ? { tenants } : {}),
    ...(loopCheckMs !== null ? { loopCheckMs } : {}),
  });
}

/**
 * How long a process runs the check of its own loop (a bare loop of its step against the protocol's,
 * back to back) when a run command asks for it, after that trial's window: 8 ABBA pairs of 25 ms blocks.
 */
export const LOOP_CHECK_MS = 400;
/** A loop that costs more than this share of a request (%) is flagged: it would bias a slowdown. */
export const LOOP_OVERHEAD_LIMIT_PCT = 1;

/** Open-loop arrivals for one client: Poisson (exponential gaps) or evenly spaced, requests per second. */
export interface Load {
  kind: 'poisson' | 'constant';
  qps: number;
}

export const EXIT_COMMAND = JSON.stringify({ cmd: 'exit' });
/**
 * A process started with HOLD_ENV=1 (gpushare_protocol.serve) imports its libraries, then waits for this
 * before it touches the GPU: a prestarted client starts CUDA only when the harness says so. Only
 * built-in workloads are held; a process that does not know HOLD_ENV is never sent it.
 */
export const START_COMMAND = JSON.stringify({ cmd: 'start' });
export const HOLD_ENV = 'GPUSHARE_HOLD';

/**
 * Tells a process whose ready line said `switches` to release its workload and serve the one `argv`
 * names (script and arguments, no interpreter) in the same process: imports and CUDA context carry over.
 */
export function switchCommand(argv: readonly string[]): string {
  return JSON.stringify({ cmd: 'switch', argv });
}
/** The cores a held process imports on (the measuring clients' are not among them), comma-separated. */
export const HOLD_CPUS_ENV = 'GPUSHARE_HOLD_CPUS';
/** Set by bench prestarting ahead: a held process imports at SCHED_IDLE where it may leave it again (CAP_SYS_NICE). */
export const HOLD_IDLE_ENV = 'GPUSHARE_HOLD_IDLE';

function clip(text: string): string {
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
}
