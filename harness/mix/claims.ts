/** The mixed-tenant claims of the seeds, graded against a mix run by stated rules. A pure function of the run. */
import { decideMode } from '../stats/mode-decision.js';
import { type Cell, type Kept, mixCells, pairAggregate } from './analysis.js';
import { type MixRun, PAIR } from './record.js';

export type MixVerdict = 'holds' | 'does not hold' | 'inconclusive' | 'not measured';

/** One line of the mix ledger. */
export interface MixClaim {
  id: string;
  claim: string;
  source: string;
  measured: string;
  verdict: MixVerdict;
  rule: string;
}

const SEEDS = "the seeds' GPU-sharing guides (issue #25)";
const ci = (k: Kept | null) =>
  k === null
    ? '—'
    : `${k.value.toFixed(2)}${k.ci ? ` [${k.ci[0].toFixed(2)}, ${k.ci[1].toFixed(2)}]` : ''} (${k.rounds} rounds)`;

/** The claims, each with what was measured and its verdict. */
export function mixClaims(run: MixRun, cells: readonly Cell[] = mixCells(run)): MixClaim[] {
  return [interleaves(run), capsProtect(run, cells)];
}

function interleaves(run: MixRun): MixClaim {
  const claim = {
    id: 'mps-interleaves',
    claim: 'MPS lets memory-bound and compute-bound kernels interleave at the SM level',
    source: SEEDS,
    rule: `the ${PAIR.join(' and ')} aggressors run together without the victim; their aggregate is the sum of each one's throughput together ÷ alone (1 = no better than taking turns), per round, mean with a Student-t 95% interval. Holds when MPS's interval lies above time-slicing's and above 1; does not hold when it lies below time-slicing's; inconclusive otherwise: where the two intervals overlap or touch, the modes measured the same here`,
  };
  const mps = pairAggregate(run, 'mps');
  const ts = pairAggregate(run, 'timeslice');
  if (mps === null || ts === null)
    return {
      ...claim,
      measured: `not measured: it needs the ${PAIR.join(' and ')} aggressors under both timeslice and mps`,
      verdict: 'not measured',
    };
  const measured = `aggregate under MPS ${ci(mps)}, time-sliced ${ci(ts)}`;
  if (mps.ci === null || ts.ci === null) return { ...claim, measured, verdict: 'inconclusive' };
  // bench's mode decision, on the pair's aggregate: better only where the intervals separate.
  const at = { workload: PAIR.join('+'), clients: PAIR.length };
  const cost = (mode: 'mps' | 'timeslice', k: Kept) => ({ mode, ...at, slowdown: null, aggregate: k });
  const d = decideMode([cost('mps', mps), cost('timeslice', ts)], at, null, 'aggregate');
  if (d.kind === 'none') return { ...claim, measured, verdict: 'inconclusive' };
  if (d.kind === 'same')
    return {
      ...claim,
      measured: `${measured}: measured the same here (the intervals overlap), so neither holds nor fails`,
      verdict: 'inconclusive',
    };
  const verdict: MixVerdict = d.mode === 'mps' ? (mps.ci[0] > 1 ? 'holds' : 'inconclusive') : 'does not hold';
  return { ...claim, measured, verdict };
}

function capsProtect(run: MixRun, cells: readonly Cell[]): MixClaim {
  const claim = {
    id: 'thread-caps-protect',
    claim: "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE caps each client's SM share, which protects a neighbour",
    source: SEEDS,
    rule: "per aggressor, at the highest load measured: the victim's p99 ratio beside the aggressor at its lowest cap against uncapped MPS. The cap protects when the capped interval lies below the uncapped one, or uncapped the victim is overloaded and capped it is not; it fails to when the capped interval is not below (it overlaps or lies above). Holds when it protects against at least half the aggressors measured; does not hold when against none; inconclusive otherwise",
  };
  const s = run.settings;
  const load = Math.max(...s.loads);
  const lowest = s.threadPcts.length > 0 ? Math.min(...s.threadPcts) : null;
  if (!s.modes.includes('mps') || lowest === null)
    return {
      ...claim,
      measured: 'not measured: it needs mps with at least one --thread-pcts',
      verdict: 'not measured',
    };
  const judged = s.aggressors.flatMap((a) => {
    const at = (pct: number | null) =>
      cells.find((c) => c.mode === 'mps' && c.aggressor === a.name && c.load === load && c.threadPct === pct);
    const open = at(null);
    const capped = at(lowest);
    if (!open || !capped || !['measured', 'overloaded'].includes(open.status) || capped.status !== 'measured')
      return [];
    const protects =
      open.status === 'overloaded' ||
      (open.p99?.ci != null && capped.p99?.ci != null && capped.p99.ci[1] < open.p99.ci[0]);
    const text = `${a.name}: ${open.status === 'overloaded' ? 'overloaded' : `×${open.p99?.value.toFixed(2)}`} uncapped, ×${capped.p99?.value.toFixed(2)} at ${lowest}%`;
    return [{ protects, text }];
  });
  if (judged.length === 0)
    return {
      ...claim,
      measured: 'not measured: no aggressor measured both uncapped and at its lowest cap',
      verdict: 'not measured',
    };
  const n = judged.filter((j) => j.protects).length;
  const verdict: MixVerdict = n * 2 >= judged.length ? 'holds' : n === 0 ? 'does not hold' : 'inconclusive';
  return {
    ...claim,
    measured: `victim p99 ratio at ${load * 100}% load, ${judged.map((j) => j.text).join('; ')}: the cap protects against ${n} of ${judged.length}`,
    verdict,
  };
}
