/**
 * Every reader of a record, on records its schema accepts: the committed bench and mix runs with a
 * few fields changed to other values of their type (numbers of any size and sign, any text, a flipped
 * boolean, an array cut short), kept only where the schema still accepts them. show, report, gate,
 * plan, artifacts, fleet report and mix's report and artifacts may refuse one (exit 2) or find it
 * wanting (1, 3), but never fail inside (exit 70: runCli rejects). Few draws: each runs the CLI.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RunSchema } from '../../harness/bench/record/schema.js';
import { MixRunSchema } from '../../harness/mix/record.js';
import { DEFAULT_RUN, H100_MIX_RUN, runCli, tempDir } from '../helpers.js';

const BENCH = DEFAULT_RUN;
const MIX = H100_MIX_RUN;
const RUNS = 6;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
/** A place in a record: its parent and the key or index there. */
type Slot = { parent: Json[] | { [key: string]: Json }; key: string | number };

/**
 * Every slot of a record, grouped by field (its path with indices left out: `fingerprint.gpus[].name`):
 * a draw picks a field first, so a GPU's MIG table is as likely as a trial's window, of which there
 * are thousands.
 */
function slotsByField(record: { [key: string]: Json }): Slot[][] {
  const fields = new Map<string, Slot[]>();
  const walk = (parent: Json[] | { [key: string]: Json }, at: string) => {
    for (const key of Array.isArray(parent) ? parent.keys() : Object.keys(parent)) {
      const field = Array.isArray(parent) ? `${at}[]` : `${at}.${key}`;
      fields.set(field, [...(fields.get(field) ?? []), { parent, key }]);
      const value = (parent as Record<string | number, Json>)[key] as Json;
      if (value !== null && typeof value === 'object') walk(value, field);
    }
  };
  walk(record, '');
  return [...fields.values()];
}

const mutation = fc.record({
  field: fc.nat(),
  at: fc.nat(),
  number: fc.oneof(
    fc.integer({ min: -1e9, max: 1e9 }),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.constantFrom(0, -1, 1e300, 2 ** 53, 0.5),
  ),
  text: fc.oneof(fc.string(), fc.constantFrom('', '../x', '\u001b[31mred', 'a\nb', '0', 'null')),
  keep: fc.nat({ max: 3 }),
});

/** `base` with each mutation applied to a slot of its type (objects and nulls are left as they are). */
function mutated(base: string, mutations: Array<typeof mutation extends fc.Arbitrary<infer T> ? T : never>): Json {
  const record = JSON.parse(base) as { [key: string]: Json };
  const groups = slotsByField(record);
  for (const m of mutations) {
    const group = groups[m.field % groups.length] as Slot[];
    const { parent, key } = group[m.at % group.length] as Slot;
    const slots = parent as Record<string | number, Json>;
    const value = slots[key] as Json;
    if (typeof value === 'number') slots[key] = m.number;
    else if (typeof value === 'string') slots[key] = m.text;
    else if (typeof value === 'boolean') slots[key] = !value;
    else if (Array.isArray(value)) slots[key] = value.slice(0, Math.min(value.length, m.keep));
  }
  return record;
}

/** The exit code, which must be one a user can act on: a rejection (an internal error) fails the property. */
async function exitOf(args: string[]): Promise<number> {
  const { exitCode } = await runCli(args);
  expect([0, 1, 2, 3]).toContain(exitCode);
  return exitCode;
}

describe('no reader fails inside on a record its schema accepts', () => {
  it('bench run: show, report, gate, plan, artifacts, fleet report', async () => {
    const base = readFileSync(path.join(BENCH, 'run.json'), 'utf8');
    await fc.assert(
      fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 4 }), async (mutations) => {
        const record = mutated(base, mutations);
        fc.pre(RunSchema.safeParse(record).success);
        const fleet = tempDir();
        const dir = path.join(fleet, 'node-a');
        mkdirSync(dir);
        writeFileSync(path.join(dir, 'run.json'), JSON.stringify(record));
        await exitOf(['show', dir]);
        await exitOf(['report', dir, '--out', tempDir()]);
        await exitOf(['gate', dir]);
        await exitOf(['gate', dir, '--baseline', BENCH]);
        await exitOf(['plan', '--models', '2', '--mem-gib', '2', '--sm-pct', '20', '--run', dir]);
        await exitOf(['artifacts', '--run', dir, '--out', tempDir()]);
        await exitOf(['fleet', 'report', fleet, '--out', tempDir()]);
      }),
      // No shrinking: each draw runs the CLI, and a counterexample is readable as drawn.
      { numRuns: RUNS, endOnFailure: true },
    );
  });

  it('mix run: report and artifacts --mix', async () => {
    const base = readFileSync(path.join(MIX, 'mix.json'), 'utf8');
    await fc.assert(
      fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 4 }), async (mutations) => {
        const record = mutated(base, mutations);
        fc.pre(MixRunSchema.safeParse(record).success);
        const dir = path.join(tempDir(), path.basename(MIX));
        cpSync(MIX, dir, { recursive: true });
        writeFileSync(path.join(dir, 'mix.json'), JSON.stringify(record));
        await exitOf(['report', dir, '--out', tempDir()]);
        await exitOf(['artifacts', '--mix', dir, '--out', tempDir()]);
      }),
      // No shrinking: each draw runs the CLI, and a counterexample is readable as drawn.
      { numRuns: RUNS, endOnFailure: true },
    );
  });
});
