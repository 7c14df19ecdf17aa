/** Which pool policy a run uses: a pure function of its options and the policies this build registers. */
import type { PoolPolicy } from './types.js';

/**
 * --fresh-clients gets `fresh`; else `ahead` where the host lets processes be prestarted ahead
 * (`ahead`: see aheadPolicy in plan.ts), else `warm`; a policy not registered falls back to the next
 * in that order, and `fresh` is always there.
 */
export function choosePolicy(
  wanted: { freshClients: boolean; ahead: boolean },
  registered: readonly PoolPolicy[],
): PoolPolicy {
  if (wanted.freshClients) return 'fresh';
  const order: PoolPolicy[] = wanted.ahead ? ['ahead', 'warm'] : ['warm'];
  return order.find((name) => registered.includes(name)) ?? 'fresh';
}
