/**
 * --fresh-clients: every comparison starts its own processes when it begins and tells them to exit
 * when it ends. Nothing is started early, kept or switched: the pool every other policy improves on.
 */
import type { Comparison } from '../record/schema.js';
import { freshLease, PoolBase } from './base.js';
import type { Lease, PoolMode, PoolModule } from './types.js';

export class FreshPool extends PoolBase {
  async acquire(c: Comparison, mode: PoolMode): Promise<Lease> {
    const startedUs = this.ctx.clock.monotonicUs();
    return freshLease(c, mode, this.spawnGroup(c, mode.env, {}), startedUs);
  }
}

export const fresh: PoolModule = { name: 'fresh', create: (ctx) => new FreshPool(ctx) };
