/**
 * The fleet file of `bench --serve --fleet` and `capacity --serve --fleet`: servers of several kinds
 * (each kind's command, model, memory share, MPS thread cap, traffic share or rate, `count` of them) and
 * the traffic they get. A bad file is refused in one line naming the key and how to fix it (UserError:
 * exit 2); a good one is expanded to its concrete servers.
 */
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { UserError } from '../../core/errors.js';
import type { ArrivalLaw } from '../../load/traffic/arrivals.js';
import type { LengthLaw } from '../../load/traffic/lengths.js';
import { zipfShares } from '../../load/traffic/popularity.js';
import type { Arrival } from '../../load/traffic/schedule.js';
import { MPS_CLIENT_LIMIT } from '../../system/mps/client-limit.js';
import { type FleetEntry, FleetSchema, keysAt, type LengthEntry, type ServerEntry } from './fleet-schema.js';

/** How far the servers' traffic shares may sum from 1: rounding in a hand-written file, not a mistake. */
export const SHARE_SUM_TOLERANCE = 0.001;

/** One concrete server of the fleet. */
export interface FleetServer {
  /** 1-based, in file order: {index}, and the server a trace names. */
  index: number;
  /** Unique: the kind's name, with `-k` (1-based) when the kind has count > 1. */
  label: string;
  /** The kind's name (its `name`, else its `model`). */
  kind: string;
  model: string;
  /** The kind's command line, its placeholders ({port} {index} {gpu_uuid} {mem_fraction}) unfilled. */
  command: string;
  memFraction: number;
  threadPct: number | null;
  /** A port the file fixes, or null: a free one is picked. */
  port: number | null;
  /** Its share of the fleet's requests (from the popularity law, the file, or the trace's counts). */
  share: number;
  /** Its mean rate, requests/s; null for a trace (the trace's offsets set it). */
  ratePerS: number | null;
}

export type FleetTraffic =
  | {
      source: 'generated';
      /** The fleet's total rate, requests/s. */
      ratePerS: number;
      /** How the file gave each server's rate: a popularity law, shares of the total, or each its own rate (a sized fleet keeps it). */
      way: 'popularity' | 'share' | 'rate';
      popularity: { law: 'zipf'; s: number } | null;
      arrivals: ArrivalLaw;
      inputTokens: LengthLaw;
      outputTokens: LengthLaw;
    }
  | { source: 'trace'; file: string; arrivals: Arrival[] };

export interface Fleet {
  seed: number;
  servers: FleetServer[];
  traffic: FleetTraffic;
  /** The in-process arm's command (placeholders {port} and {models} unfilled), or null: the file has none. */
  inProcess: { command: string } | null;
}

/** A length law as the file gives it, a file's lengths still to read (`lengthsFile`). */
export type LengthGiven = Exclude<LengthLaw, { kind: 'empirical' }> | { kind: 'file'; path: string };

/** The fleet, its length files and trace not yet read (`loadFleet` reads them). */
export type FleetGiven = Omit<Fleet, 'traffic'> & {
  traffic:
    | (Omit<Extract<FleetTraffic, { source: 'generated' }>, 'inputTokens' | 'outputTokens'> & {
        inputTokens: LengthGiven;
        outputTokens: LengthGiven;
      })
    | { source: 'trace'; file: string };
};

const fail = (file: string, where: string, what: string): never => {
  throw new UserError(`${file}: ${where}: ${what}`);
};

/** `servers[2].count`, as the user would look it up. */
function pathText(at: readonly PropertyKey[]): string {
  return at.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`)).join('');
}

function issueText(issue: z.core.$ZodIssue, data: unknown): string {
  if (issue.code === 'unrecognized_keys') {
    const where = issue.path.length === 0 ? '(top level)' : pathText(issue.path);
    return `${where}: unknown key "${issue.keys[0]}": remove it or use one of ${keysAt(issue.path, data).join(', ')}`;
  }
  const value = issue.path.reduce<unknown>((v, p) => (v as Record<PropertyKey, unknown> | undefined)?.[p], data);
  const given = value === undefined ? 'is missing' : `is ${JSON.stringify(value)}`;
  return `${pathText(issue.path)} ${given}: ${issue.message}`;
}

/** The file's text read as YAML (JSON is YAML too) and checked against the schema, or one line. */
function shapeOf(text: string, file: string): FleetEntry {
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch (error) {
    throw new UserError(`${file} is not valid YAML or JSON: ${(error as Error).message.split('\n')[0]}`);
  }
  const parsed = FleetSchema.safeParse(data ?? {});
  if (parsed.success) return parsed.data;
  // A misspelt key is also a missing one: naming the unknown key says more.
  const issues = parsed.error.issues;
  const issue = issues.find((i) => i.code === 'unrecognized_keys') ?? issues[0];
  throw new UserError(`${file}: ${issue === undefined ? 'invalid' : issueText(issue, data)}`);
}

const countOf = (s: ServerEntry) => s.count ?? 1;
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/** The checks across servers: names, ports, memory, the MPS client limit. */
function checkServers(servers: ServerEntry[], file: string): void {
  const total = sum(servers.map(countOf));
  if (total > MPS_CLIENT_LIMIT)
    fail(
      file,
      'servers[].count',
      `${total} servers in all (${servers.map(countOf).join(' + ')}), over the ${MPS_CLIENT_LIMIT} clients an MPS server accepts per GPU: lower the counts to ${MPS_CLIENT_LIMIT} in all`,
    );
  const memory = sum(servers.map((s) => s.mem_fraction * countOf(s)));
  if (memory > 1 + 1e-9)
    fail(
      file,
      'servers[].mem_fraction',
      `the memory shares add up to ${memory.toFixed(3)} (Σ mem_fraction × count), over 1: lower mem_fraction or count`,
    );
  const names = new Map<string, number>();
  const ports = new Map<number, number>();
  for (const [i, s] of servers.entries()) {
    if (!s.command.includes('{port}'))
      fail(file, `servers[${i}].command`, "put {port} where the server takes its port, e.g. '--port {port}'");
    const name = s.name ?? s.model;
    const same = names.get(name);
    if (same !== undefined)
      fail(file, `servers[${i}].name`, `"${name}" is servers[${same}]'s name too: give each kind its own name`);
    names.set(name, i);
    if (s.port === undefined) continue;
    for (let k = 0; k < countOf(s); k++) {
      const other = ports.get(s.port + k);
      if (other !== undefined)
        fail(
          file,
          `servers[${i}].port`,
          `port ${s.port + k} is also one of servers[${other}]'s (a kind of count n takes port … port + n − 1): give ports that do not overlap`,
        );
      ports.set(s.port + k, i);
    }
    if (s.port + countOf(s) - 1 > 65535)
      fail(file, `servers[${i}].port`, `${s.port} + count − 1 is over 65535: give a lower port`);
  }
}

/** Each kind's share of one server, or one line: popularity, shares or rates, one way for all. */
function trafficWay(entry: FleetEntry, file: string): 'popularity' | 'share' | 'rate' | 'trace' {
  const t = entry.traffic ?? {};
  const servers = entry.servers;
  if (t.trace !== undefined) {
    for (const key of ['rate_per_s', 'popularity', 'arrivals', 'input_tokens', 'output_tokens'] as const)
      if (t[key] !== undefined)
        fail(file, `traffic.${key}`, 'traffic.trace replays the arrivals and lengths: remove this key or the trace');
    const i = servers.findIndex((s) => s.share !== undefined || s.rate_per_s !== undefined);
    if (i >= 0) fail(file, `servers[${i}]`, 'traffic.trace replays the arrivals: remove share and rate_per_s');
    return 'trace';
  }
  const both = servers.findIndex((s) => s.share !== undefined && s.rate_per_s !== undefined);
  if (both >= 0) fail(file, `servers[${both}]`, 'give share or rate_per_s, not both');
  if (t.popularity !== undefined) {
    const i = servers.findIndex((s) => s.share !== undefined || s.rate_per_s !== undefined);
    if (i >= 0) fail(file, `servers[${i}]`, 'traffic.popularity sets every share: remove share and rate_per_s');
    return 'popularity';
  }
  const way = servers[0]?.share !== undefined ? 'share' : servers[0]?.rate_per_s !== undefined ? 'rate' : null;
  if (way === null)
    fail(
      file,
      'traffic.popularity',
      'give traffic.popularity (e.g. {law: zipf, s: 1}), or each server its share or its rate_per_s',
    );
  const odd = servers.findIndex((s) => (way === 'share' ? s.share === undefined : s.rate_per_s === undefined));
  if (odd >= 0)
    fail(file, `servers[${odd}]`, `give every server a ${way === 'share' ? 'share' : 'rate_per_s'}, as servers[0]`);
  return way as 'share' | 'rate';
}

/** Each concrete server's share of the fleet's requests, in index order. */
function shares(entry: FleetEntry, way: 'popularity' | 'share' | 'rate', file: string): number[] {
  const each = entry.servers.flatMap((s) => Array.from({ length: countOf(s) }, () => s));
  if (way === 'popularity') return zipfShares(each.length, entry.traffic?.popularity?.s ?? 0);
  const given = each.map((s) => (way === 'share' ? s.share : s.rate_per_s) as number);
  const total = sum(given);
  if (way === 'share' && Math.abs(total - 1) > SHARE_SUM_TOLERANCE)
    fail(
      file,
      'servers[].share',
      `the shares add up to ${total.toFixed(4)} (Σ share × count), not 1 (±${SHARE_SUM_TOLERANCE}): make them add up to 1`,
    );
  return given.map((g) => g / total);
}

/** The in-process arm's command, checked for the placeholders it needs, or null where the file has none. */
function inProcessOf(entry: FleetEntry, file: string): Fleet['inProcess'] {
  const command = entry.in_process?.command;
  if (command === undefined) return null;
  for (const [key, what] of [
    ['{port}', "where the server takes its port, e.g. '--port {port}'"],
    [
      '{models}',
      "where it takes the models it serves, e.g. '--models {models}' (each server's label=model, comma-separated)",
    ],
  ] as const)
    if (!command.includes(key)) fail(file, 'in_process.command', `put ${key} ${what}`);
  return { command };
}

function lengthGiven(law: LengthEntry | undefined, fallback: number): LengthGiven {
  if (law === undefined) return { kind: 'fixed', tokens: fallback };
  if (law.law === 'fixed') return { kind: 'fixed', tokens: law.tokens };
  if (law.law === 'uniform') return { kind: 'uniform', min: law.min, max: law.max };
  if (law.law === 'lognormal') return { kind: 'lognormal', median: law.median, sigma: law.sigma, max: law.max };
  return { kind: 'file', path: law.path };
}

function checkLengths(entry: FleetEntry, file: string): void {
  for (const key of ['input_tokens', 'output_tokens'] as const) {
    const law = entry.traffic?.[key];
    if (law?.law === 'uniform' && law.min > law.max)
      fail(file, `traffic.${key}`, `min ${law.min} is over max ${law.max}: give min ≤ max`);
    if (law?.law === 'lognormal' && law.median > law.max)
      fail(file, `traffic.${key}`, `median ${law.median} is over max ${law.max}: give median ≤ max`);
  }
}

/** The generated traffic's total rate, or one line where the file's way needs it and lacks it. */
function totalRate(entry: FleetEntry, way: 'popularity' | 'share' | 'rate', file: string): number {
  const given = entry.traffic?.rate_per_s;
  if (way === 'rate') {
    if (given !== undefined)
      fail(file, 'traffic.rate_per_s', 'the servers give their own rate_per_s: remove the total, or give shares');
    return sum(entry.servers.map((s) => (s.rate_per_s as number) * countOf(s)));
  }
  if (given === undefined)
    fail(file, 'traffic.rate_per_s', "give the fleet's total rate in requests/s: the shares divide it");
  return given as number;
}

/** The servers of `entry`, one per count, in file order. */
function expand(
  entry: FleetEntry,
  file: string,
  share: (index: number) => number,
  rate: (index: number) => number | null,
) {
  const servers: FleetServer[] = [];
  const labels = new Map<string, number>();
  for (const [i, s] of entry.servers.entries()) {
    const kind = s.name ?? s.model;
    for (let k = 0; k < countOf(s); k++) {
      const index = servers.length + 1;
      const label = countOf(s) === 1 ? kind : `${kind}-${k + 1}`;
      const other = labels.get(label);
      // A trace names servers by label: "a" of count 2 labels its servers a-1 and a-2.
      if (other !== undefined)
        fail(
          file,
          `servers[${i}].name`,
          `its server's label "${label}" is also one of servers[${other}]'s: rename one`,
        );
      labels.set(label, i);
      servers.push({
        index,
        label,
        kind,
        model: s.model,
        command: s.command,
        memFraction: s.mem_fraction,
        threadPct: s.thread_pct ?? null,
        port: s.port === undefined ? null : s.port + k,
        share: share(index),
        ratePerS: rate(index),
      });
    }
  }
  return servers;
}

/**
 * A fleet file's text checked and expanded: its servers, its traffic (length files and trace named,
 * resolved against the file's folder, not yet read). Every refusal is one UserError line.
 */
export function parseFleet(text: string, file: string): FleetGiven {
  const entry = shapeOf(text, file);
  checkServers(entry.servers, file);
  checkLengths(entry, file);
  const inProcess = inProcessOf(entry, file);
  const way = trafficWay(entry, file);
  const seed = entry.seed ?? 1;
  const beside = (p: string) => path.resolve(path.dirname(file), p);
  if (way === 'trace') {
    const n = sum(entry.servers.map(countOf));
    // The trace's counts set the shares once read (loadFleet); until then, equal.
    const servers = expand(
      entry,
      file,
      () => 1 / n,
      () => null,
    );
    return { seed, servers, inProcess, traffic: { source: 'trace', file: beside(entry.traffic?.trace as string) } };
  }
  const fractions = shares(entry, way, file);
  const ratePerS = totalRate(entry, way, file);
  const t = entry.traffic ?? {};
  const length = (law: LengthEntry | undefined, fallback: number): LengthGiven => {
    const given = lengthGiven(law, fallback);
    return given.kind === 'file' ? { kind: 'file', path: beside(given.path) } : given;
  };
  const arrivals: ArrivalLaw =
    t.arrivals === undefined || t.arrivals.law !== 'gamma'
      ? { kind: t.arrivals?.law ?? 'poisson' }
      : { kind: 'gamma', cv: t.arrivals.cv };
  return {
    seed,
    inProcess,
    servers: expand(
      entry,
      file,
      (i) => fractions[i - 1] as number,
      (i) => (fractions[i - 1] as number) * ratePerS,
    ),
    traffic: {
      source: 'generated',
      ratePerS,
      way,
      popularity: t.popularity === undefined ? null : { law: 'zipf', s: t.popularity.s },
      arrivals,
      // serve's defaults: --input-tokens 128, --output-tokens 64.
      inputTokens: length(t.input_tokens, 128),
      outputTokens: length(t.output_tokens, 64),
    },
  };
}
