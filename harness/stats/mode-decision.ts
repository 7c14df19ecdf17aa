/**
 * "Which sharing mode measured cheaper?" decided from every mode measured at one workload and client
 * count, and only where the 95% intervals separate. A pure function: bench's summary and report,
 * `plan`, `artifacts` and mix's claims read it.
 */
import { separate } from './intervals.js';

/** The ways of sharing a GPU that gpushare measures (bench's ModeName). */
export type SharingMode = 'streams' | 'green' | 'timeslice' | 'mps' | 'mig';

/** A ratio's median and its 95% interval (null: too few rounds for one). */
export interface RatioInterval {
  value: number;
  ci: [number, number] | null;
}

/** What one mode measured for the decision. */
export interface ModeCost {
  mode: SharingMode;
  workload: string;
  clients: number;
  /** Per-client slowdown against one client alone on the whole GPU: lower is cheaper. */
  slowdown: RatioInterval | null;
  /** Every client's work together, in multiples of one client alone on the whole GPU: higher is better. */
  aggregate: RatioInterval | null;
}

/** The ratio that decides: the slowdown each client pays (bench, plan), or the work done together (mix's pair). */
export type DecidingMetric = 'slowdown' | 'aggregate';

/** Fault isolation, best first: MIG slices in hardware; time-slicing's processes fault alone; MPS clients share a fatal fault; in-process tenants die together (green contexts at least keep their SMs apart). */
export const ISOLATION_ORDER: readonly SharingMode[] = ['mig', 'timeslice', 'mps', 'green', 'streams'];

export const isInProcess = (mode: SharingMode) => mode === 'streams' || mode === 'green';

/** Each mode as a sentence's subject. */
export const MODE_SUBJECT: Record<SharingMode, string> = {
  streams: 'in-process streams',
  green: 'green contexts',
  timeslice: 'time-slicing',
  mps: 'MPS',
  mig: 'MIG',
};

/** Each mode's fault isolation, in words, for the tie's reason. */
const ISOLATION_TEXT: Record<SharingMode, string> = {
  mig: 'MIG isolates faults and memory in hardware',
  timeslice: 'time-slicing isolates faults (each client its own process and context)',
  mps: 'a fatal fault in one MPS client ends its neighbours',
  green: 'green-context tenants share one process and die together',
  streams: 'in-process tenants share one process and die together',
};

export interface Skipped {
  mode: SharingMode;
  reason: string;
}

export interface ModeDecisionBase {
  workload: string;
  clients: number;
  metric: DecidingMetric;
  /** The modes weighed, best median first. */
  compared: ModeCost[];
  /** Modes measured but not weighed, and why (another workload or client count, no interval). */
  skipped: Skipped[];
}

export type ModeDecision =
  | (ModeDecisionBase & {
      /** One mode's interval lies wholly on the better side of every other's. */
      kind: 'cheaper';
      mode: SharingMode;
      /** The other modes weighed, best median first. */
      costlier: SharingMode[];
    })
  | (ModeDecisionBase & {
      /** Measured the same here: the intervals of these modes overlap the best median's. */
      kind: 'same';
      /** In order of isolation. */
      tied: SharingMode[];
      /** Modes whose interval lies wholly on the worse side of the best median's. */
      costlier: SharingMode[];
      /** What decided among the tied: the best isolated of them. */
      mode: SharingMode;
      isolation: string;
      memory: string;
    })
  | { kind: 'none'; reason: string; skipped: Skipped[] };

/** What the contexts cost in memory, in words: measured where the run says (MiB per context), else unquantified. */
function memoryText(tied: readonly SharingMode[], clients: number, contextMiB: number | null): string {
  const each = contextMiB === null ? '' : ` (${contextMiB.toFixed(0)} MiB each, measured here)`;
  const inProcess = tied.filter(isInProcess);
  if (inProcess.length > 0 && inProcess.length < tied.length)
    return `memory: the in-process modes hold one CUDA context for all ${clients} tenants, the others one per client${each}`;
  if (inProcess.length > 0) return 'memory: the same, one CUDA context for every tenant';
  return `memory: the same, one CUDA context per client${each}`;
}

/**
 * The decision. Every mode is weighed at `at` (modes measured at another workload or client count are
 * skipped, as are those without an interval); a mode is cheaper only when its interval of `metric`
 * lies wholly on the better side of every other's. Otherwise the modes whose intervals overlap the
 * best median's measured the same, and isolation decides among them, with memory said beside it.
 * Fewer than two modes weighed: no decision.
 */
export function decideMode(
  costs: readonly ModeCost[],
  at: { workload: string; clients: number },
  contextMiB: number | null = null,
  metric: DecidingMetric = 'slowdown',
): ModeDecision {
  const skipped: Skipped[] = [];
  const weighed: Array<{ cost: ModeCost; ci: [number, number]; median: number }> = [];
  for (const cost of costs) {
    const r = cost[metric];
    if (cost.workload !== at.workload || cost.clients !== at.clients)
      skipped.push({
        mode: cost.mode,
        reason: `measured with ${cost.clients} ${cost.workload} clients, not ${at.clients} ${at.workload}`,
      });
    else if (r === null)
      skipped.push({
        mode: cost.mode,
        reason:
          metric === 'slowdown'
            ? 'no slowdown against one client alone on the whole GPU in this run'
            : 'no aggregate measured',
      });
    else if (r.ci === null) skipped.push({ mode: cost.mode, reason: 'no 95% interval (too few rounds)' });
    else weighed.push({ cost, ci: r.ci, median: r.value });
  }
  if (weighed.length < 2) {
    const one = weighed[0] ? ` (only ${MODE_SUBJECT[weighed[0].cost.mode]} has one)` : '';
    const why = skipped.map((x) => `${MODE_SUBJECT[x.mode]}: ${x.reason}`).join('; ');
    return {
      kind: 'none',
      reason: `fewer than two modes measured with a 95% interval at ${at.clients} ${at.workload} clients${one}${why ? `: ${why}` : ''}`,
      skipped,
    };
  }
  const sign = metric === 'slowdown' ? 1 : -1;
  const iso = (m: SharingMode) => ISOLATION_ORDER.indexOf(m);
  weighed.sort((a, b) => sign * (a.median - b.median) || iso(a.cost.mode) - iso(b.cost.mode));
  const best = weighed[0] as (typeof weighed)[number];
  const same = weighed.filter((w) => !separate(w.ci, best.ci)).map((w) => w.cost.mode);
  const costlier = weighed.filter((w) => separate(w.ci, best.ci)).map((w) => w.cost.mode);
  const base: ModeDecisionBase = {
    workload: at.workload,
    clients: at.clients,
    metric,
    compared: weighed.map((w) => w.cost),
    skipped,
  };
  if (same.length === 1) return { ...base, kind: 'cheaper', mode: best.cost.mode, costlier };
  const tied = [...same].sort((a, b) => iso(a) - iso(b));
  return {
    ...base,
    kind: 'same',
    tied,
    costlier,
    mode: tied[0] as SharingMode,
    isolation: `isolation: ${tied.map((m) => ISOLATION_TEXT[m]).join('; ')}`,
    memory: memoryText(tied, at.clients, contextMiB),
  };
}
