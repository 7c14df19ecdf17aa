/**
 * The workload protocol, version 2 (documented in the README; version 1 workloads are still accepted). A workload prints JSON lines on
 * stdout and nothing else; the harness writes JSON lines to its stdin.
 *
 *   workload → harness  {"event":"ready","protocol":1,"workload":"gemm","pid":123,...}
 *   harness → workload  {"cmd":"run","trial":"…","startAtUs":…,"durationMs":500|null,"iterations":N|null,"variant":{…},"load":null|{"kind":"poisson"|"constant","qps":…}}
 *   workload → harness  {"event":"result","trial":"…","windowStartUs":…,"windowEndUs":…,"iterations":…,"gpuMs":…,…}
 *                       with a load (version 2): latenciesMs from each request's scheduled time, and scheduleLagMs
 *   harness → workload  {"cmd":"exit"}   (or stdin closes: the workload exits either way)
 *   workload → harness  {"event":"error","message":"…"}   (then exits non-zero)
 *
 * Times are CLOCK_MONOTONIC microseconds, comparable across processes of one host.
 */
import { z } from 'zod';
import type { Variant, Work } from './spec.js';

export const PROTOCOL_VERSION = 2;
/** Versions a workload may speak: 1 knows no open-loop load. */
export const PROTOCOL_VERSIONS = [1, 2] as const;

const finite = z.number().refine(Number.isFinite, 'must be a finite number');

export const ReadyMessageSchema = z.object({
  event: z.literal('ready'),
  protocol: z.union([z.literal(1), z.literal(2)]),
  workload: z.string(),
  pid: z.number().int(),
  device: z.string().nullish(),
  params: z.record(z.string(), z.unknown()).optional(),
});

export const ResultMessageSchema = z
  .object({
    event: z.literal('result'),
    trial: z.string(),
    windowStartUs: finite,
    windowEndUs: finite,
    iterations: z.number().int().nonnegative(),
    gpuMs: finite.pipe(z.number().nonnegative()),
    latenciesMs: z.array(finite.pipe(z.number().nonnegative())).default([]),
    chunkIterations: z.number().int().positive().default(1),
    /** Open loop only: how late the generator issued requests while its worker was idle, ms: p99 and max. */
    scheduleLagMs: finite.pipe(z.number().nonnegative()).optional(),
    scheduleLagMaxMs: finite.pipe(z.number().nonnegative()).optional(),
    /** Open loop only: requests still queued a window after the window ended, not served. */
    droppedRequests: z.number().int().nonnegative().optional(),
  })
  .refine((m) => m.windowEndUs >= m.windowStartUs, 'windowEndUs is before windowStartUs');

export const ErrorMessageSchema = z.object({ event: z.literal('error'), message: z.string() });

const MessageSchema = z.discriminatedUnion('event', [ReadyMessageSchema, ResultMessageSchema, ErrorMessageSchema]);
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

/** The run command for one trial; `clients` is how many clients are released together (informational). */
export function runCommand(
  trial: string,
  startAtUs: number,
  work: Work,
  variant: Variant,
  clients = 1,
  load: Load | null = null,
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
  });
}

/** Open-loop arrivals for one client: Poisson (exponential gaps) or evenly spaced, requests per second. */
export interface Load {
  kind: 'poisson' | 'constant';
  qps: number;
}

export const EXIT_COMMAND = JSON.stringify({ cmd: 'exit' });

function clip(text: string): string {
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
}
