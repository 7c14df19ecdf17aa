/** What the e2e tests of `capacity --serve --fleet` share: a one-kind fleet file and a short search's flags. */
import { writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * A short search's flags, timeslice only: by default windows of 1 s, 400 requests a server a step (2 × 1 s at
 * 200 req/s), enough for a verdict within the SLO of 2 s. `readyTimeoutS`: --ready-timeout-s, or the default
 * where not given.
 */
export const searchArgs = ({
  windowS = 1,
  rounds = 2,
  sloTtftP99Ms = 2000,
  readyTimeoutS,
}: {
  windowS?: number;
  rounds?: number;
  sloTtftP99Ms?: number;
  readyTimeoutS?: number;
} = {}) => [
  '--modes',
  'timeslice',
  '--window-s',
  String(windowS),
  '--rounds',
  String(rounds),
  '--warmup-s',
  '0',
  '--slo-ttft-p99-ms',
  String(sloTtftP99Ms),
  '--ceiling-step-s',
  '0.05',
  '--replicates',
  '1',
  '--load-workers',
  '1',
  ...(readyTimeoutS === undefined ? [] : ['--ready-timeout-s', String(readyTimeoutS)]),
];

/** A fleet file in `dir` of `count` servers of one kind at 200 req/s each, run by `command` ({port} in it). */
export function oneKindFleet(dir: string, command: string, count: number): string {
  const file = path.join(dir, 'fleet.yaml');
  writeFileSync(
    file,
    [
      'seed: 7',
      'traffic:',
      '  arrivals: {law: constant}',
      '  input_tokens: {law: fixed, tokens: 8}',
      '  output_tokens: {law: fixed, tokens: 4}',
      'servers:',
      `  - {name: fast, model: sim-fast, command: "${command}", mem_fraction: 0.1, count: ${count}, rate_per_s: 200}`,
      '',
    ].join('\n'),
  );
  return file;
}
