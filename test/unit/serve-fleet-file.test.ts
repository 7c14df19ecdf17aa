/**
 * The fleet file (#49 Build 1): a good file expands to its concrete servers (count, labels, shares,
 * rates, ports); every bad file is refused in one line naming the key path and how to fix it, as a
 * UserError (exit 2, no stack trace).
 */
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { UserError } from '../../harness/core/errors.js';
import { parseFleet, SHARE_SUM_TOLERANCE } from '../../harness/serve/fleet/fleet-file.js';
import { fleetSchedule, loadFleet } from '../../harness/serve/fleet/fleet-load.js';
import { MPS_CLIENT_LIMIT } from '../../harness/system/mps/client-limit.js';
import { ROOT } from '../helpers.js';

const SIM = 'node simulator/openai-server.cjs --port {port}';
const FILE = '/fleets/f.yaml';

/** A valid fleet as YAML, with `servers` and `traffic` replaceable. */
function fleetYaml(servers: string, traffic = 'traffic:\n  rate_per_s: 10\n  popularity: {law: zipf, s: 1}\n'): string {
  return `seed: 7\n${traffic}servers:\n${servers}`;
}
const server = (extra = '', model = 'm') =>
  `  - {model: ${model}, command: '${SIM}', mem_fraction: 0.1${extra === '' ? '' : `, ${extra}`}}\n`;

/** The refusal of `text`: a UserError of exactly one line, exit 2. */
function refusal(text: string): string {
  try {
    parseFleet(text, FILE);
  } catch (error) {
    expect(error).toBeInstanceOf(UserError);
    const message = (error as UserError).message;
    expect((error as UserError).exitCode).toBe(2);
    expect(message.split('\n')).toHaveLength(1);
    expect(message.startsWith(FILE)).toBe(true);
    return message;
  }
  throw new Error('the file was accepted');
}

describe('parseFleet: expansion', () => {
  it('count: 10 gives ten servers with their own labels and indices, in file order', () => {
    const fleet = parseFleet(
      fleetYaml(
        `${server('count: 3, name: small, thread_pct: 20')}${server('port: 9000, count: 2', 'big')}${server('', 'one')}`,
      ),
      FILE,
    );
    expect(fleet.servers.map((s) => [s.index, s.label, s.kind, s.port, s.threadPct])).toEqual([
      [1, 'small-1', 'small', null, 20],
      [2, 'small-2', 'small', null, 20],
      [3, 'small-3', 'small', null, 20],
      [4, 'big-1', 'big', 9000, null],
      [5, 'big-2', 'big', 9001, null],
      [6, 'one', 'one', null, null],
    ]);
    expect(fleet.servers.every((s) => s.command === SIM && s.memFraction === 0.1)).toBe(true);
    expect(fleet.seed).toBe(7);
  });

  it('popularity: Zipf shares over the expanded servers, rates = share × the total', () => {
    const fleet = parseFleet(fleetYaml(server('count: 4')), FILE);
    const h = 1 + 1 / 2 + 1 / 3 + 1 / 4;
    fleet.servers.forEach((s, i) => {
      expect(s.share).toBeCloseTo(1 / (i + 1) / h, 12);
      expect(s.ratePerS).toBeCloseTo((10 / (i + 1) / h) as number, 12);
    });
    expect(fleet.traffic).toMatchObject({
      source: 'generated',
      ratePerS: 10,
      popularity: { law: 'zipf', s: 1 },
      arrivals: { kind: 'poisson' },
      inputTokens: { kind: 'fixed', tokens: 128 },
      outputTokens: { kind: 'fixed', tokens: 64 },
    });
  });

  it('per-server rates: the total is their sum, each share its part', () => {
    const fleet = parseFleet(
      fleetYaml(`${server('rate_per_s: 3, count: 2', 'a')}${server('rate_per_s: 4', 'b')}`, ''),
      FILE,
    );
    expect(fleet.servers.map((s) => s.ratePerS)).toEqual([3, 3, 4]);
    expect(fleet.servers.map((s) => s.share)).toEqual([0.3, 0.3, 0.4]);
    expect(fleet.traffic).toMatchObject({ source: 'generated', ratePerS: 10 });
  });

  it('shares within the tolerance are accepted and normalized to sum to 1', () => {
    const fleet = parseFleet(
      fleetYaml(
        `${server('share: 0.3335, count: 2', 'a')}${server('share: 0.3335', 'b')}`,
        'traffic: {rate_per_s: 6}\n',
      ),
      FILE,
    );
    expect(fleet.servers.reduce((s, x) => s + x.share, 0)).toBeCloseTo(1, 12);
    expect(fleet.servers.map((s) => s.ratePerS)).toEqual([2, 2, 2]);
  });

  it('gamma arrivals and named length laws are carried; JSON is read as well as YAML', () => {
    const json = JSON.stringify({
      servers: [{ model: 'm', command: SIM, mem_fraction: 0.5, rate_per_s: 2 }],
      traffic: {
        arrivals: { law: 'gamma', cv: 3 },
        input_tokens: { law: 'lognormal', median: 200, sigma: 0.5, max: 2000 },
        output_tokens: { law: 'uniform', min: 8, max: 64 },
      },
    });
    expect(parseFleet(json, FILE).traffic).toMatchObject({
      arrivals: { kind: 'gamma', cv: 3 },
      inputTokens: { kind: 'lognormal', median: 200, sigma: 0.5, max: 2000 },
      outputTokens: { kind: 'uniform', min: 8, max: 64 },
    });
  });

  it('exactly the MPS client limit is accepted', () => {
    expect(MPS_CLIENT_LIMIT).toBe(48);
    const fleet = parseFleet(
      fleetYaml(`  - {model: m, command: '${SIM}', mem_fraction: 0.02, count: ${MPS_CLIENT_LIMIT}}\n`),
      FILE,
    );
    expect(fleet.servers).toHaveLength(48);
  });

  it('the example committed under examples/fleet/ loads, and its schedule is the same twice', async () => {
    const fleet = await loadFleet(`${ROOT}/examples/fleet/three-sizes.yaml`);
    expect(fleet.servers.length).toBeGreaterThanOrEqual(16);
    expect(new Set(fleet.servers.map((s) => s.model)).size).toBeGreaterThanOrEqual(3);
    expect(fleetSchedule(fleet, 5000)).toEqual(fleetSchedule(fleet, 5000));
  });

  it('every example under examples/fleet/ loads: 16 or more servers of 3 sizes, a trace replayed as recorded', async () => {
    const files = readdirSync(`${ROOT}/examples/fleet`).filter((f) => f.endsWith('.yaml'));
    expect(files).toContain('reference-16-replay.yaml');
    for (const file of files) {
      const fleet = await loadFleet(`${ROOT}/examples/fleet/${file}`);
      expect(fleet.servers.length, file).toBeGreaterThanOrEqual(16);
      expect(new Set(fleet.servers.map((s) => s.kind)).size, file).toBe(3);
    }
    // The replay's trace: run …-de7677's 773 requests over 5 s, each server's share from its counts.
    const replay = await loadFleet(`${ROOT}/examples/fleet/reference-16-replay.yaml`);
    expect(fleetSchedule(replay, 5000)).toHaveLength(773);
    expect(replay.servers[0]?.share).toBeCloseTo(227 / 773, 10);
  });
});

describe('parseFleet: every bad file is one line naming the key', () => {
  const cases: Array<[string, string, RegExp]> = [
    [
      'an unknown top-level key',
      `sed: 1\n${fleetYaml(server())}`,
      /\(top level\): unknown key "sed": remove it or use one of seed, traffic, servers, in_process/,
    ],
    [
      'an unknown key of a server',
      fleetYaml(`${server()}${server('memory: 2', 'n')}`),
      /servers\[1\]: unknown key "memory": .*mem_fraction/,
    ],
    [
      'an unknown key of traffic',
      fleetYaml(server(), 'traffic: {rate_per_s: 1, popularty: 1}\n'),
      /traffic: unknown key "popularty"/,
    ],
    [
      'an unknown key of a length law',
      fleetYaml(
        server(),
        'traffic: {rate_per_s: 1, popularity: {law: zipf, s: 1}, input_tokens: {law: fixed, token: 3}}\n',
      ),
      /traffic\.input_tokens: unknown key "token": remove it or use one of law, tokens/,
    ],
    [
      'an unknown law',
      fleetYaml(server(), 'traffic: {rate_per_s: 1, popularity: {law: zipf, s: 1}, arrivals: {law: bursty}}\n'),
      /traffic\.arrivals\.law is "bursty": give law: one of poisson, gamma, constant/,
    ],
    [
      'a count < 1',
      fleetYaml(server('count: 0')),
      /servers\[0\]\.count is 0: give how many servers of this kind, a whole number ≥ 1/,
    ],
    ['a count not whole', fleetYaml(server('count: 2.5')), /servers\[0\]\.count is 2.5: give how many/],
    [
      'a missing command',
      fleetYaml('  - {model: m, mem_fraction: 0.1}\n'),
      /servers\[0\]\.command is missing: give the server's command line/,
    ],
    [
      'a command without {port}',
      fleetYaml('  - {model: m, command: serve, mem_fraction: 0.1}\n'),
      /servers\[0\]\.command: put \{port\} where/,
    ],
    [
      'a memory share over 1 on one server',
      fleetYaml(server().replace('0.1', '1.5')),
      /servers\[0\]\.mem_fraction is 1.5: give .* \(0, 1\]/,
    ],
    [
      'memory shares over 1 in all',
      fleetYaml(`${server('count: 6')}${server('count: 5', 'n')}`),
      /servers\[\]\.mem_fraction: the memory shares add up to 1.100 .* over 1/,
    ],
    [
      'more servers than MPS clients',
      fleetYaml(
        `  - {model: m, command: '${SIM}', mem_fraction: 0.02, count: 40}\n  - {model: n, command: '${SIM}', mem_fraction: 0.001, count: 9}\n`,
      ),
      /servers\[\]\.count: 49 servers in all \(40 \+ 9\), over the 48 clients/,
    ],
    [
      'two kinds of one name',
      fleetYaml(`${server()}${server()}`),
      /servers\[1\]\.name: "m" is servers\[0\]'s name too/,
    ],
    [
      'a label made twice',
      fleetYaml(`${server('count: 2', 'a')}${server('', 'a-2')}`),
      /servers\[1\]\.name: its server's label "a-2" is also one of servers\[0\]'s: rename one/,
    ],
    [
      'overlapping ports',
      fleetYaml(`${server('port: 8000, count: 3')}${server('port: 8002', 'n')}`),
      /servers\[1\]\.port: port 8002 is also one of servers\[0\]'s/,
    ],
    [
      'the same port twice',
      fleetYaml(`${server('port: 8000')}${server('port: 8000', 'n')}`),
      /servers\[1\]\.port: port 8000/,
    ],
    [
      'shares that add up to less than 1',
      fleetYaml(`${server('share: 0.5')}${server('share: 0.498', 'n')}`, 'traffic: {rate_per_s: 1}\n'),
      /servers\[\]\.share: the shares add up to 0\.9980 .*not 1 \(±0\.001\)/,
    ],
    [
      'shares that add up to more than 1',
      fleetYaml(`${server('share: 0.5, count: 2')}${server('share: 0.01', 'n')}`, 'traffic: {rate_per_s: 1}\n'),
      /the shares add up to 1\.0100/,
    ],
    [
      'shares without a total rate',
      fleetYaml(`${server('share: 0.5')}${server('share: 0.5', 'n')}`, ''),
      /traffic\.rate_per_s: give the fleet's total rate/,
    ],
    [
      'rates and a total',
      fleetYaml(server('rate_per_s: 2'), 'traffic: {rate_per_s: 1}\n'),
      /traffic\.rate_per_s: the servers give their own rate_per_s/,
    ],
    [
      'shares on some servers only',
      fleetYaml(`${server('share: 1')}${server('', 'n')}`, 'traffic: {rate_per_s: 1}\n'),
      /servers\[1\]: give every server a share, as servers\[0\]/,
    ],
    [
      'a share and a rate on one server',
      fleetYaml(server('share: 1, rate_per_s: 1'), 'traffic: {rate_per_s: 1}\n'),
      /servers\[0\]: give share or rate_per_s, not both/,
    ],
    ['popularity and shares', fleetYaml(server('share: 1')), /servers\[0\]: traffic.popularity sets every share/],
    ['no way to divide traffic', fleetYaml(server(), ''), /traffic\.popularity: give traffic\.popularity/],
    [
      'a trace with arrivals',
      fleetYaml(server(), 'traffic: {trace: t.jsonl, arrivals: {law: poisson}}\n'),
      /traffic\.arrivals: traffic\.trace replays/,
    ],
    [
      'uniform min over max',
      fleetYaml(
        server(),
        'traffic: {rate_per_s: 1, popularity: {law: zipf, s: 1}, output_tokens: {law: uniform, min: 9, max: 3}}\n',
      ),
      /traffic\.output_tokens: min 9 is over max 3/,
    ],
    [
      'a gamma cv of 0',
      fleetYaml(server(), 'traffic: {rate_per_s: 1, popularity: {law: zipf, s: 1}, arrivals: {law: gamma, cv: 0}}\n'),
      /traffic\.arrivals\.cv is 0: give the coefficient of variation/,
    ],
    [
      'a negative Zipf exponent',
      fleetYaml(server(), 'traffic: {rate_per_s: 1, popularity: {law: zipf, s: -1}}\n'),
      /traffic\.popularity\.s is -1: give the Zipf exponent/,
    ],
    [
      'an unknown key of in_process',
      `${fleetYaml(server())}in_process: {cmd: x}\n`,
      /in_process: unknown key "cmd": remove it or use one of command/,
    ],
    [
      'an in_process command without {port}',
      `${fleetYaml(server())}in_process: {command: 'srv --models {models}'}\n`,
      /in_process\.command: put \{port\} where the server takes its port/,
    ],
    [
      'an in_process command without {models}',
      `${fleetYaml(server())}in_process: {command: 'srv --port {port}'}\n`,
      /in_process\.command: put \{models\} where it takes the models it serves/,
    ],
    ['no servers', 'servers: []\n', /servers is \[\]: give at least one server/],
    ['not YAML', 'servers: [\n', /is not valid YAML or JSON/],
  ];
  it.each(cases)('%s', (_name, text, expected) => {
    expect(refusal(text)).toMatch(expected);
  });

  it('the share tolerance is ±0.001: 1.001 passes, 1.0011 does not', () => {
    expect(SHARE_SUM_TOLERANCE).toBe(0.001);
    const shares = (b: number) =>
      fleetYaml(`${server('share: 0.5')}${server(`share: ${b}`, 'n')}`, 'traffic: {rate_per_s: 1}\n');
    expect(parseFleet(shares(0.501), FILE).servers).toHaveLength(2);
    expect(refusal(shares(0.5011))).toMatch(/add up to 1\.0011/);
  });

  it('in_process: its command is kept as written, placeholders unfilled; without it, null', () => {
    const text = `${fleetYaml(server())}in_process: {command: 'srv --port {port} --models {models}'}\n`;
    expect(parseFleet(text, FILE).inProcess).toEqual({ command: 'srv --port {port} --models {models}' });
    expect(parseFleet(fleetYaml(server()), FILE).inProcess).toBeNull();
  });

  it('memory: exactly 1 in all passes', () => {
    expect(parseFleet(fleetYaml(server('count: 10')), FILE).servers).toHaveLength(10);
  });
});

describe('loadFleet: the files a fleet names', () => {
  const files = (entries: Record<string, string>) => async (file: string) => {
    const text = entries[file];
    if (text === undefined) throw Object.assign(new Error('no such file'), { code: 'ENOENT' });
    return text;
  };

  it('a lengths file becomes an empirical law; a bad line is named', async () => {
    const yaml = fleetYaml(
      server(),
      'traffic: {rate_per_s: 1, popularity: {law: zipf, s: 0}, input_tokens: {law: file, path: in.txt}}\n',
    );
    const fleet = await loadFleet(FILE, files({ [FILE]: yaml, '/fleets/in.txt': '# prompts\n10\n\n20\n' }));
    expect(fleet.traffic).toMatchObject({ inputTokens: { kind: 'empirical', values: [10, 20] } });
    await expect(loadFleet(FILE, files({ [FILE]: yaml, '/fleets/in.txt': '10\nten\n' }))).rejects.toThrow(
      '/fleets/in.txt line 2: "ten" is not a whole number of tokens ≥ 1',
    );
    await expect(loadFleet(FILE, files({ [FILE]: yaml }))).rejects.toThrow(
      'cannot read the input lengths file /fleets/in.txt (ENOENT)',
    );
  });

  it('a trace sets the shares from its counts and is replayed as written', async () => {
    const yaml = fleetYaml(`${server('count: 2')}`, 'traffic: {trace: t.jsonl}\n');
    const trace = [
      '{"offset_ms": 5, "server": "m-2", "input_tokens": 3, "output_tokens": 4}',
      '{"offset_ms": 1, "server": 1, "input_tokens": 1, "output_tokens": 2}',
      '{"offset_ms": 9, "server": 2, "input_tokens": 5, "output_tokens": 6}',
    ].join('\n');
    const fleet = await loadFleet(FILE, files({ [FILE]: yaml, '/fleets/t.jsonl': trace }));
    expect(fleet.servers.map((s) => [s.share, s.ratePerS])).toEqual([
      [1 / 3, null],
      [2 / 3, null],
    ]);
    expect(fleetSchedule(fleet, 6).map((a) => [a.offsetMs, a.server])).toEqual([
      [1, 1],
      [5, 2],
    ]);
  });
});
