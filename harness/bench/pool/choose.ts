/** Which pool policy a run uses: a pure function of its options and the policies this build registers. */
import type { PoolPolicy } from './types.js';

/** --fresh-clients gets `fresh`; else `warm`, or `fresh` (always there) where warm is not registered. */
export function choosePolicy(wanted: { freshClients: boolean }, registered: readonly PoolPolicy[]): PoolPolicy {
  return !wanted.freshClients && registered.includes('warm') ? 'warm' : 'fresh';
}
