/**
 * The claims ledger: each claim the seeds and vendor docs make about sharing, beside what the probe
 * run measured and a verdict by a stated rule. A pure function of the probe run: the report's
 * "what breaks" section and its tables read from here.
 */
import { median } from 'simple-statistics';
import { MPS_CLIENT_LIMIT } from '../system/mps/client-limit.js';
import { type Claim, type Find, SEED, unmeasured } from './ledger.js';
import type { ProbeOutcome, ProbeRun } from './record.js';
import { defaultStreamClaim, greenClaim, priorityClaim, sliceClaims } from './scheduling-claims.js';

const gib = (mib: number) => `${(mib / 1024).toFixed(1)} GiB`;

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
    verdict: o.firstError !== null && o.accepted === MPS_CLIENT_LIMIT ? 'holds' : 'does not hold',
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
