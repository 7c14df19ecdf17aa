/**
 * The fleet file's schema (YAML or JSON): its keys, their types and ranges, and each key's one-line
 * advice. What spans keys (shares that add up, memory, ports, the MPS client limit) is checked by
 * fleet-file.ts once the shape holds.
 */
import { z } from 'zod';

/** One message for every way a value can be wrong: what to give instead. */
const whole = (min: number, max: number, error: string) =>
  z.number({ error }).int({ error }).min(min, { error }).max(max, { error });
const positive = (max: number, error: string) => z.number({ error }).positive({ error }).max(max, { error });
const text = (error: string) => z.string({ error }).trim().min(1, { error });

const TOKENS = 'give a whole number of tokens from 1 to 1000000';
const tokens = whole(1, 1_000_000, TOKENS);

export const LENGTH_LAWS = ['fixed', 'uniform', 'lognormal', 'file'] as const;
const LAW = (laws: readonly string[]) => `give law: one of ${laws.join(', ')}`;

const LengthSchema = z.discriminatedUnion(
  'law',
  [
    z.strictObject({ law: z.literal('fixed'), tokens }),
    z.strictObject({ law: z.literal('uniform'), min: tokens, max: tokens }),
    z.strictObject({
      law: z.literal('lognormal'),
      median: tokens,
      sigma: positive(5, "give the sigma of the length's log, a number in (0, 5]"),
      max: tokens,
    }),
    z.strictObject({ law: z.literal('file'), path: text('give the path of a file of lengths, one a line') }),
  ],
  { error: LAW(LENGTH_LAWS) },
);
export type LengthEntry = z.infer<typeof LengthSchema>;

export const ARRIVAL_LAWS = ['poisson', 'gamma', 'constant'] as const;
const ArrivalSchema = z.discriminatedUnion(
  'law',
  [
    z.strictObject({ law: z.literal('poisson') }),
    z.strictObject({
      law: z.literal('gamma'),
      cv: positive(10, 'give the coefficient of variation of the gaps, in (0, 10]: 1 is Poisson, larger is burstier'),
    }),
    z.strictObject({ law: z.literal('constant') }),
  ],
  { error: LAW(ARRIVAL_LAWS) },
);

const PopularitySchema = z.strictObject({
  law: z.literal('zipf', { error: 'give law: zipf' }),
  s: z
    .number({ error: 'give the Zipf exponent s, a number from 0 (uniform) to 10' })
    .min(0, { error: 'give the Zipf exponent s, a number from 0 (uniform) to 10' })
    .max(10, { error: 'give the Zipf exponent s, a number from 0 (uniform) to 10' }),
});

const RATE = 'give requests/s, a number > 0 and ≤ 100000';

export const TrafficSchema = z.strictObject({
  rate_per_s: positive(100_000, RATE).optional(),
  popularity: PopularitySchema.optional(),
  arrivals: ArrivalSchema.optional(),
  input_tokens: LengthSchema.optional(),
  output_tokens: LengthSchema.optional(),
  trace: text('give the path of a JSONL trace').optional(),
});

const NAME = 'give a name of letters, digits, . _ - (it labels the servers)';

export const ServerSchema = z.strictObject({
  name: z
    .string({ error: NAME })
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, { error: NAME })
    .optional(),
  model: text('give the model label, e.g. qwen2.5-0.5b'),
  command: text("give the server's command line with {port}, e.g. 'vllm serve … --port {port}'"),
  mem_fraction: positive(1, "give the server's share of the GPU's memory, a number in (0, 1]"),
  thread_pct: whole(1, 100, 'give the MPS thread cap, a whole percent from 1 to 100').optional(),
  count: whole(1, 1000, 'give how many servers of this kind, a whole number ≥ 1').optional(),
  share: positive(1, "give each server's share of traffic.rate_per_s, a number in (0, 1]").optional(),
  rate_per_s: positive(100_000, RATE).optional(),
  port: whole(1024, 65535, 'give the first port of this kind, a whole number from 1024 to 65535').optional(),
});
export type ServerEntry = z.infer<typeof ServerSchema>;

/** The in-process arm: one server process serving every server's model, measured beside the N processes. */
export const InProcessSchema = z.strictObject({
  command: text(
    "give the command line of one server serving every model, with {port} and {models}, e.g. '… --port {port} --models {models}'",
  ),
});

export const FleetSchema = z.strictObject({
  seed: whole(0, 2 ** 32 - 1, 'give the seed of the traffic, a whole number from 0 to 4294967295').optional(),
  traffic: TrafficSchema.optional(),
  servers: z.array(ServerSchema, { error: 'give a list of servers' }).min(1, { error: 'give at least one server' }),
  in_process: InProcessSchema.optional(),
});
export type FleetEntry = z.infer<typeof FleetSchema>;

/** The keys allowed where `path` (a zod issue's) points, for an unknown key's advice. */
export function keysAt(path: readonly PropertyKey[], data: unknown): string[] {
  const at = path.filter((p) => typeof p === 'string').join('.');
  if (at === '') return Object.keys(FleetSchema.shape);
  if (at === 'traffic') return Object.keys(TrafficSchema.shape);
  if (at === 'servers') return Object.keys(ServerSchema.shape);
  if (at === 'traffic.popularity') return Object.keys(PopularitySchema.shape);
  if (at === 'in_process') return Object.keys(InProcessSchema.shape);
  const value = path.reduce<unknown>((v, p) => (v as Record<PropertyKey, unknown> | undefined)?.[p], data);
  const law = (value as { law?: unknown } | undefined)?.law;
  const union = at === 'traffic.arrivals' ? ArrivalSchema : LengthSchema;
  const option = union.options.find((o) => o.shape.law.value === law);
  return option === undefined ? ['law'] : Object.keys(option.shape);
}
