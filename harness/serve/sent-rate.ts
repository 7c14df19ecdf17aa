/**
 * The generator's ceiling against the rate each capacity step sent (serve/verdicts.ts ceilingCheck): a
 * step that passed the SLO while sending over the ceiling measured the generator as much as the server,
 * so its rate is not a capacity the plan may name, and the report says so.
 */
import type { GroupAnalysis } from './analysis.js';
import { unverifiedText } from './verdicts.js';

type Capacity = Pick<GroupAnalysis, 'mode' | 'copies' | 'capacity'>;

const name = (g: Capacity) => `${g.mode} ×${g.copies}`;

/** A capacity the plan may name: a passing step, within the generator's ceiling by its sent rate. */
export function measuredCapacity(g: Capacity): boolean {
  return g.capacity?.ratePerS != null && g.capacity.unverified !== true;
}

/** Each group whose passing rate is unverified, in one line each: its rate, what it sent, why (the run's ceiling, or null). */
export function unverifiedCapacities(groups: readonly Capacity[], ceilingRatePerS: number | null): string[] {
  return groups.flatMap((g) => {
    const c = g.capacity;
    if (c?.ratePerS == null || c.unverified !== true) return [];
    const sent = c.sentPerS !== undefined ? `, sent ${c.sentPerS.toFixed(1)} req/s` : '';
    return [
      `${name(g)}: its passing step (${c.ratePerS.toFixed(1)} req/s${sent}) is ${unverifiedText(ceilingRatePerS)}: unverified, not a measured capacity`,
    ];
  });
}

/** What the plan adds when it passed over a group for it (the run's ceiling, or null): "" when none. */
export function capacityOverCeilingText(groups: readonly Capacity[], ceilingRatePerS: number | null): string {
  const over = groups.filter((g) => g.capacity?.ratePerS != null && g.capacity.unverified === true);
  return over.length === 0
    ? ''
    : ` (not counted, ${unverifiedText(ceilingRatePerS)}: ${over.map((g) => `${name(g)} at ${g.capacity?.ratePerS?.toFixed(1)} req/s`).join(', ')})`;
}
