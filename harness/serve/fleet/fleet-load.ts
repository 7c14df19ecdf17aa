/**
 * A fleet file read with the files it names (length files, a trace), and the schedule it sends: the
 * generated one under its seed, or the trace's requests. Reading is the one side effect, behind `read`.
 */
import { readFile } from 'node:fs/promises';
import { UserError } from '../../core/errors.js';
import { type LengthLaw, parseLengths } from '../../load/traffic/lengths.js';
import { type Arrival, countsPerServer, generateSchedule } from '../../load/traffic/schedule.js';
import { parseTrace } from '../../load/traffic/trace.js';
import { type Fleet, type LengthGiven, parseFleet } from './fleet-file.js';

export type ReadText = (file: string) => Promise<string>;

const readText: ReadText = (file) => readFile(file, 'utf8');

async function textOf(file: string, what: string, read: ReadText): Promise<string> {
  try {
    return await read(file);
  } catch (error) {
    throw new UserError(`cannot read ${what} ${file} (${(error as NodeJS.ErrnoException).code ?? error})`);
  }
}

async function lengthLaw(given: LengthGiven, what: string, read: ReadText): Promise<LengthLaw> {
  if (given.kind !== 'file') return given;
  const got = parseLengths(await textOf(given.path, `the ${what} lengths file`, read), given.path);
  if ('problem' in got) throw new UserError(got.problem);
  return { kind: 'empirical', values: got.values };
}

/** The fleet of `file`, its length files and trace read and checked (each refusal one UserError line). */
export async function loadFleet(file: string, read: ReadText = readText): Promise<Fleet> {
  const given = parseFleet(await textOf(file, 'the fleet file', read), file);
  const t = given.traffic;
  if (t.source === 'generated')
    return {
      ...given,
      traffic: {
        ...t,
        inputTokens: await lengthLaw(t.inputTokens, 'input', read),
        outputTokens: await lengthLaw(t.outputTokens, 'output', read),
      },
    };
  const arrivals = parseTrace(await textOf(t.file, 'the trace', read), given.servers, t.file);
  const counts = countsPerServer(
    arrivals,
    given.servers.map((s) => s.index),
  );
  return {
    ...given,
    servers: given.servers.map((s) => ({ ...s, share: (counts.get(s.index) ?? 0) / arrivals.length })),
    traffic: { ...t, arrivals },
  };
}

/**
 * The requests the fleet sends within [0, durationMs): generated under the fleet's seed with every rate
 * × `rateScale` (a capacity step), or the trace's requests (a trace is replayed as it is: `rateScale` 1).
 */
export function fleetSchedule(fleet: Fleet, durationMs: number, rateScale = 1): Arrival[] {
  const t = fleet.traffic;
  if (t.source === 'trace') {
    if (rateScale !== 1) throw new RangeError('fleetSchedule: a trace replays at its own rate (rateScale 1)');
    return t.arrivals.filter((a) => a.offsetMs < durationMs);
  }
  return generateSchedule(
    {
      servers: fleet.servers.map((s) => ({ index: s.index, ratePerS: (s.ratePerS as number) * rateScale })),
      arrivals: t.arrivals,
      inputTokens: t.inputTokens,
      outputTokens: t.outputTokens,
      seed: fleet.seed,
    },
    durationMs,
  );
}
