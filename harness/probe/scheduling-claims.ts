/**
 * The ledger's claims about how the GPU schedules work: time slices under time-slicing and MPS, the
 * default stream, stream priorities and green contexts.
 */

import { graded, lateNote, latencySummary, ms } from './latency.js';
import { type Claim, DOC, type Find, SEED, unmeasured } from './ledger.js';

export function sliceClaims(find: Find): Claim[] {
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

export function defaultStreamClaim(find: Find): Claim {
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

export function priorityClaim(find: Find): Claim {
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

export function greenClaim(find: Find): Claim {
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
