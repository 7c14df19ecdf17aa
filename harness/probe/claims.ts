/**
 * The claims ledger: each claim the seeds and vendor docs make about sharing, beside what the probe
 * run measured and a verdict by a stated rule. A pure function of the probe run: the report's
 * "what breaks" section and its tables read from here.
 */
import { median, quantileSorted } from 'simple-statistics';
import type { LatencySeries, ProbeOutcome, ProbeRun } from './record.js';

/** At most this fraction of a series' requests may be sent over a period late, or it is not valid. */
export const MAX_LATE_FRACTION = 0.01;

/**
 * A latency series summarized, ms. `valid` is false when more than 1% of its requests were sent over a
 * period after they were due (the generator fell behind): their latency still counts from the scheduled time.
 */
export interface LatencySummary {
  requests: number;
  leastMs: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  lateRequests: number;
  valid: boolean;
}

export function latencySummary(s: LatencySeries): LatencySummary {
  const sorted = [...s.latenciesMs].sort((a, b) => a - b);
  const q = (p: number) => (sorted.length > 0 ? quantileSorted(sorted, p) : Number.NaN);
  const valid = sorted.length > 0 && s.lateRequests <= MAX_LATE_FRACTION * sorted.length;
  return {
    requests: sorted.length,
    leastMs: sorted[0] ?? Number.NaN,
    p50Ms: q(0.5),
    p90Ms: q(0.9),
    p99Ms: q(0.99),
    maxMs: sorted.at(-1) ?? Number.NaN,
    lateRequests: s.lateRequests,
    valid,
  };
}

export type ClaimVerdict = 'holds' | 'does not hold' | 'partly holds' | 'not measured';

/** One line of the ledger. */
export interface Claim {
  id: string;
  claim: string;
  source: string;
  /** What was measured, in words with units; or why nothing was. */
  measured: string;
  verdict: ClaimVerdict;
  /** How the verdict follows from the measurement. */
  rule: string;
}

/** Public documents the claims are checked against, by title and address. */
const DOC = {
  mps: 'NVIDIA, "Multi-Process Service" (https://docs.nvidia.com/deploy/mps/index.html)',
  cuda: 'NVIDIA, "CUDA C++ Programming Guide" (https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html)',
  plugin:
    'NVIDIA, "k8s-device-plugin README: Shared Access to GPUs" (https://github.com/NVIDIA/k8s-device-plugin#shared-access-to-gpus)',
  torch:
    'PyTorch, "torch.cuda.green_contexts.GreenContext" (https://docs.pytorch.org/docs/stable/generated/torch.cuda.green_contexts.GreenContext.html)',
};

/**
 * Where each claim comes from, by title and address. The project's seed articles have no public
 * address: they are named by title, beside the public document that states the same behaviour.
 */
const SEED = {
  s000: `the article "CUDA contexts, streams, and MPS"; ${DOC.cuda}`,
  s001: `the article "CUDA Multi-Process Service (MPS)"; ${DOC.mps}`,
  s002: `the article "What is a CUDA Stream?"; ${DOC.cuda}`,
  s003: `the lab "GPU Sharing: Streams, MPS, MIG, and the Real Cost of Contention"; ${DOC.mps}`,
  s004: `the article "Multi-Process Service (MPS)" (TL;DR); ${DOC.mps}`,
  mpsDocs: DOC.mps,
  plugin: DOC.plugin,
  cudaGuide: `${DOC.cuda}, stream priorities`,
  torch: DOC.torch,
  cudaErrors: `${DOC.cuda}, error checking (sticky errors: the context is unusable until the process ends)`,
};

type Find = <P extends ProbeOutcome['probe']>(
  probe: P,
  where?: (o: Extract<ProbeOutcome, { probe: P }>) => boolean,
) => Extract<ProbeOutcome, { probe: P }> | undefined;

const gib = (mib: number) => `${(mib / 1024).toFixed(1)} GiB`;
const ms = (v: number) => (v < 1 ? `${(v * 1000).toFixed(0)} µs` : `${v.toFixed(2)} ms`);

/** A verdict only from valid series: with one whose generator fell behind, the claim is not measured. */
function graded(verdict: ClaimVerdict, ...series: LatencySummary[]): ClaimVerdict {
  return series.every((s) => s.valid) ? verdict : 'not measured';
}

const lateNote = (...series: LatencySummary[]) =>
  series.every((s) => s.valid) ? '' : ' (not graded: a series fell behind its schedule)';

function unmeasured(o: ProbeOutcome | undefined, what: string): string {
  return o === undefined ? `${what} was not run` : o.status !== 'measured' ? `${what} ${o.status}: ${o.reason}` : '';
}

/** The ledger, in a fixed order; a claim whose probe did not run says so. */
export function claimsLedger(run: ProbeRun): Claim[] {
  const find: Find = (probe, where) =>
    run.probes.find((o) => o.probe === probe && (where === undefined || where(o as never))) as never;
  return [
    memoryClaims(find),
    smCapClaim(find),
    faultClaims(find),
    inProcessFaultClaim(find),
    clientLimitClaim(find),
    contextClaims(find),
    sliceClaims(find),
    defaultStreamClaim(find),
    priorityClaim(find),
    greenClaim(find),
  ].flat();
}

function memoryClaims(find: Find): Claim[] {
  const sharing = (mode: 'mps' | 'timeslice', claim: string, source: string): Claim => {
    const o = find('memory', (m) => m.mode === mode && m.limitMib === null);
    const base = {
      id: `${mode}-memory-isolation`,
      claim,
      source,
      rule: "holds when a second client's 256 MiB allocation fails while the first holds the memory it could take",
    };
    if (o?.status !== 'measured')
      return { ...base, measured: unmeasured(o, `the ${mode} memory probe`), verdict: 'not measured' };
    const during = o.victimDuring;
    return {
      ...base,
      measured: `one client took ${gib(o.hogHeldMib)} before OOM; the other's 256 MiB allocation then ${during.ok ? 'succeeded' : `failed (${during.error})`}, its kernels ${o.victimKeptRunning ? 'kept running' : 'stopped'}, and it allocated ${o.victimAfter.ok ? 'again' : 'nothing'} once the memory was freed`,
      verdict: during.ok ? 'does not hold' : 'holds',
    };
  };
  const limited = find('memory', (m) => m.mode === 'mps' && m.limitMib !== null);
  const limitBase = {
    id: 'mps-memory-limit',
    claim: 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT caps the device memory a client can allocate',
    source: SEED.s004,
    rule: 'holds when an allocation of half the limit succeeds, one of 1.5× the limit fails, and filling stops at or below the limit',
  };
  let limit: Claim;
  if (limited?.status !== 'measured' || limited.limitMib === null)
    limit = { ...limitBase, measured: unmeasured(limited, 'the MPS memory-limit probe'), verdict: 'not measured' };
  else {
    const [under, over] = limited.hogTries;
    const capped = under?.ok === true && over?.ok === false && limited.hogHeldMib <= limited.limitMib;
    limit = {
      ...limitBase,
      measured: `limit ${gib(limited.limitMib)}: ${under?.mib ?? '?'} MiB ${under?.ok ? 'allocated' : 'refused'}, ${over?.mib ?? '?'} MiB ${over?.ok ? 'allocated' : 'refused'}; filling stopped at ${gib(limited.hogHeldMib)}`,
      verdict: capped ? 'holds' : 'does not hold',
    };
  }
  return [
    sharing(
      'mps',
      'MPS has no memory isolation: one client can take the memory the others need, and they OOM',
      SEED.s004,
    ),
    sharing('timeslice', 'Time-sliced processes share the memory without isolation', SEED.plugin),
    limit,
  ];
}

function smCapClaim(find: Find): Claim {
  const o = find('sm-cap');
  const base = {
    id: 'mps-sm-cap',
    claim: "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE caps each client's SM share",
    source: SEED.s003,
    rule: 'holds when every capped client sees at most its share of the SMs, rounded up to whole TPCs of 2 SMs (its GEMM rate is shown, not graded: a rate need not scale with SMs)',
  };
  if (o?.status !== 'measured')
    return { ...base, measured: unmeasured(o, 'the SM-cap probe'), verdict: 'not measured' };
  const full = o.points.find((p) => p.threadPercentage === 100);
  const capped = o.points.filter((p) => p.threadPercentage < 100);
  const parts = capped.map(
    (p) =>
      `${p.threadPercentage}% → ${p.sms} of ${o.totalSms} SMs, ${full ? ((100 * p.tflops) / full.tflops).toFixed(0) : '?'}% of the full GEMM rate`,
  );
  const within =
    capped.length > 0 && capped.every((p) => p.sms <= Math.ceil((o.totalSms * p.threadPercentage) / 100 / 2) * 2);
  return { ...base, measured: parts.join('; '), verdict: within ? 'holds' : 'does not hold' };
}

function faultClaims(find: Find): Claim[] {
  const mps = find('fault', (o) => o.mode === 'mps');
  const ts = find('fault', (o) => o.mode === 'timeslice');
  const fates = (o: Extract<ProbeOutcome, { probe: 'fault' }> & { status: 'measured' }) => {
    const died = o.victims.filter((v) => !v.survived);
    return `after one client's illegal-address fault (${o.faulterError ?? 'no error'}), ${died.length} of ${o.victims.length} other clients died${died[0] ? ` (${died[0].error})` : ''}`;
  };
  const claim = (
    id: string,
    text: string,
    source: string,
    o: typeof mps,
    holdsWhenAllDie: boolean,
    rule: string,
  ): Claim => {
    if (o?.status !== 'measured')
      return { id, claim: text, source, rule, measured: unmeasured(o, 'the fault probe'), verdict: 'not measured' };
    const allDied = o.victims.every((v) => !v.survived);
    const noneDied = o.victims.every((v) => v.survived);
    const verdict = holdsWhenAllDie
      ? allDied
        ? 'holds'
        : noneDied
          ? 'does not hold'
          : 'partly holds'
      : noneDied
        ? 'holds'
        : allDied
          ? 'does not hold'
          : 'partly holds';
    return { id, claim: text, source, rule, measured: fates(o), verdict };
  };
  const recovery: Claim = (() => {
    const base = {
      id: 'mps-fault-recovery',
      claim: 'After a fatal fault the MPS server recovers and accepts new clients',
      source: SEED.mpsDocs,
      rule: 'holds when a new client is accepted within 30 s of the fault',
    };
    if (mps?.status !== 'measured')
      return { ...base, measured: unmeasured(mps, 'the MPS fault probe'), verdict: 'not measured' };
    const r = mps.recovery;
    return {
      ...base,
      measured: `server status after the fault: ${mps.serverAfterFault ?? 'no answer'}; a new client was ${r.accepted ? `accepted ${(r.afterMs / 1000).toFixed(2)} s after the fault (attempt ${r.attempts})` : `not accepted within ${(r.afterMs / 1000).toFixed(1)} s (${r.lastError})`}; status then: ${mps.serverAfterRecovery ?? 'no answer'}`,
      verdict: r.accepted ? 'holds' : 'does not hold',
    };
  })();
  return [
    claim(
      'mps-fault-isolation',
      'Volta and later MPS: a GPU fault in one client does not crash the others',
      SEED.s001,
      mps,
      false,
      'holds when every other client keeps running',
    ),
    claim(
      'mps-fault-reported-to-all',
      'A fatal fault in one MPS client is reported to every client of that GPU',
      SEED.mpsDocs,
      mps,
      true,
      'holds when every other client gets the error',
    ),
    recovery,
    claim(
      'timeslice-fault-isolation',
      'Time-sliced processes have no fault isolation from each other',
      SEED.plugin,
      ts,
      true,
      'holds when the other processes die with the faulting one',
    ),
  ];
}

/**
 * Models served in one process share its one context: one model's fault ends them all. Listed only
 * where the run has the probe's outcome (runs before it was added never ran it).
 */
function inProcessFaultClaim(find: Find): Claim[] {
  const o = find('fault-in-process');
  if (o === undefined) return [];
  const base = {
    id: 'in-process-fault-domain',
    claim:
      "Models served in one process share one fault domain: one model's illegal address ends every model of the process",
    source: SEED.cudaErrors,
    rule: 'holds when every other tenant of the process stops with the error',
  };
  if (o.status !== 'measured')
    return [{ ...base, measured: unmeasured(o, 'the in-process fault probe'), verdict: 'not measured' }];
  const died = o.victims.filter((v) => !v.survived);
  return [
    {
      ...base,
      measured: `after one thread's illegal address (${o.faulterError ?? 'no error'}), ${died.length} of ${o.victims.length} tenants of the process stopped${died[0] ? ` (${died[0].error})` : ''}; ${o.victims.length - died.length} survived`,
      verdict: died.length === o.victims.length ? 'holds' : died.length === 0 ? 'does not hold' : 'partly holds',
    },
  ];
}

function clientLimitClaim(find: Find): Claim {
  const o = find('client-limit');
  const base = {
    id: 'mps-client-limit',
    claim: 'An MPS server accepts up to 48 clients per GPU (Volta and later)',
    source: SEED.mpsDocs,
    rule: 'holds when exactly 48 clients are accepted and the next is refused',
  };
  if (o?.status !== 'measured')
    return { ...base, measured: unmeasured(o, 'the client-limit probe'), verdict: 'not measured' };
  return {
    ...base,
    measured:
      o.firstError !== null
        ? `${o.accepted} clients accepted; client ${o.accepted + 1} failed: ${o.firstError}`
        : `all ${o.accepted} clients tried were accepted`,
    verdict: o.firstError !== null && o.accepted === 48 ? 'holds' : 'does not hold',
  };
}

/** MiB per extra context: the fall of free device memory per client after the first. */
export function perClientMib(freeMib: readonly number[]): number | null {
  if (freeMib.length < 2) return null;
  return ((freeMib[0] as number) - (freeMib.at(-1) as number)) / (freeMib.length - 1);
}

function contextClaims(find: Find): Claim[] {
  const ts = find('context', (o) => o.mode === 'timeslice');
  const mps = find('context', (o) => o.mode === 'mps');
  const createBase = {
    id: 'context-create-cost',
    claim: 'A CUDA context is heavyweight to create: ~tens of ms',
    source: SEED.s000,
    rule: 'holds when the median creation time (after cuInit: primary context, made current, a first allocation) is 10–99 ms',
  };
  const memBase = {
    id: 'context-memory-cost',
    claim: 'Each extra context costs significant device memory; MPS clients share one context',
    source: SEED.s000,
    rule: 'holds when a plain context costs ≥ 100 MiB and an MPS client less than half of that',
  };
  if (ts?.status !== 'measured')
    return [
      { ...createBase, measured: unmeasured(ts, 'the context probe'), verdict: 'not measured' },
      { ...memBase, measured: unmeasured(ts, 'the context probe'), verdict: 'not measured' },
    ];
  const plainMs = median(ts.createMs);
  const mpsMs = mps?.status === 'measured' ? median(mps.createMs) : null;
  const plainMib = perClientMib(ts.freeMib);
  const mpsMib = mps?.status === 'measured' ? perClientMib(mps.freeMib) : null;
  return [
    {
      ...createBase,
      measured: `median ${plainMs.toFixed(0)} ms plain${mpsMs !== null ? `, ${mpsMs.toFixed(0)} ms as an MPS client` : ''}, after cuInit's ${median(ts.initMs).toFixed(0)} ms (${ts.createMs.length} contexts each, one process after another)`,
      verdict: plainMs >= 10 && plainMs < 100 ? 'holds' : 'does not hold',
    },
    {
      ...memBase,
      measured: `${plainMib?.toFixed(0) ?? '?'} MiB per plain context${mpsMib !== null ? `, ${mpsMib.toFixed(0)} MiB per MPS client` : ''} (fall of free device memory per added client)`,
      verdict:
        plainMib === null || mpsMib === null
          ? 'not measured'
          : plainMib >= 100 && mpsMib < plainMib / 2
            ? 'holds'
            : plainMib >= 100
              ? 'partly holds'
              : 'does not hold',
    },
  ];
}

function sliceClaims(find: Find): Claim[] {
  const ts = find('slice', (o) => o.mode === 'timeslice');
  const mps = find('slice', (o) => o.mode === 'mps');
  const sliceBase = {
    id: 'timeslice-10ms',
    claim: 'Time-slicing round-robins contexts with ~10 ms context-switch jitter per swap',
    source: SEED.s003,
    rule: 'holds when a short request behind one busy co-tenant waits 5–20 ms at p99',
  };
  const switchBase = {
    id: 'context-switch-cost',
    claim: 'A context switch costs ~10–100 µs',
    source: SEED.s001,
    rule: "not graded: a host-side probe cannot separate a switch from the wait for the co-tenant's slice to end, or from the GPU's idle clocks when alone",
  };
  const mpsBase = {
    id: 'mps-no-slices',
    claim:
      'MPS runs clients side by side on the SMs: a co-tenant adds microseconds, not the milliseconds of a time slice',
    source: SEED.s004,
    rule: 'holds when a short request beside one busy co-tenant waits under 1 ms at p99 under MPS and at least 1 ms time-sliced',
  };
  if (ts?.status !== 'measured')
    return [sliceBase, switchBase, mpsBase].map((b) => ({
      ...b,
      measured: unmeasured(ts, 'the time-slice probe'),
      verdict: 'not measured' as const,
    }));
  const solo = ts.points.find((p) => p.cotenants === 0);
  const one = ts.points.find((p) => p.cotenants === 1);
  if (solo === undefined || one === undefined)
    return [sliceBase, switchBase, mpsBase].map((b) => ({
      ...b,
      measured: 'the probe lacks the 0 or 1 co-tenant point',
      verdict: 'not measured' as const,
    }));
  const s0 = latencySummary(solo);
  const s1 = latencySummary(one);
  const slicePoints = ts.points
    .filter((p) => p.cotenants > 0)
    .map((p) => `${p.cotenants}: p50 ${ms(latencySummary(p).p50Ms)}, p99 ${ms(latencySummary(p).p99Ms)}`);
  const m1 = mps?.status === 'measured' ? mps.points.find((p) => p.cotenants === 1) : undefined;
  const sm1 = m1 ? latencySummary(m1) : null;
  return [
    {
      ...sliceBase,
      measured: `alone p99 ${ms(s0.p99Ms)}; behind k busy co-tenants ${slicePoints.join('; ')}${lateNote(s1)}`,
      verdict: graded(s1.p99Ms >= 5 && s1.p99Ms <= 20 ? 'holds' : 'does not hold', s1),
    },
    {
      ...switchBase,
      measured: `least latency of a short request ${ms(s0.leastMs)} alone, ${ms(s1.leastMs)} behind one time-sliced co-tenant`,
      verdict: 'not measured',
    },
    sm1 === null
      ? { ...mpsBase, measured: unmeasured(mps, 'the MPS time-slice probe'), verdict: 'not measured' }
      : {
          ...mpsBase,
          measured: `behind one busy co-tenant: p50/p99 ${ms(sm1.p50Ms)}/${ms(sm1.p99Ms)} under MPS, ${ms(s1.p50Ms)}/${ms(s1.p99Ms)} time-sliced (alone ${ms(s0.p50Ms)}/${ms(s0.p99Ms)})${lateNote(sm1, s1)}`,
          verdict: graded(sm1.p99Ms < 1 && s1.p99Ms >= 1 ? 'holds' : 'does not hold', sm1, s1),
        },
  ];
}

function defaultStreamClaim(find: Find): Claim {
  const o = find('default-stream');
  const base = {
    id: 'default-stream-trap',
    claim: 'One stray default-stream call serializes every stream',
    source: `the articles "What is a CUDA Stream?" and "CUDA contexts, streams, and MPS"; ${DOC.cuda}`,
    rule: 'holds when one synchronous default-stream copy per round brings 4 streams of both kinds down to ≤ 1.5× concurrency (near serial); partly holds when it does so for one kind, or cuts either by over a quarter',
  };
  if (o?.status !== 'measured')
    return { ...base, measured: unmeasured(o, 'the default-stream probe'), verdict: 'not measured' };
  const k = Math.max(...o.runs.map((r) => r.streams));
  const conc = (kind: string, stray: boolean) =>
    o.runs.find((r) => r.streamKind === kind && r.streams === k && r.strayCopy === stray)?.concurrency ?? Number.NaN;
  const serial = (kind: string) => conc(kind, true) <= 1.5;
  const hurt = (kind: string) => conc(kind, true) < 0.75 * conc(kind, false);
  const parts = ['pytorch', 'blocking'].map(
    (kind) =>
      `${kind === 'pytorch' ? "PyTorch's streams (non-blocking)" : 'blocking streams (cuStreamCreate default flags)'}: ${conc(kind, false).toFixed(2)}× → ${conc(kind, true).toFixed(2)}× concurrency with the stray copy`,
  );
  const kinds = ['pytorch', 'blocking'];
  const verdict = kinds.every(serial)
    ? 'holds'
    : kinds.some((kind) => serial(kind) || hurt(kind))
      ? 'partly holds'
      : 'does not hold';
  return { ...base, measured: `${k} streams of ${o.spinUs} µs kernels: ${parts.join('; ')}`, verdict };
}

function priorityClaim(find: Find): Claim {
  const o = find('priority');
  const base = {
    id: 'stream-priority',
    claim: "A high-priority stream's work is scheduled ahead of pending low-priority work",
    source: SEED.cudaGuide,
    rule: 'holds when p99 latency of a short request beside a full-GPU background falls by at least a fifth at high priority',
  };
  if (o?.status !== 'measured')
    return { ...base, measured: unmeasured(o, 'the priority probe'), verdict: 'not measured' };
  const by = (p: string) => o.runs.find((r) => r.priority === p);
  const normal = by('normal');
  const high = by('high');
  if (!normal || !high) return { ...base, measured: 'a priority run is missing', verdict: 'not measured' };
  const n = latencySummary(normal);
  const h = latencySummary(high);
  return {
    ...base,
    measured: `p50/p99 ${ms(n.p50Ms)}/${ms(n.p99Ms)} at normal priority, ${ms(h.p50Ms)}/${ms(h.p99Ms)} at high${lateNote(n, h)}`,
    verdict: graded(h.p99Ms <= 0.8 * n.p99Ms ? 'holds' : 'does not hold', n, h),
  };
}

function greenClaim(find: Find): Claim {
  const o = find('green-context');
  const base = {
    id: 'green-context',
    claim: 'A green context confines work to a set of SMs, keeping the rest free for a latency-critical stream',
    source: SEED.torch,
    rule: 'holds when confining the background to a green context halves the critical p99 against plain streams',
  };
  if (o?.status !== 'measured')
    return { ...base, measured: unmeasured(o, 'the green-context probe'), verdict: 'not measured' };
  const arm = (a: string) => o.runs.find((r) => r.arm === a);
  const parts = o.runs.map(
    (r) =>
      `${r.arm}: p99 ${ms(latencySummary(r).p99Ms)}, background ${(r.backgroundBlockUsPerS / 1e6).toFixed(1)} SM-block-s/s on ${r.backgroundSms} SMs`,
  );
  const streams = arm('streams');
  const green = arm('green');
  if (!streams || !green) return { ...base, measured: 'a streams or green run is missing', verdict: 'not measured' };
  const [s, g] = [latencySummary(streams), latencySummary(green)];
  return {
    ...base,
    measured: `${o.criticalSms} of ${o.totalSms} SMs kept for the critical stream — ${parts.join('; ')}${o.mpsArm ? `; MPS arm ${o.mpsArm}` : ''}${lateNote(s, g)}`,
    verdict: graded(g.p99Ms <= s.p99Ms / 2 ? 'holds' : 'does not hold', s, g),
  };
}
