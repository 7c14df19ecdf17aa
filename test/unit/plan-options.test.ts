import { describe, expect, it } from 'vitest';
import { resolvePlanOptions } from '../../harness/deploy/options.js';
import { userErrorOf } from '../helpers.js';

describe('plan --run', () => {
  it('names a run directory that is not there, before asking for the model flags a server run does without', () => {
    expect(userErrorOf(() => resolvePlanOptions({ run: '/nowhere/serve-run' } as never))).toBe(
      '--run /nowhere/serve-run: no such run directory; give one that gpushare bench or capacity wrote',
    );
  });

  it('still asks a workload plan without a run for its model flags', () => {
    expect(userErrorOf(() => resolvePlanOptions({} as never))).toBe(
      'plan needs --models, --mem-gib, --sm-pct (see gpushare plan --help)',
    );
  });
});
