/** Seeded bootstrap confidence intervals: the same values and seed give the same interval. */
import { median, quantileSorted } from 'simple-statistics';
import { mulberry32 } from '../core/random.js';

export { mulberry32 };

/** FNV-1a of a string: a stable seed per metric id. */
export function seedOf(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return hash;
}

export interface BootstrapOptions {
  resamples: number;
  /** Two-sided level, e.g. 0.95. */
  level: number;
  seed: number;
}

export const DEFAULT_BOOTSTRAP: Omit<BootstrapOptions, 'seed'> = { resamples: 10_000, level: 0.95 };

function resample(values: readonly number[], random: () => number): number[] {
  return values.map(() => values[Math.floor(random() * values.length)] as number);
}

/** Percentile-bootstrap interval of the median of `values`. */
export function bootstrapMedianCI(values: readonly number[], options: BootstrapOptions): [number, number] {
  return percentileInterval(options, (random) => median(resample(values, random)));
}

/** Percentile-bootstrap interval of median(a) ÷ median(b), resampling each sample independently. */
export function bootstrapRatioOfMediansCI(
  a: readonly number[],
  b: readonly number[],
  options: BootstrapOptions,
): [number, number] {
  return percentileInterval(options, (random) => median(resample(a, random)) / median(resample(b, random)));
}

function percentileInterval(options: BootstrapOptions, statistic: (random: () => number) => number): [number, number] {
  const random = mulberry32(options.seed);
  const stats = Array.from({ length: options.resamples }, () => statistic(random)).sort((x, y) => x - y);
  const tail = (1 - options.level) / 2;
  return [quantileSorted(stats, tail), quantileSorted(stats, 1 - tail)];
}
