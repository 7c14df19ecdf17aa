/**
 * Verdicts of `gpushare verify`, pure functions of what was declared and what was measured, each with
 * the tolerance it used: a declared limit is `enforced`, `not enforced` or `partly`. Their boundaries
 * are pinned by table-driven tests on recorded output (test/unit/verify-verdicts.test.ts).
 */
import { ExitCode } from '../core/errors.js';

export type Verdict = 'enforced' | 'not enforced' | 'partly';

/** One declared limit: declared, measured, verdict, and what to change when it did not hold. */
export interface Row {
  /** Stable name, e.g. mps.thread-pct: what a report or a script greps for. */
  id: string;
  declared: string;
  measured: string;
  /** `not measured`: a probe that should have run did not (why in `measured`); `skipped`: not applicable on this node. */
  verdict: Verdict | 'not measured' | 'skipped';
  tolerance: string;
  change: string | null;
}

export interface Judged {
  verdict: Verdict;
  measured: string;
  tolerance: string;
  change: string | null;
}

/** Percentage points of the GPU a thread cap may be off by and still hold. */
export const THREAD_TOLERANCE_PTS = 10;
/** MiB a client may hold over a pinned-memory limit: one of the probe's smallest allocation blocks. */
export const MEMORY_TOLERANCE_MIB = 64;
/** Implied and scripted MPS memory caps may differ by this share (the plugin and plan round differently). */
export const REPLICA_MEMORY_TOLERANCE = 0.02;
/** A neighbour that loses more than this share of its bandwidth alone has no partition of it. */
export const BANDWIDTH_LOSS_TOLERANCE = 0.1;

const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
const mib = (x: number) => `${Math.round(x)} MiB`;

/**
 * A GEMM client under the cap against the same client uncapped: the SMs it reports (under MPS the
 * device attribute is the cap the server applies) and the rate it reaches. The rate is no share of
 * the SMs: fewer SMs run at higher clocks under the power cap (the H100 probe run of 2026-11-23: 66 of
 * 132 SMs gave 65% of the rate, 32 gave 37%), so it only shows that a cap acted at all.
 */
export interface ThreadCapMeasure {
  capped: { sms: number; tflops: number };
  full: { sms: number; tflops: number };
}

export function threadCapVerdict(declaredPct: number, m: ThreadCapMeasure): Judged {
  // NaN where the uncapped client measured nothing (0, or a broken reading below it): judged below.
  // Stryker disable next-line EqualityOperator: at 0, x ÷ 0 is not finite either: `>=` gives the same verdict
  const share = (part: number, whole: number) => (whole > 0 ? part / whole : Number.NaN);
  const smShare = share(m.capped.sms, m.full.sms);
  const rateShare = share(m.capped.tflops, m.full.tflops);
  const d = declaredPct / 100;
  const tol = THREAD_TOLERANCE_PTS / 100;
  const measured = `${m.capped.sms} of ${m.full.sms} SMs (${pct(smShare)}); ${pct(rateShare)} of the uncapped GEMM rate (${m.capped.tflops.toFixed(1)} of ${m.full.tflops.toFixed(1)} TFLOPS)`;
  const tolerance = `SMs ±${THREAD_TOLERANCE_PTS} points of the GPU; rate below ${100 - THREAD_TOLERANCE_PTS}% of uncapped`;
  const full = 1 - tol;
  if (!Number.isFinite(smShare) || !Number.isFinite(rateShare))
    return { verdict: 'not enforced', measured, tolerance, change: 'the uncapped client measured nothing' };
  if (smShare <= d + tol && (rateShare < full || d >= full))
    return { verdict: 'enforced', measured, tolerance, change: null };
  if (smShare >= full && rateShare >= full)
    return {
      verdict: 'not enforced',
      measured,
      tolerance,
      change:
        'the client reached the whole GPU: check that it is a client of this daemon (CUDA_MPS_PIPE_DIRECTORY) and that the cap is set before it starts',
    };
  return {
    verdict: 'partly',
    measured,
    tolerance,
    change:
      smShare > d + tol
        ? `the client gets ${pct(smShare)} of the SMs, not ${declaredPct}%: check the daemon's default (get_default_active_thread_percentage) and the client's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`
        : 'the SM count is capped but the client still reaches the uncapped rate: the cap does not limit this workload',
  };
}

/** What a client allocating 1 GiB blocks (then 64 MiB) up to `boundMib` held under a pinned-memory limit. */
export interface MemoryMeasure {
  heldMib: number;
  boundMib: number;
  error: string | null;
}

export function memoryLimitVerdict(limitMib: number, m: MemoryMeasure): Judged {
  const measured = `allocated ${mib(m.heldMib)} of the ${mib(m.boundMib)} asked for${m.error ? ', then out of memory' : ''}`;
  const tolerance = `+${MEMORY_TOLERANCE_MIB} MiB`;
  if (m.heldMib <= limitMib + MEMORY_TOLERANCE_MIB) return { verdict: 'enforced', measured, tolerance, change: null };
  if (m.heldMib >= m.boundMib - MEMORY_TOLERANCE_MIB)
    return {
      verdict: 'not enforced',
      measured,
      tolerance,
      change:
        'nothing stopped the client: give the limit per visible GPU index (0=…), only for GPUs the client can see, before it starts',
    };
  return {
    verdict: 'partly',
    measured,
    tolerance,
    change: `a limit acted at ${mib(m.heldMib)}, above the ${mib(limitMib)} declared: check which limit the daemon applies (get_default_device_pinned_mem_limit)`,
  };
}

/** cudaMemGetInfo in a client under the limit. */
export interface MemInfoMeasure {
  freeMib: number;
  totalMib: number;
}

export function memInfoVerdict(limitMib: number, m: MemInfoMeasure): Judged {
  const measured = `cudaMemGetInfo: ${mib(m.freeMib)} free of ${mib(m.totalMib)} total`;
  const tolerance = `free ≤ limit +${MEMORY_TOLERANCE_MIB} MiB`;
  const totalTrap =
    m.totalMib > limitMib + MEMORY_TOLERANCE_MIB
      ? `total still reports ${mib(m.totalMib)}, not the limit: size engines from free (vLLM's --gpu-memory-utilization is a share of total)`
      : null;
  if (m.freeMib <= limitMib + MEMORY_TOLERANCE_MIB)
    return { verdict: 'enforced', measured, tolerance, change: totalTrap };
  return {
    verdict: 'not enforced',
    measured,
    tolerance,
    change: 'the client sees more free memory than the limit: it is not limited (see mps.pinned-mem)',
  };
}

/** Whether the daemon lists the client among its server's clients. */
export interface AttachMeasure {
  clientPid: number;
  /** The server's clients (get_client_list); null: no server was running. */
  clientPids: number[] | null;
}

export function attachVerdict(m: AttachMeasure): Judged {
  const tolerance = 'exact (PID in get_client_list)';
  if (m.clientPids?.includes(m.clientPid))
    return {
      verdict: 'enforced',
      measured: `PID ${m.clientPid} is a client of the MPS server`,
      tolerance,
      change: null,
    };
  return {
    verdict: 'not enforced',
    measured:
      m.clientPids === null
        ? `no MPS server runs: PID ${m.clientPid} is outside MPS`
        : `PID ${m.clientPid} is not among the server's clients (${m.clientPids.join(', ') || 'none'})`,
    tolerance,
    change:
      'the client runs outside MPS, unlimited: give it exactly the daemon pipe directory in CUDA_MPS_PIPE_DIRECTORY and start it after the daemon',
  };
}

/** The device plugin's MPS caps for `replicas`, against the scripts' (null: the scripts set none). */
export function replicasVerdict(
  replicas: number,
  implied: { threadPct: number; memLimitMiB: number },
  scripts: { threadPct: number | null; memLimitMib: number | null },
): Judged {
  const measured = `the plugin's daemon gives each of ${replicas} clients ${implied.threadPct}% and ${mib(implied.memLimitMiB)}; the scripts set ${scripts.threadPct ?? 100}% and ${scripts.memLimitMib !== null ? mib(scripts.memLimitMib) : 'no memory limit'}`;
  const tolerance = `±1 point, ±${REPLICA_MEMORY_TOLERANCE * 100}% of memory`;
  const threadOk = Math.abs(implied.threadPct - (scripts.threadPct ?? 100)) <= 1;
  const memOk =
    scripts.memLimitMib !== null &&
    Math.abs(implied.memLimitMiB - scripts.memLimitMib) <= REPLICA_MEMORY_TOLERANCE * implied.memLimitMiB;
  if (threadOk && memOk) return { verdict: 'enforced', measured, tolerance, change: null };
  const change = !threadOk
    ? `a pod of this plugin config gets ${implied.threadPct}% of the threads, not the scripts' ${scripts.threadPct ?? 100}%: set replicas to ${scripts.threadPct !== null ? Math.max(2, Math.floor(100 / scripts.threadPct)) : 'the number of clients'}, or regenerate the scripts for ${replicas} models`
    : `a pod of this plugin config may pin ${mib(implied.memLimitMiB)} (this GPU's memory ÷ ${replicas}), not the scripts' ${scripts.memLimitMib !== null ? mib(scripts.memLimitMib) : 'none'}: the scripts were sized for another GPU or headroom; regenerate them for this GPU (gpushare plan --run or --gpu-model)`;
  return { verdict: threadOk || memOk ? 'partly' : 'not enforced', measured, tolerance, change };
}

/** The scripts' GPU indices against the node's. */
export function visibleDevicesVerdict(declared: number[] | 'all', node: number[]): Judged {
  const tolerance = 'exact';
  if (declared === 'all')
    return {
      verdict: 'enforced',
      measured: `the scripts serve every GPU nvidia-smi lists: ${node.join(', ') || 'none'}`,
      tolerance,
      change: null,
    };
  const missing = declared.filter((g) => !node.includes(g));
  const measured = `this node has GPU ${node.join(', ') || 'none'}`;
  if (missing.length === 0) return { verdict: 'enforced', measured, tolerance, change: null };
  return {
    verdict: missing.length === declared.length ? 'not enforced' : 'partly',
    measured,
    tolerance,
    change: `GPU ${missing.join(', ')} is not on this node: a limit list naming a GPU the process cannot see drops every limit; regenerate with --gpus ${node.join(',')}`,
  };
}

/** The MIG devices the node lists (profile → count) against the declared geometries. */
export function migVerdict(configs: Record<string, Record<string, number>>, devices: Record<string, number>): Judged {
  const listed = Object.entries(devices)
    .map(([p, n]) => `${n}× ${p}`)
    .join(', ');
  const same = (g: Record<string, number>) =>
    Object.keys({ ...g, ...devices }).every((p) => (g[p] ?? 0) === (devices[p] ?? 0));
  const match = Object.entries(configs).find(([, g]) => same(g));
  const measured = `MIG devices listed: ${listed || 'none'}`;
  if (match) return { verdict: 'enforced', measured: `${measured} (= ${match[0]})`, tolerance: 'exact', change: null };
  return {
    verdict: 'not enforced',
    measured,
    tolerance: 'exact',
    change:
      'no declared geometry is applied: mig-parted can report success and create no MIG devices; check nvidia-smi -L after nvidia-mig-parted apply',
  };
}

/**
 * The gate's exit codes: 1 when a declared limit did not hold, 3 when one could not be measured or
 * none was (every row skipped, or none), else 0: a pass needs a limit measured to hold.
 */
export function verifyExitCode(rows: readonly Pick<Row, 'verdict'>[]): number {
  if (rows.some((r) => r.verdict === 'not enforced' || r.verdict === 'partly')) return ExitCode.fail;
  if (rows.some((r) => r.verdict === 'not measured')) return ExitCode.inconclusive;
  if (!rows.some((r) => r.verdict === 'enforced')) return ExitCode.inconclusive;
  return ExitCode.ok;
}
