/** The mode decision in words, for the summary, the report, plan and artifacts: plain text, escaped by the caller. */
import {
  MODE_SUBJECT,
  type ModeCost,
  type ModeDecision,
  type SharingMode as ModeName,
} from '../../stats/mode-decision.js';

/** How a client ran in each mode, after "slowed 1.50×". */
const HOW: Record<ModeName, string> = {
  streams: 'as tenants on streams of one process',
  green: 'as tenants in green contexts of one process',
  timeslice: 'time-sliced',
  mps: 'under MPS',
  mig: 'on MIG slices',
};

const f2 = (x: number) => x.toFixed(2);
const f3 = (x: number) => x.toFixed(3);
const ciText = (c: ModeCost) => (c.slowdown?.ci ? ` [${f3(c.slowdown.ci[0])}, ${f3(c.slowdown.ci[1])}]` : '');
const capital = (s: string) => `${s[0]?.toUpperCase() ?? ''}${s.slice(1)}`;

/** "a, b and c". */
export function listText(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

/** "1.74× under MPS and 2.70× time-sliced", in the order of `modes`, with intervals when asked. */
export function slowedText(
  d: Extract<ModeDecision, { compared: unknown }>,
  modes: readonly ModeName[],
  withCi: boolean,
) {
  return listText(
    modes.flatMap((mode) => {
      const c = d.compared.find((x) => x.mode === mode);
      return c?.slowdown ? [`${f2(c.slowdown.value)}×${withCi ? ciText(c) : ''} ${HOW[mode]}`] : [];
    }),
  );
}

/** The modes measured but not weighed, as a clause ("" when none). */
export function skippedText(d: ModeDecision): string {
  return d.skipped.length === 0
    ? ''
    : `; not weighed: ${d.skipped.map((s) => `${MODE_SUBJECT[s.mode]} (${s.reason})`).join(', ')}`;
}

/** The summary's line (null: nothing to compare). */
export function decisionLine(d: ModeDecision): string | null {
  // Nothing measured to compare: nothing to say; measured but not comparable: say why.
  if (d.kind === 'none') return d.skipped.length > 0 ? `No mode measured cheaper here: ${d.reason}` : null;
  const order = d.compared.map((c) => c.mode);
  if (d.kind === 'cheaper')
    return `${capital(MODE_SUBJECT[d.mode])} measured cheaper here: ${d.clients} ${d.workload} clients each slowed ${slowedText(d, [d.mode, ...order.filter((m) => m !== d.mode)], false)}${skippedText(d)}`;
  return `${tieText(d)}${d.costlier.length > 0 ? ` ${costlierText(d)}` : ''}${skippedText(d)}`;
}

/** "Time-slicing and MPS measured the same here: … What then decided: isolation …; memory …." */
export function tieText(d: Extract<ModeDecision, { kind: 'same' }>): string {
  return `${capital(listText(d.tied.map((m) => MODE_SUBJECT[m])))} measured the same here: ${d.clients} ${d.workload} clients each slowed ${slowedText(d, d.tied, true)} (the 95% intervals overlap). ${decidedText(d)}`;
}

/** "What then decided: isolation: …, so time-slicing; memory: …." */
export function decidedText(d: Extract<ModeDecision, { kind: 'same' }>): string {
  return `What then decided: ${d.isolation}, so ${MODE_SUBJECT[d.mode]}; ${d.memory}.`;
}

/** "MPS measured costlier: 2.70× [2.651, 2.725] time-sliced." */
export function costlierText(d: Extract<ModeDecision, { kind: 'same' }>): string {
  return `${capital(listText(d.costlier.map((m) => MODE_SUBJECT[m])))} measured costlier: ${slowedText(d, d.costlier, true)}.`;
}
