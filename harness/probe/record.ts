/**
 * What `gpushare probe` records (probe.json): each probe's typed outcome with its raw measurements.
 * The claims ledger and the report are computed from it (analysis/claims.ts), never stored.
 */
import { PROBE_FILE } from '../record/kinds.js';
import { loadRecord, type RecordHeader } from '../record/record-file.js';
import type { Fingerprint } from '../system/nvidia/schema.js';

export const PROBE_SCHEMA_ID = 'gpushare-probe/1';

/** The sharing a probe ran under: plain time-slicing, or clients of gpushare's own MPS daemon. */
export type ProbeMode = 'timeslice' | 'mps';

/** A probe that could not run here (no MPS, no green contexts) or broke: the reason, quoted. */
export type NotMeasured = { status: 'skipped' | 'failed'; reason: string };

/** An allocation a role tried: `error` is the CUDA/PyTorch error when it failed. */
export interface AllocReply {
  mib: number;
  ok: boolean;
  error: string | null;
}

/** One client's fate in the fault probe. */
export interface Victim {
  survived: boolean;
  /** The error it got, or null when it kept running. */
  error: string | null;
}

/** An open-loop latency series: latency of each request from its scheduled time, ms. */
export interface LatencySeries {
  latenciesMs: number[];
  /** Requests sent more than one period after they were due: the generator fell behind its schedule. */
  lateRequests: number;
  periodMs: number;
}

export type ProbeOutcome =
  | ({ probe: 'memory'; mode: ProbeMode; limitMib: number | null } & (
      | {
          status: 'measured';
          victimBefore: AllocReply;
          hogTries: AllocReply[];
          hogHeldMib: number;
          hogError: string | null;
          victimDuring: AllocReply;
          victimKeptRunning: boolean;
          victimAfter: AllocReply;
        }
      | NotMeasured
    ))
  | ({ probe: 'sm-cap'; mode: 'mps' } & (
      | {
          status: 'measured';
          totalSms: number;
          points: Array<{ threadPercentage: number; sms: number; tflops: number }>;
        }
      | NotMeasured
    ))
  | ({ probe: 'fault'; mode: ProbeMode } & (
      | {
          status: 'measured';
          faulterError: string | null;
          victims: Victim[];
          /** get_server_status of the MPS server right after the fault and once a client was accepted again. */
          serverAfterFault: string | null;
          serverAfterRecovery: string | null;
          /** A new client after the fault: accepted or not, after how long and how many tries. */
          recovery: { accepted: boolean; afterMs: number; attempts: number; lastError: string | null };
        }
      | NotMeasured
    ))
  | ({ probe: 'client-limit'; mode: 'mps' } & (
      | { status: 'measured'; tried: number; accepted: number; firstError: string | null }
      | NotMeasured
    ))
  | ({ probe: 'context'; mode: ProbeMode } & (
      | { status: 'measured'; initMs: number[]; createMs: number[]; freeMib: number[]; totalMib: number }
      | NotMeasured
    ))
  | ({ probe: 'slice'; mode: ProbeMode } & (
      | { status: 'measured'; points: Array<{ cotenants: number } & LatencySeries> }
      | NotMeasured
    ))
  | ({ probe: 'default-stream' } & (
      | {
          status: 'measured';
          spinUs: number;
          runs: Array<{ streamKind: 'pytorch' | 'blocking'; streams: number; strayCopy: boolean; concurrency: number }>;
        }
      | NotMeasured
    ))
  | ({ probe: 'priority' } & (
      | {
          status: 'measured';
          runs: Array<{ priority: 'normal' | 'high'; backgroundBlockUsPerS: number } & LatencySeries>;
        }
      | NotMeasured
    ))
  | ({ probe: 'green-context' } & (
      | {
          status: 'measured';
          totalSms: number;
          criticalSms: number;
          runs: Array<
            { arm: 'streams' | 'green' | 'mps'; backgroundSms: number; backgroundBlockUsPerS: number } & LatencySeries
          >;
          /** Why the MPS arm has no run, or null when it has one. */
          mpsArm: string | null;
        }
      | NotMeasured
    ));

/** The probe names, in the order they run. */
export const PROBES = [
  'memory',
  'sm-cap',
  'fault',
  'client-limit',
  'context',
  'slice',
  'default-stream',
  'priority',
  'green-context',
] as const;
export type ProbeName = (typeof PROBES)[number];

/** A probe run as saved: every outcome so far, and what was left behind (nothing, if all went well). */
export interface ProbeRun extends RecordHeader<typeof PROBE_SCHEMA_ID> {
  fingerprint: Fingerprint;
  gpuIndex: number;
  probes: ProbeOutcome[];
  /** Per probe and mode: how its processes and MPS daemon ended, and any PID still running after. */
  cleanup: Array<{ probe: ProbeName; mode: string; daemon: string | null; leftPids: number[] }>;
  warnings: string[];
}

/** The probe run saved in `dir`, or null when `dir` holds none (a bench run, or nothing). */
export function loadProbeRun(dir: string): Promise<ProbeRun | null> {
  return loadRecord<ProbeRun>(dir, PROBE_FILE, PROBE_SCHEMA_ID, 'gpushare probe');
}
