/**
 * Thresholds: which ratio must lie where. Defaults grade the canonical probes (the spin workload's
 * stream speedup, the GEMM time-slicing slowdown); a YAML or JSON file replaces them.
 */
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { UserError } from '../../core/errors.js';
import { readRegularFile } from '../../record/store.js';

/** A thresholds file is a few KiB: one past 64 MiB is none. */
const MAX_THRESHOLDS_BYTES = 64 * 1024 * 1024;

const BoundsSchema = z
  .object({ min: z.number().optional(), max: z.number().optional() })
  .strict()
  .refine((b) => b.min !== undefined || b.max !== undefined, 'give min, max or both')
  .refine((b) => b.min === undefined || b.max === undefined || b.min <= b.max, 'min must not be above max');

/** The thresholds file, version 1. */
export const ThresholdsFileSchema = z
  .object({
    version: z.literal(1).optional(),
    /** Gate: the narrowest band; a change of a ratio within ±noiseBand is never a regression. */
    noiseBand: z.number().min(0).max(1).optional(),
    /** Metric id pattern (`*` matches any run of characters) → inclusive bounds. First match wins. */
    thresholds: z.record(z.string().min(1), BoundsSchema).optional(),
  })
  .strict();

/** Inclusive bounds on a ratio. */
export interface Bounds {
  min?: number;
  max?: number;
}

/** Thresholds in force: stored in each run's config, applied by the gate and the reports. */
export interface Thresholds {
  noiseBand: number;
  rules: Array<{ pattern: string; bounds: Bounds }>;
}

export const DEFAULT_THRESHOLDS: Thresholds = {
  // The narrowest band the gate judges a change against (bands.ts widens it by how much runs
  // differ): a change under 5% is never called one, however precise the two runs.
  noiseBand: 0.05,
  rules: [
    { pattern: 'streams/spin/speedup-k*', bounds: { min: 1.05 } },
    { pattern: 'timeslice/gemm/slowdown', bounds: { min: 1.2, max: 3.5 } },
  ],
};

// Compiled once per pattern: a file of many rules must not compile a RegExp per lookup.
const compiled = new Map<string, RegExp>();
function patternToRegExp(pattern: string): RegExp {
  let re = compiled.get(pattern);
  if (!re) {
    re = new RegExp(
      `^${pattern
        .split('*')
        .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
    );
    compiled.set(pattern, re);
  }
  return re;
}

/** The bounds that apply to a metric id, or null. */
export function boundsFor(thresholds: Thresholds, metricId: string): { pattern: string; bounds: Bounds } | null {
  return thresholds.rules.find((rule) => patternToRegExp(rule.pattern).test(metricId)) ?? null;
}

/**
 * A pattern of a thresholds file that matches none of `metricIds` is a mistake (a typo would
 * silently turn its check off): a one-line error naming it and the nearest metric ids.
 */
export function checkPatterns(thresholds: Thresholds, metricIds: readonly string[], file: string): void {
  for (const { pattern } of thresholds.rules) {
    const re = patternToRegExp(pattern);
    if (metricIds.some((id) => re.test(id))) continue;
    const nearest = [...metricIds].sort((a, b) => editDistance(pattern, a) - editDistance(pattern, b)).slice(0, 3);
    throw new UserError(
      `${file}: thresholds pattern "${pattern}" matches no metric of this run${nearest.length > 0 ? `; nearest: ${nearest.join(', ')}` : ''}`,
    );
  }
}

/** Levenshtein distance: how many single-character edits turn a into b. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(
        (prev[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    prev = row;
  }
  return prev[b.length] as number;
}

/** Parses a thresholds file's text; errors name the file, the path inside it, the bad value and what is allowed. */
export function parseThresholds(text: string, file: string): Thresholds {
  let data: unknown;
  try {
    data = file.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new UserError(
      `${file} is not valid ${file.endsWith('.json') ? 'JSON' : 'YAML'}: ${(error as Error).message.split('\n')[0]}`,
    );
  }
  const parsed = ThresholdsFileSchema.safeParse(data ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length
      ? issue.path
          .map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))
          .join('')
          .replace(/^\./, '')
      : '(top level)';
    const got = valueAt(data, issue?.path ?? []);
    throw new UserError(
      `${file}: ${where}: ${issue?.message ?? 'invalid'}${got === undefined ? '' : ` (got ${JSON.stringify(got)})`}`,
    );
  }
  const { noiseBand, thresholds } = parsed.data;
  return {
    noiseBand: noiseBand ?? DEFAULT_THRESHOLDS.noiseBand,
    rules: thresholds
      ? Object.entries(thresholds).map(([pattern, bounds]) => ({ pattern, bounds }))
      : DEFAULT_THRESHOLDS.rules,
  };
}

export async function loadThresholds(file: string | undefined): Promise<Thresholds> {
  if (file === undefined) return DEFAULT_THRESHOLDS;
  // A regular file only: a FIFO (or a device) given as --config would block the gate forever.
  const text = await readRegularFile(file, 'give a thresholds file (YAML or JSON)', MAX_THRESHOLDS_BYTES).catch(
    (error: NodeJS.ErrnoException) => {
      if (error instanceof UserError) throw error;
      throw new UserError(`cannot read the thresholds file ${file} (${error.code ?? error.message})`);
    },
  );
  return parseThresholds(text, file);
}

function valueAt(data: unknown, path: readonly PropertyKey[]): unknown {
  let here = data;
  for (const key of path) {
    if (here === null || typeof here !== 'object') return undefined;
    here = (here as Record<PropertyKey, unknown>)[key];
  }
  return here;
}

export function describeBounds(bounds: Bounds): string {
  if (bounds.min !== undefined && bounds.max !== undefined) return `${bounds.min}–${bounds.max}`;
  return bounds.min !== undefined ? `≥ ${bounds.min}` : `≤ ${bounds.max}`;
}
