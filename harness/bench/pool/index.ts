/** Bench's client pool: the seam the trial loop sees (types.ts), built with the policy a run chooses. */
import type { Config } from '../record/schema.js';
import { choosePolicy } from './choose.js';
import * as registered from './policies.js';
import type { ClientPool, PoolContext, PoolModule } from './types.js';

export { choosePolicy } from './choose.js';
export { prestartFirst, startsFirstEarly } from './first.js';
export { idleCpus } from './processes.js';
export type { ClientPool, Lease, PoolContext, PoolMode, Prestarted, Readiness } from './types.js';

/** The pool for a run with `config`, by the policy choosePolicy picks among the registered ones. */
export function createPool(config: Pick<Config, 'freshClients'>, ctx: PoolContext): ClientPool {
  const modules: PoolModule[] = Object.values(registered);
  const name = choosePolicy(
    { freshClients: config.freshClients === true },
    modules.map((m) => m.name),
  );
  return (modules.find((m) => m.name === name) as PoolModule).create(ctx);
}
