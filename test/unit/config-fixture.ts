import { resolveBenchOptions } from '../../harness/options.js';
import type { Config } from '../../harness/run/schema.js';

/** A resolved default config with some fields replaced. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return { ...resolveBenchOptions({ command: [] }).config, ...overrides };
}
