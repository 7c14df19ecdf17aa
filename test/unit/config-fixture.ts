import { resolveBenchOptions } from '../../harness/bench/options.js';
import type { Config } from '../../harness/bench/record/schema.js';

/** A resolved default config with some fields replaced. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return { ...resolveBenchOptions({ rest: [] }).config, ...overrides };
}
