/**
 * Traces: a schedule as JSONL, one request a line, `{"offset_ms": 12.5, "server": 3, "input_tokens":
 * 256, "output_tokens": 64}` (`server`: the fleet server's index, or its label). A generated schedule
 * written as one replays arrival for arrival; a production log converted to one replays production.
 */
import { UserError } from '../../core/errors.js';
import type { Arrival } from './schedule.js';

/** The servers a trace may name: by index or by label. */
export type TraceServers = ReadonlyArray<{ index: number; label: string }>;

const KEYS = ['offset_ms', 'server', 'input_tokens', 'output_tokens'] as const;

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 1;

/** The problem of one parsed line, or its request. */
function lineArrival(data: unknown, servers: TraceServers): Arrival | string {
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    return `not a JSON object: give {${KEYS.map((k) => `"${k}": …`).join(', ')}}`;
  const line = data as Record<string, unknown>;
  const unknown = Object.keys(line).find((k) => !(KEYS as readonly string[]).includes(k));
  if (unknown !== undefined) return `unknown key "${unknown}": the keys are ${KEYS.join(', ')}`;
  const offset = line.offset_ms;
  if (typeof offset !== 'number' || !Number.isFinite(offset) || offset < 0)
    return `offset_ms ${JSON.stringify(offset)}: give the arrival's offset from the start in ms, a number ≥ 0`;
  const server = servers.find((s) => s.index === line.server || s.label === line.server);
  if (server === undefined)
    return `server ${JSON.stringify(line.server)} is not a server of the fleet: give an index ${servers[0]?.index ?? 1}..${servers.at(-1)?.index ?? 1} or a label (${servers
      .slice(0, 3)
      .map((s) => s.label)
      .join(', ')}${servers.length > 3 ? ', …' : ''})`;
  for (const key of ['input_tokens', 'output_tokens'] as const)
    if (!isCount(line[key])) return `${key} ${JSON.stringify(line[key])}: give a whole number of tokens ≥ 1`;
  return {
    offsetMs: offset,
    server: server.index,
    inputTokens: line.input_tokens as number,
    outputTokens: line.output_tokens as number,
  };
}

/**
 * A trace read: its requests in time order, and one line per bad line (`<file> line N: …`). Blank
 * lines are skipped.
 */
export function readTrace(
  text: string,
  servers: TraceServers,
  file: string,
): { arrivals: Arrival[]; problems: string[] } {
  const arrivals: Arrival[] = [];
  const problems: string[] = [];
  for (const [i, raw] of text.split('\n').entries()) {
    if (raw.trim() === '') continue;
    let data: unknown;
    try {
      data = JSON.parse(raw);
    } catch {
      problems.push(`${file} line ${i + 1}: not JSON: give one JSON object a line`);
      continue;
    }
    const got = lineArrival(data, servers);
    if (typeof got === 'string') problems.push(`${file} line ${i + 1}: ${got}`);
    else arrivals.push(got);
  }
  if (problems.length === 0 && arrivals.length === 0)
    problems.push(`${file} holds no requests: give one JSON object a line`);
  return { arrivals: arrivals.sort((a, b) => a.offsetMs - b.offsetMs || a.server - b.server), problems };
}

/** A trace's requests, or a UserError: its first bad line, and the numbers of the others. */
export function parseTrace(text: string, servers: TraceServers, file: string): Arrival[] {
  const { arrivals, problems } = readTrace(text, servers, file);
  if (problems.length === 0) return arrivals;
  const more = problems.slice(1).map((p) => /line (\d+):/.exec(p)?.[1]);
  const rest =
    more.length === 0
      ? ''
      : ` (and ${more.length} more bad lines: ${more.slice(0, 10).join(', ')}${more.length > 10 ? ', …' : ''})`;
  throw new UserError(`${problems[0]}${rest}`);
}

/** A schedule as a trace, servers by index: `readTrace` of it gives the schedule back. */
export function traceText(schedule: readonly Arrival[]): string {
  return schedule
    .map((a) =>
      JSON.stringify({
        offset_ms: a.offsetMs,
        server: a.server,
        input_tokens: a.inputTokens,
        output_tokens: a.outputTokens,
      }),
    )
    .join('\n')
    .concat(schedule.length > 0 ? '\n' : '');
}
