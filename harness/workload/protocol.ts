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

// Each message and command carries its description for workloads/protocol.schema.json, which is generated
// from these definitions (npm run schema; workload/protocol-json-schema.ts): the id names its $defs entry.
const finite = z.number().refine(Number.isFinite, 'must be a finite number');
const nonnegative = z.number().nonnegative().refine(Number.isFinite, 'must be a finite number');
const positive = z.number().positive().refine(Number.isFinite, 'must be a finite number');

export const ReadyMessageSchema = z
  .object({
    event: z.literal('ready'),
    protocol: z
      .union([z.literal(1), z.literal(2), z.literal(3)])
      .describe('The protocol version the workload speaks; 2 takes open-loop loads, 3 tenants.'),
    workload: z.string().describe("The workload's name, for reports."),
    pid: z.number().int().describe("The workload's process id."),
    device: z.string().nullish().describe('The GPU the workload runs on, as it names it.'),
    params: z.record(z.string(), z.unknown()).optional().describe("The workload's parameters, for the record."),
    tenants: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        'Protocol 3: the tenants the process built: GPUSHARE_TENANTS, or 1 when it is unset. A process that built a different number is not measured: gpushare skips its comparison with the reason.',
      ),
    memoryReservedMiB: nonnegative
      .nullish()
      .describe(
        "Protocol 3: what the process's own allocator holds once warmed up, every tenant together (PyTorch: torch.cuda.memory_reserved()), MiB; with nvidia-smi's rise it gives the context and runtime overhead.",
      ),
    graphPoolMiB: nonnegative
      .nullish()
      .describe(
        'Protocol 3: the part of memoryReservedMiB in CUDA-graph pools, MiB; null where the framework cannot say.',
      ),
    tenantSms: z
      .array(z.array(z.number().int().nonnegative()))
      .optional()
      .describe(
        "Protocol 3, green contexts: the ids of the SMs each tenant's work ran on (checked disjoint by the workload).",
      ),
    holds: z
      .boolean()
      .optional()
      .describe(
        "The process waits for start when started with GPUSHARE_HOLD=1 (gpushare_protocol.serve does): gpushare may then start its next comparison's processes of the same command while one measures.",
      ),
    switches: z
      .boolean()
      .optional()
      .describe(
        'The process takes switch (a process running gpushare_protocol.serve does): gpushare may then serve the next comparison of the same mode and processes with it instead of starting new ones.',
      ),
    released: z
      .object({ workload: z.string(), memoryReservedMiB: nonnegative.nullable(), leftMiB: nonnegative.nullable() })
      .optional()
      .describe(
        "After a switch: the previous workload's name, what its allocator held (MiB) and what the process still held once it was released (MiB); null where the framework cannot say.",
      ),
  })
  .meta({ id: 'ready', description: 'Printed once, after init and warm-up: the workload can take run commands.' });

/** What the protocol's window loop costs a request beyond a bare loop of the same step, measured back to back in the process. */
export const LoopOverheadSchema = z
  .object({
    bareUsPerRequest: positive.describe("The bare loop's time per request, µs (median over the pairs)."),
    loopUsPerRequest: positive.describe(
      "The protocol's window loop's time per request as a trial's window pays it: its per-request part plus its once-per-window cost spread over the window's requests, µs (median over the pairs).",
    ),
    overheadPct: finite.describe(
      'Median over the pairs of (loop − bare) ÷ bare, %; negative where the difference is noise.',
    ),
    overheadPctLow: finite
      .optional()
      .describe(
        "The smallest pair's difference, %: with overheadPctHigh an interval that holds the median at 99.2% with 8 pairs (absent before 8 pairs).",
      ),
    overheadPctHigh: finite.optional().describe("The largest pair's difference, %."),
    pairs: z.number().int().positive(),
    requestsPerBlock: z.number().int().positive(),
    windowMs: positive
      .optional()
      .describe(
        "The trial window the loop's once-per-window cost is spread over, ms (absent before 2026-11-27 08:40 UTC).",
      ),
    windowOnceUs: finite
      .optional()
      .describe(
        "The loop's once-per-window cost (its CUDA events, entering its stream), µs, median over the loop's blocks.",
      ),
  })
  .meta({
    id: 'loopOverhead',
    description:
      "What the protocol's window loop costs a request beyond a bare loop of the same step (step, synchronize), measured back to back in ABBA pairs after a window where the run command asked (loopCheckMs).",
  });
export type LoopOverhead = z.infer<typeof LoopOverheadSchema>;

/** What one window measured: of the process, or of one of its tenants. */
const resultFields = {
  windowStartUs: finite.describe('When the work began, CLOCK_MONOTONIC µs.'),
  windowEndUs: finite.describe('When the work ended, CLOCK_MONOTONIC µs.'),
  iterations: z.number().int().nonnegative().describe('Iterations (requests) completed in the window.'),
  gpuMs: nonnegative.describe('GPU time of the work from CUDA events, ms (0 for an open-loop window).'),
  latenciesMs: z
    .array(nonnegative)
    .default([])
    .describe(
      "Wall time of each synchronized chunk of the window, ms; with a load, each request's latency from its scheduled time.",
    ),
  chunkIterations: z.number().int().positive().default(1).describe('Iterations per latency entry.'),
  scheduleLagMs: nonnegative
    .optional()
    .describe('Open loop only: p99 of how late requests started that were due while the workload was idle, ms.'),
  scheduleLagMaxMs: nonnegative.optional().describe('Open loop only: the largest such lag, ms.'),
  droppedRequests: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe('Open loop only: requests still queued a window after the window ended, not served.'),
  stepHostUs: nonnegative
    .optional()
    .describe(
      "Host time of one step() call (one request enqueued), mean, µs: with tenants on threads of one process it grows with the wait for Python's GIL.",
    ),
  /** Asked for (the run command's loopCheckMs). */
  loopOverhead: LoopOverheadSchema.optional(),
};
const inOrder = (m: { windowStartUs: number; windowEndUs: number }) => m.windowEndUs >= m.windowStartUs;
const BACKWARDS = 'windowEndUs is before windowStartUs';

/** One tenant's share of a result (protocol 3). */
export const TenantResultSchema = z
  .object({ tenant: z.number().int().nonnegative().describe('The tenant, 0 to tenants − 1.'), ...resultFields })
  .refine(inOrder, BACKWARDS)
  .meta({ id: 'tenantResult', description: "Protocol 3: one tenant's share of a result." });
export type TenantResult = z.infer<typeof TenantResultSchema>;

export const ResultMessageSchema = z
  .object({
    event: z.literal('result'),
    trial: z.string().describe("The run command's trial, repeated."),
    ...resultFields,
    tenants: z
      .array(TenantResultSchema)
      .optional()
      .describe(
        'Protocol 3, for a run command that named tenants: one entry per tenant named; the fields above then describe the process as a whole (its span, iterations and GPU time summed, no latencies).',
      ),
  })
  .refine(inOrder, BACKWARDS)
  .meta({
    id: 'result',
    description:
      "The answer to one run command. windowEndUs must not be before windowStartUs (the harness checks; JSON Schema cannot say it). The window must also be plausible for the trial: see the README's workload protocol.",
  });

export const ErrorMessageSchema = z
  .object({
    event: z.literal('error'),
    message: z.string(),
    unsupported: z
      .boolean()
      .optional()
      .describe(
        'This machine cannot run what was asked (e.g. green contexts where the driver or PyTorch has none, or SMs that cannot be split into that many groups): gpushare records the comparison as skipped with the message, not failed.',
      ),
  })
  .meta({ id: 'error', description: 'A failure the workload can name, printed before it exits non-zero.' });

/** A held process (HOLD_ENV) has imported its libraries and waits for start: its core is free again. */
export const HoldingMessageSchema = z.object({ event: z.literal('holding'), pid: z.number().int() }).meta({
  id: 'holding',
  description:
    'Printed only by a process started with GPUSHARE_HOLD=1 (gpushare_protocol.serve does it), once it has imported its libraries and run prepare, as it waits for start: nothing of it touches the GPU yet, and gpushare may start another prestarted process on the core it imported on.',
});

export const WorkloadMessageSchema = z
  .discriminatedUnion('event', [ReadyMessageSchema, ResultMessageSchema, ErrorMessageSchema, HoldingMessageSchema])
  .meta({ id: 'workloadMessage', description: 'A line a workload prints on stdout.' });
const MessageSchema = WorkloadMessageSchema;

const LoadSchema = z.object({
  kind: z.enum(['poisson', 'constant']).describe('poisson: exponential gaps; constant: even spacing.'),
  qps: z.number().positive().describe('Requests per second.'),
});

/**
 * Who runs beside a client in a window (gpushare mix): informational for a real workload, which may
 * ignore it; gpushare's simulator plays the contention from it. qps null: a closed-loop aggressor.
 */
const BesideSchema = z.object({
  workload: z.string(),
  threadPct: z.number().nullable(),
  qps: z.number().nullable(),
});
export type Beside = z.infer<typeof BesideSchema>;

export const RunCommandSchema = z
  .object({
    cmd: z.literal('run'),
    trial: z.string().describe("The trial's id, to repeat in the result."),
    startAtUs: z.number().describe('When to start, CLOCK_MONOTONIC µs: the clients of a trial start together.'),
    durationMs: z.number().positive().nullable().describe('A timed window, ms; null for fixed work.'),
    iterations: z
      .number()
      .int()
      .positive()
      .nullable()
      .describe("Fixed work, iterations; null for a timed window, or for the workload's default."),
    variant: z
      .object({
        streams: z.number().int().positive().describe('CUDA streams to spread the iterations over (round robin).'),
        pinned: z
          .boolean()
          .optional()
          .describe('Page-locked host memory (false only in the pageable arms of workloads that copy from the host).'),
        whole: z
          .literal(true)
          .optional()
          .describe(
            "A green process's arm of one tenant alone on the whole GPU: its twin outside any green context runs it (the baseline every mode shares).",
          ),
      })
      .describe("The trial's settings."),
    loopCheckMs: z
      .number()
      .positive()
      .optional()
      .describe(
        "After the window, check the protocol's own loop for about this long: a bare loop of the step against the window loop, back to back; the result then carries loopOverhead. Sent where the process runs alone.",
      ),
    clients: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('How many clients the trial releases together (for information).'),
    load: LoadSchema.optional().describe('Protocol 2: open-loop arrivals, per client.'),
    tenants: z
      .array(z.number().int().nonnegative())
      .min(1)
      .optional()
      .describe(
        'Protocol 3: the tenants released (0 to tenants − 1, each once); absent: a process of one, as in versions 1 and 2.',
      ),
    beside: z
      .array(BesideSchema)
      .optional()
      .describe('gpushare mix: the workloads released beside this one (informational; the simulator plays them).'),
    tenantLoads: z
      .record(z.string(), LoadSchema)
      .optional()
      .describe("gpushare mix, one process of tenants: each tenant's open-loop load, by tenant index."),
    tenantBeside: z
      .record(z.string(), z.array(BesideSchema))
      .optional()
      .describe('gpushare mix, one process of tenants: who runs beside each tenant, by tenant index.'),
  })
  .meta({
    id: 'run',
    description:
      "Run one trial: wait until startAtUs, then run for durationMs (a timed window), or run iterations of fixed work (null: the workload's default), on variant.streams CUDA streams; with a load, serve requests at arrival times the workload generates itself, for durationMs; with tenants (protocol 3), each tenant named does so on its own stream and thread, all released together.",
  });
/** A run command as the harness writes it. */
export type RunCommand = z.input<typeof RunCommandSchema>;

export const ExitCommandSchema = z
  .object({ cmd: z.literal('exit') })
  .meta({ id: 'exit', description: 'Exit now, with status 0.' });

export const StartCommandSchema = z.object({ cmd: z.literal('start') }).meta({
  id: 'start',
  description:
    'Sent only to a process gpushare started with GPUSHARE_HOLD=1 in its environment (a built-in workload prestarted while another comparison measures): it imports its libraries (and runs prepare), says holding, then waits for start (or exit) before it touches the GPU; after start it initialises CUDA, builds, warms up and prints ready as any workload. A workload that does not know GPUSHARE_HOLD is never sent start.',
});

export const SwitchCommandSchema = z
  .object({
    cmd: z.literal('switch'),
    argv: z.array(z.string()).min(1).describe('The next workload: its script and arguments (no interpreter).'),
  })
  .meta({
    id: 'switch',
    description:
      "Sent only to a process whose ready line said switches, between comparisons of one mode and one set of processes: the workload releases what it built (its models, buffers and CUDA graphs, then the allocator's cache) and runs the script argv names in the same process, which keeps its imports and CUDA context; that workload builds, warms up and prints ready as any workload, with released.",
  });

export const HarnessCommandSchema = z
  .discriminatedUnion('cmd', [RunCommandSchema, ExitCommandSchema, StartCommandSchema, SwitchCommandSchema])
  .meta({ id: 'harnessCommand', description: "A line gpushare writes to the workload's stdin." });

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
export function runCommandOf(
  trial: string,
  startAtUs: number,
  work: Work,
  variant: Variant,
  clients = 1,
  load: Load | null = null,
  tenants: readonly number[] | null = null,
  loopCheckMs: number | null = null,
): RunCommand {
  return {
    cmd: 'run',
    trial,
    startAtUs,
    durationMs: work.kind === 'fixed-duration' ? work.durationMs : null,
    iterations: work.kind === 'fixed-work' ? work.iterations : null,
    variant,
    clients,
    ...(load !== null ? { load } : {}),
    ...(tenants !== null ? { tenants: [...tenants] } : {}),
    ...(loopCheckMs !== null ? { loopCheckMs } : {}),
  };
}

/** The line a run command is sent as. */
export function encodeRunCommand(command: RunCommand): string {
  return JSON.stringify(command);
}

/** runCommandOf as the line it is sent as. */
export function runCommand(...args: Parameters<typeof runCommandOf>): string {
  return encodeRunCommand(runCommandOf(...args));
}

/**
 * How long a process runs the check of its own loop (a bare loop of its step against the protocol's,
 * back to back) when a run command asks for it, after that trial's window: 8 ABBA pairs of 25 ms blocks.
 */
export const LOOP_CHECK_MS = 400;
/** A loop that costs more than this share of a request (%) is flagged: it would bias a slowdown. */
export const LOOP_OVERHEAD_LIMIT_PCT = 1;

/** Open-loop arrivals for one client: Poisson (exponential gaps) or evenly spaced, requests per second. */
/** Open-loop arrivals, per client (protocol 2). */
export type Load = z.infer<typeof LoadSchema>;

export const EXIT_COMMAND = JSON.stringify({ cmd: 'exit' } satisfies z.input<typeof ExitCommandSchema>);
/**
 * A process started with HOLD_ENV=1 (gpushare_protocol.serve) imports its libraries, then waits for this
 * before it touches the GPU: a prestarted client starts CUDA only when the harness says so. Only
 * built-in workloads are held; a process that does not know HOLD_ENV is never sent it.
 */
export const START_COMMAND = JSON.stringify({ cmd: 'start' } satisfies z.input<typeof StartCommandSchema>);
export const HOLD_ENV = 'GPUSHARE_HOLD';

/**
 * Tells a process whose ready line said `switches` to release its workload and serve the one `argv`
 * names (script and arguments, no interpreter) in the same process: imports and CUDA context carry over.
 */
export function switchCommand(argv: readonly string[]): string {
  return JSON.stringify({ cmd: 'switch', argv: [...argv] } satisfies z.input<typeof SwitchCommandSchema>);
}
/** The cores a held process imports on (the measuring clients' are not among them), comma-separated. */
export const HOLD_CPUS_ENV = 'GPUSHARE_HOLD_CPUS';

function clip(text: string): string {
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
}
