/**
 * `gpushare fleet report`, in process, over copies of committed runs laid out as a fleet, one made different, over
 * results/ itself, over runs whose text is hostile, and over trees with links and what cannot be read (a FIFO
 * run.json, which must not block, is read by the built CLI in test/e2e/fleet-report.test.ts).
 */
import { chmodSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Resvg } from '@resvg/resvg-js';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../harness/bench/record/schema.js';
import type { FleetAnalysis } from '../../harness/fleet/report/analyze.js';
import {
  degrade,
  expectOneLineError,
  H100_RUN as H100,
  H100_REPEAT_RUN as H100_REPEAT,
  H200_RUN as H200,
  placeRun,
  ROOT,
  runCli,
  tempDir,
  unfolded,
} from '../helpers.js';
import { markdown, NOT_XML_CHAR, TERMINAL_CONTROL } from '../output-checks.js';

const cli = (args: string[]) => runCli(args);

/** The headline ratios of the default suite, as the committed H100 runs have them. */
const HEADLINE = [
  'streams/spin/speedup-k2',
  'streams/pipeline/pinned-speedup-k2',
  'timeslice/spin/slowdown',
  'timeslice/gemm/slowdown',
  'timeslice/infer/slowdown',
  'mps/spin/slowdown',
  'mps/gemm/slowdown',
  'mps/infer/slowdown',
];

type FleetJson = FleetAnalysis & { exitCode: number };

describe('gpushare fleet report over a fleet with one slow node and one on another driver', () => {
  const fleet = tempDir('gpushare-fleet-');
  const out = tempDir('gpushare-fleet-out-');
  const junit = path.join(out, 'fleet.xml');
  let json: FleetJson;
  let exitCode: number | undefined;
  let stdout = '';

  beforeAll(async () => {
    // A two-GPU host (gpu0/ and gpu1/, each run naming its host), three single-GPU hosts, an H200, and a probe record.
    const onHostA = (run: Run) => void (run.fingerprint.host.hostname = 'host-a');
    placeRun(fleet, H100, 'host-a/gpu0', 'GPU-a0', 0, onHostA);
    placeRun(fleet, H100_REPEAT, 'host-a/gpu1', 'GPU-a1', 1, onHostA);
    placeRun(fleet, H100, 'host-b', 'GPU-b0');
    placeRun(fleet, H100_REPEAT, 'host-c', 'GPU-c0', 0, (run) => degrade(run, 1.3));
    placeRun(fleet, H100, 'host-d', 'GPU-d0', 0, (run) => void (run.fingerprint.driverVersion = '570.86.15'));
    placeRun(fleet, H200, 'h200/host-e', 'GPU-e0');
    mkdirSync(path.join(fleet, 'probes', 'p1'), { recursive: true });
    writeFileSync(path.join(fleet, 'probes', 'p1', 'probe.json'), '{}');
    const report = await cli(['fleet', 'report', fleet, '--out', out, '--junit', junit, '--name', 'test']);
    ({ exitCode, stdout } = report);
    json = JSON.parse((await cli(['fleet', 'report', fleet, '--json'])).stdout) as FleetJson;
  });

  it('exits 1, naming the slow node as the one outlier, worse on every headline ratio', () => {
    expect(exitCode).toBe(1);
    expect(json.exitCode).toBe(1);
    expect(json.outlierNodes).toEqual(['host-c']);
    const slow = json.nodes.find((n) => n.name === 'host-c');
    expect(slow?.outliers.sort()).toEqual([...HEADLINE].sort());
    expect(slow?.ratios.map((r) => r.direction)).toEqual(HEADLINE.map(() => 'worse'));
    expect(unfolded(stdout)).toMatch(
      /^outlier: host-c: timeslice\/infer\/slowdown = 3\.\d{3} CI \[3\.\d{3}, 3\.\d{3}\] lies wholly above the group's band \[2\.\d{3}, 2\.\d{3}\] \(worse\)$/m,
    );
    expect(stdout).toMatch(/^exit 1: 1 outlier node\(s\), 2 failing node\(s\)$/m);
  });

  it('flags the node on another driver, and no other node', () => {
    expect(json.failingNodes.sort()).toEqual(['host-c', 'host-d']);
    const flags = Object.fromEntries(json.nodes.map((n) => [n.name, n.flags.map((f) => f.kind)]));
    expect(flags).toEqual({
      'host-a/gpu0': [],
      'host-a/gpu1': [],
      'host-b': [],
      'host-c': [],
      'host-d': ['fingerprint'],
      'h200/host-e': [],
    });
    expect(json.nodes.find((n) => n.name === 'host-d')?.flags[0]?.text).toContain(
      'driver: 570.86.15 here, 580.159.04 in',
    );
  });

  it('names nodes by their paths with the host their runs recorded, groups by GPU model, and sets the lone H200 aside', () => {
    expect(json.nodes.filter((n) => n.host === 'host-a').map((n) => [n.name, n.gpuIndex])).toEqual([
      ['host-a/gpu0', 0],
      ['host-a/gpu1', 1],
    ]);
    expect(json.gpuModels.sort()).toEqual(['NVIDIA H100 80GB HBM3', 'NVIDIA H200']);
    const h100 = json.groups.find((g) => g.gpuModel === 'NVIDIA H100 80GB HBM3');
    expect(h100?.nodes.sort()).toEqual(['host-a/gpu0', 'host-a/gpu1', 'host-b', 'host-c', 'host-d']);
    expect(h100?.ratios.map((r) => [r.metricId, r.n])).toEqual(HEADLINE.map((id) => [id, 5]));
    const h200 = json.groups.find((g) => g.gpuModel === 'NVIDIA H200');
    expect(h200?.setAside).toBe('the only run on NVIDIA H200');
    expect(h200?.untested).toMatch(/a group of 1 run cannot have outliers/);
    expect(json.notCompared).toEqual([
      { path: 'probes/p1', reason: expect.stringMatching(/^a probe record/), fails: false },
    ]);
  });

  it("writes JUnit with a testcase per node and ratio and per node's checks; failures are the outlier ratios and the flagged node", () => {
    const xml = readFileSync(junit, 'utf8');
    expect(XMLValidator.validate(xml)).toBe(true);
    const suite = new XMLParser({ ignoreAttributes: false }).parse(xml).testsuites.testsuite as {
      '@_failures': string;
      testcase: Array<Record<string, unknown>>;
    };
    const cases = suite.testcase.map((c) => ({
      node: String(c['@_classname']).replace('gpushare.fleet.', ''),
      name: String(c['@_name']),
      failure: c.failure as Record<string, string> | undefined,
    }));
    const ratios = json.nodes.reduce((sum, n) => sum + n.ratios.length, 0);
    expect(cases).toHaveLength(ratios + json.nodes.length);
    expect(
      cases
        .filter((c) => c.name === 'node checks')
        .map((c) => c.node)
        .sort(),
    ).toEqual(json.nodes.map((n) => n.name).sort());
    const failed = cases.filter((c) => c.failure).map((c) => `${c.node} ${c.name} ${c.failure?.['@_type']}`);
    expect(failed.sort()).toEqual(
      [...HEADLINE.map((id) => `host-c ${id} outlier`), 'host-d node checks fingerprint'].sort(),
    );
    expect(suite['@_failures']).toBe(String(HEADLINE.length + 1));
  });

  it('writes the markdown with the outlier named and its chart beside it, a valid SVG', () => {
    const md = readFileSync(path.join(out, 'fleet-test.md'), 'utf8');
    expect(md).toMatch(/^\*\*Exit 1: 1 outlier node \(host-c\), 2 failing nodes in all\.\*\*$/m);
    expect(md).toMatch(
      /^\| host-c \| g\d+ \| outlier: streams\/spin\/speedup-k2 = 1\.5\d{2} CI \[[\d., ]+\] lies wholly below the group's band \[[\d., ]+\] \(worse\);/m,
    );
    expect(md).toContain('| h200/host-e | NVIDIA H200 |');
    const link = /!\[[^\]]*\]\(([^)]+)\)/.exec(md)?.[1];
    expect(link).toBe('fleet-test/ratios.svg');
    const svg = readFileSync(path.join(out, link as string), 'utf8');
    expect(XMLValidator.validate(svg)).toBe(true);
    expect(svg).not.toMatch(/<script|javascript:/i);
    expect(new Resvg(svg).render().width).toBeGreaterThan(300);
    expect(svg).toContain('#e45756'); // the outlier's colour
  });
});

describe('gpushare fleet report, other fleets', () => {
  it('identical nodes: exit 0, every ratio tested and none flagged (the floor holds when MAD is 0)', async () => {
    const fleet = tempDir('gpushare-fleet-');
    for (const name of ['n1', 'n2', 'n3']) placeRun(fleet, H100, name, `GPU-${name}`);
    const result = await cli(['fleet', 'report', fleet, '--json']);
    expect(result.exitCode).toBe(0);
    const json = JSON.parse(result.stdout) as FleetJson;
    expect(json.groups).toHaveLength(1);
    expect(json.groups[0]?.ratios.every((r) => r.band?.floored && r.points.every((p) => p.outlier === null))).toBe(
      true,
    );
    expect(json.failingNodes).toEqual([]);
  });

  it('a contaminated node fails its checks and its ratios are errors in the JUnit', async () => {
    const fleet = tempDir('gpushare-fleet-');
    for (const name of ['n1', 'n2']) placeRun(fleet, H100, name, `GPU-${name}`);
    placeRun(
      fleet,
      H100,
      'busy',
      'GPU-busy',
      0,
      (run) => void (run.contamination = ['pid 4242 python3 held 1024 MiB']),
    );
    const junit = path.join(tempDir(), 'fleet.xml');
    const result = await cli(['fleet', 'report', fleet, '--out', tempDir(), '--junit', junit]);
    expect(result.exitCode).toBe(1);
    expect(unfolded(result.stdout)).toMatch(
      /^contaminated: busy: the GPU was busy when the run started: pid 4242 python3 held 1024 MiB$/m,
    );
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toMatch(
      /<testcase classname="gpushare\.fleet\.busy" name="node checks" time="0"><failure type="contaminated,invalid"/,
    );
    expect([
      ...xml.matchAll(/classname="gpushare\.fleet\.busy" name="[^"]+" time="0"><error type="invalid"/g),
    ]).toHaveLength(HEADLINE.length);
  });

  it('exits 2 with one line naming the directory when it holds no bench run', async () => {
    const empty = tempDir('gpushare-fleet-empty-');
    mkdirSync(path.join(empty, 'cap'));
    writeFileSync(path.join(empty, 'cap', 'capacity.json'), '{}');
    const result = await cli(['fleet', 'report', empty]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(
      result.stderr,
      `no bench runs under ${empty} (it holds cap, which are not bench runs): fleet report expects run directories made by gpushare bench, each with a run.json, at any depth`,
    );
    const missing = await cli(['fleet', 'report', path.join(empty, 'nothing-here')]);
    expect(missing.exitCode).toBe(2);
    expectOneLineError(missing.stderr, 'is not a directory');
  });

  it('over the committed results/: like compared with like, special-purpose runs set aside with why, the run made different on purpose an outlier', async () => {
    const out = tempDir();
    const result = await cli(['fleet', 'report', path.join(ROOT, 'results'), '--json', '--out', out]);
    expect(result.exitCode).toBe(1);
    const json = JSON.parse(result.stdout) as FleetJson;
    // GPU 1 of a 2-GPU H200 host benched again while another process ran GEMMs on it (results/…-a0e80a/made-different.txt),
    // and the two GPUs of one 2-GPU machine whose pipeline speedup was 8% below the other machines'.
    const made = '2026-11-23-h200-a0e80a';
    const slowCopies = ['2026-11-23-h200-x2-c4f095/gpu0', '2026-11-23-h200-x2-c4f095/gpu1'];
    // And the resnet18 run c0731d: its mps/custom@4 slowdown (2.79×, 6 rounds) lies above the group's band
    // (2.41-2.66×).
    const resnetMps4 = '2026-11-24-h100-80gb-hbm3-c0731d';
    // And 32295a: its mps/custom@2 slowdown (1.56×) lies above the others' 1.42-1.48×; its MPS solo arms ran
    // ~8% faster than in the other runs (1404-1426 against 1264-1306 requests/s), its contended arm as usual.
    const resnetMps2 = '2026-11-24-h100-80gb-hbm3-32295a';
    expect(json.outlierNodes).toEqual([made, ...slowCopies, resnetMps2, resnetMps4]);
    // The default run 2c8cff measured through protocol loop 2 (2026-11-27: the stream entered once per window),
    // where a client alone runs several per cent faster than through loop 1: not compared with the runs before
    // it, but set aside for that setting (its timeslice/infer slowdown, 2.895×, lay above their band).
    // The same for the other default runs of 2026-11-27 (222196, bcd01f, bffc12): the four are compared with
    // each other, and the three infer sweeps of that day (01535a, 726165, f425b1) with each other.
    const day27 = (ids: string) => ids.split(' ').map((id) => `2026-11-27-h100-80gb-hbm3-${id}`);
    const loop2 = day27('222196 2c8cff bcd01f bffc12');
    const loop2Sweeps = day27('01535a 726165 f425b1');
    for (const name of loop2)
      expect(json.nodes.find((n) => n.name === name)?.flags.map((f) => f.text)).toEqual([
        expect.stringContaining('protocol loop: 2 here, 1 in it'),
      ]);
    expect(json.nodes.find((n) => n.name === resnetMps4)?.outliers).toEqual(['mps/custom@4/slowdown']);
    expect(json.nodes.find((n) => n.name === resnetMps2)?.outliers).toEqual(['mps/custom@2/slowdown']);
    expect(json.nodes.find((n) => n.name === made)?.flags.map((f) => f.kind)).toContain('contaminated');
    for (const name of slowCopies)
      expect(json.nodes.find((n) => n.name === name)?.outliers).toEqual(['streams/pipeline/pinned-speedup-k2']);
    // The H200 runs of 2026-11-21 ran the suite's older settings, unlike most H200 GPUs here.
    const older = ['2026-11-21-h200-a6c68a', '2026-11-21-h200-d7edc0', '2026-11-21-h200-e7a8f2'];
    // The tenancy sweep 3485bb and the default run ab89b3 saw sw_power_cap in one arm of some ratios, but at
    // 1965 MHz (one 15 MHz clock step) against 1980: a warning, no failing node.
    const sweep3485 = '2026-11-24-h100-80gb-hbm3-3485bb';
    const ab89b3 = '2026-11-24-h100-80gb-hbm3-ab89b3';
    // Most H100 GPUs here ran the default suite (250 ms windows): since the pair 034eeb and eb00d1 more than half
    // of them, so every H100 run of other settings (sweeps, the resnet18 example, 500 ms windows, probe-era runs)
    // fails for its settings, as the H200 runs of 2026-11-21 do.
    const h100 = (ids: string) => ids.split(' ').map((id) => `2026-11-${id}`);
    const otherH100 = [
      ...h100('22-h100-80gb-hbm3-227d9f 22-h100-80gb-hbm3-37bd94 22-h100-80gb-hbm3-6d6a11 22-h100-80gb-hbm3-c67faf'),
      ...h100('22-h100-80gb-hbm3-cce2fd 22-h100-80gb-hbm3-d4099d 22-h100-80gb-hbm3-f89eae 23-h100-80gb-hbm3-6b0c38'),
    ];
    const otherH100Today = h100(
      '24-h100-80gb-hbm3-00e26b 24-h100-80gb-hbm3-01f71c 24-h100-80gb-hbm3-059f38 24-h100-80gb-hbm3-06b5fd 24-h100-80gb-hbm3-08ab8c 24-h100-80gb-hbm3-119a78 24-h100-80gb-hbm3-193611 24-h100-80gb-hbm3-254b44 24-h100-80gb-hbm3-2bd117 24-h100-80gb-hbm3-32295a 24-h100-80gb-hbm3-3485bb 24-h100-80gb-hbm3-5634df 24-h100-80gb-hbm3-63f685 24-h100-80gb-hbm3-645db2 24-h100-80gb-hbm3-6fa4f9 24-h100-80gb-hbm3-70498f 24-h100-80gb-hbm3-718113 24-h100-80gb-hbm3-7c52ef 24-h100-80gb-hbm3-93b943 24-h100-80gb-hbm3-ae9f51 24-h100-80gb-hbm3-b34a9c 24-h100-80gb-hbm3-b8f955 24-h100-80gb-hbm3-b93542 24-h100-80gb-hbm3-c0731d 24-h100-80gb-hbm3-f9deae 24-h100-80gb-hbm3-fa60d5 24-h100-80gb-hbm3-fd4af8',
    );
    // The old way's runs of this stop (8def0b, 6d6b2b, 7696d8, aaa98d, 34989d, 9d1901, 1bcad3) were made by
    // 76c1980's harness bundled without its package.json, so they call themselves gpushare 0.0.0: a tool
    // version unlike the group's.
    const oldBundle = h100(
      '24-h100-80gb-hbm3-1bcad3 24-h100-80gb-hbm3-34989d 24-h100-80gb-hbm3-6d6b2b 24-h100-80gb-hbm3-7696d8 24-h100-80gb-hbm3-8def0b 24-h100-80gb-hbm3-9d1901 24-h100-80gb-hbm3-aaa98d',
    );
    expect(json.failingNodes).toEqual(
      [...older, ...otherH100, made, ...slowCopies, ...otherH100Today, ...oldBundle, ...loop2, ...loop2Sweeps].sort(),
    );
    for (const name of oldBundle)
      expect(json.nodes.find((n) => n.name === name)?.flags.map((f) => f.kind)).toEqual(['fingerprint']);
    expect(json.nodes.find((n) => n.name === ab89b3)?.flags.map((f) => f.kind)).toEqual([]);
    expect(json.nodes.find((n) => n.name === sweep3485)?.flags.map((f) => f.kind)).toEqual(['settings']);
    for (const name of [...older, ...otherH100, ...otherH100Today])
      expect(json.nodes.find((n) => n.name === name)?.flags.map((f) => f.kind)).toEqual(['settings']);
    const h200 = json.groups.find((g) => g.nodes.includes(made));
    expect(h200?.nodes).toHaveLength(7);
    expect(h200?.untested).toBeNull();
    expect(json.notCompared.map((x) => x.path)).toContain(path.join('2026-11-23-h200-x2-a4253d', 'cross'));
    expect(json.gpuModels.sort()).toEqual(['NVIDIA H100 80GB HBM3', 'NVIDIA H200']);
    // The default suites: 250 ms (e4176e, c263f1; cc7fa9, d9dc25, f90cc9 and ab89b3, the old-way and prestarted
    // runs of 2026-11-24; e34b0e, 6fbe14 and ed51c9, the old way, --fresh-clients and switched, and the pair 034eeb
    // and eb00d1, the old way and switched; the A/A runs 5c93e0 and 348b58, the pair 4c07c5 and 9f9de4, and
    // the A/A runs bf4273 and 6277d7 with the old way's ed828a and 859719, and c7329b and c9a2f1 with b81d07; the
    // pairs bc283a and d64801, prestarted ahead, with the old way's 85e291 and 9c6e13, and 74d5cd, 14d0f1, 6d2c2d,
    // 9b0150, a00e36 and 7b8e38 with aaccd5, e55c76, bf11d6 and 67805a, and 7d4aa9 and 653dbd with 8def0b, and 3245f0 and bda126 with 6d6b2b, and 3d5d26 and 13ceb9 with 7696d8, and 924ef0 and 5c5577 with aaa98d, and 263513, 2fa6a0 and 7d5d1d with 34989d, and 6ceef7, 01c1fc and 3acf33 with 9d1901, and 651a08, a2cb2b and e6a982 with 1bcad3) and 500 ms (d4099d, f89eae) on the H100,
    // and the H200's two; the infer sweeps, the old way (6b0c38), prestarted (059f38), 718113, grown (645db2) and
    // prestarted ahead (6fa4f9, 5634df, 2bd117, 93b943, 70498f, f9deae, 00e26b, 08ab8c, b8f955); the resnet18 example, the old way (b34a9c),
    // prestarted (fd4af8, 01f71c, 63f685, 254b44) and checked on its first client (193611, 7c52ef, b93542, 119a78,
    // 06b5fd, c0731d, ae9f51, fa60d5, 32295a).
    const compared = json.groups.filter((g) => g.setAside === null).map((g) => g.nodes.map((n) => n.slice(-6)).sort());
    expect(compared).toEqual(
      expect.arrayContaining([
        [
          '01c1fc',
          '034eeb',
          '13ceb9',
          '14d0f1',
          '1bcad3',
          '263513',
          '2fa6a0',
          '3245f0',
          '348b58',
          '34989d',
          '3acf33',
          '3d5d26',
          '4c07c5',
          '5c5577',
          '5c93e0',
          '6277d7',
          '651a08',
          '653dbd',
          '67805a',
          '6ceef7',
          '6d2c2d',
          '6d6b2b',
          '6fbe14',
          '74d5cd',
          '7696d8',
          '7b8e38',
          '7d4aa9',
          '7d5d1d',
          '859719',
          '85e291',
          '8def0b',
          '924ef0',
          '9b0150',
          '9c6e13',
          '9d1901',
          '9f9de4',
          'a00e36',
          'a2cb2b',
          'aaa98d',
          'aaccd5',
          'ab89b3',
          'b81d07',
          'bc283a',
          'bda126',
          'bf11d6',
          'bf4273',
          'c263f1',
          'c7329b',
          'c9a2f1',
          'cc7fa9',
          'd64801',
          'd9dc25',
          'e34b0e',
          'e4176e',
          'e55c76',
          'e6a982',
          'eb00d1',
          'ed51c9',
          'ed828a',
          'f90cc9',
        ],
        ['d4099d', 'f89eae'],
        [
          '00e26b',
          '059f38',
          '08ab8c',
          '2bd117',
          '5634df',
          '645db2',
          '6b0c38',
          '6fa4f9',
          '70498f',
          '718113',
          '93b943',
          'b8f955',
          'f9deae',
        ],
        [
          '01f71c',
          '06b5fd',
          '119a78',
          '193611',
          '254b44',
          '32295a',
          '63f685',
          '7c52ef',
          'ae9f51',
          'b34a9c',
          'b93542',
          'c0731d',
          'fa60d5',
          'fd4af8',
        ],
        ['a6c68a', 'e7a8f2'],
        ['222196', '2c8cff', 'bcd01f', 'bffc12'],
        ['01535a', '726165', 'f425b1'],
      ]),
    );
    for (const g of json.groups.filter((g) => g.nodes.length < 3)) expect(g.untested).not.toBeNull();
    const tenancy = json.groups.find((g) => g.nodes.some((n) => n.endsWith('3485bb')));
    expect(tenancy?.setAside).toMatch(
      // The nearest is the infer sweep (6b0c38): the same counts, without the streams tenants and green comparisons.
      /^no other NVIDIA H100 80GB HBM3 run has its settings; the nearest, 2026-11-23-h100-80gb-hbm3-6b0c38, differs: comparisons only here: green\/infer@16/,
    );
    expect(json.notCompared.map((x) => x.reason.split(' (')[0])).toEqual(
      expect.arrayContaining(['a capacity record', 'a probe record']),
    );
    expect(readdirSync(out)).toContain('fleet-results.md');
  });
});

/** Sets the name of a run's GPU. */
const gpuNamed = (name: string) => (run: Run) => {
  const gpu = run.fingerprint.gpus.find((g) => g.index === run.config.gpuIndex);
  if (gpu) gpu.name = name;
};

describe('gpushare fleet report over runs whose text is hostile', () => {
  it('a GPU name holding a newline, a bold "Exit 0: no outlier and no failing node." line and an unclosed <!-- neither makes the report say the fleet passed nor hides the failing node', async () => {
    const fleet = tempDir('gpushare-fleet-');
    for (const name of ['n1', 'n2']) placeRun(fleet, H100, name, `GPU-${name}`);
    placeRun(fleet, H100, 'busy', 'GPU-busy', 0, (run) => {
      run.contamination = ['pid 4242 python3 held 1024 MiB'];
      gpuNamed('NVIDIA H100 80GB HBM3\n\n**Exit 0: no outlier and no failing node.**\n\n<!--')(run);
    });
    const out = tempDir();
    const junit = path.join(out, 'fleet.xml');
    const result = await cli(['fleet', 'report', fleet, '--out', out, '--junit', junit, '--name', 'forged']);
    expect(result.exitCode).toBe(1);
    expect(readFileSync(junit, 'utf8')).toMatch(
      /classname="gpushare\.fleet\.busy" name="node checks" time="0"><failure/,
    );
    const md = readFileSync(path.join(out, 'fleet-forged.md'), 'utf8');
    expect(markdown.parse(md, {}).filter((t) => t.type === 'html_block')).toEqual([]);
    const html = markdown.render(md);
    expect(html).not.toContain('<!--');
    expect(html).not.toContain('<strong>Exit 0');
    expect(html).toContain('<p><strong>Exit 1: 0 outlier nodes, 1 failing node in all.</strong></p>');
    // The failing node, with why, in the table of failing nodes; the name as text in the node table.
    expect(html).toMatch(/<tr>\n<td>busy<\/td>\n<td>g\d+<\/td>\n<td>contaminated: /);
    expect(html).toContain('NVIDIA H100 80GB HBM3  **Exit 0: no outlier and no failing node.**  &lt;!--');
  });

  it('control characters in a contamination message, a GPU name and a node directory: JUnit and the chart stay XML, the terminal gets them escaped', async () => {
    const fleet = tempDir('gpushare-fleet-');
    const gpu = 'NVIDIA H100\u0001\u001b[2J\u202e';
    for (const name of ['n1', 'n2']) placeRun(fleet, H100, name, `GPU-${name}`, 0, gpuNamed(gpu));
    placeRun(fleet, H100, 'n3\u001b[31m', 'GPU-n3', 0, (run) => {
      gpuNamed(gpu)(run);
      run.contamination = ['pid 1\u0000\u0007 held \u001b[31m1024 MiB\u009b'];
    });
    const out = tempDir();
    const junit = path.join(out, 'fleet.xml');
    const result = await cli(['fleet', 'report', fleet, '--out', out, '--junit', junit, '--name', 'controls']);
    expect(result.exitCode).toBe(1);
    expect(unfolded(result.stdout)).not.toMatch(TERMINAL_CONTROL);
    expect(unfolded(result.stdout)).toContain(
      'contaminated: n3\\u001b[31m: the GPU was busy when the run started: pid 1\\u0000\\u0007',
    );
    const xml = readFileSync(junit, 'utf8');
    expect(XMLValidator.validate(xml)).toBe(true);
    expect(xml).not.toMatch(NOT_XML_CHAR);
    expect(xml).toContain('held \\u001b[31m1024 MiB\\u009b');
    const svg = readFileSync(path.join(out, 'fleet-controls', 'ratios.svg'), 'utf8');
    expect(svg).not.toMatch(NOT_XML_CHAR);
    expect(new Resvg(svg).render().width).toBeGreaterThan(300);
    const json = await cli(['fleet', 'report', fleet, '--json']);
    expect(json.stdout).not.toMatch(TERMINAL_CONTROL);
    expect((JSON.parse(json.stdout) as FleetJson).gpuModels).toEqual([gpu]);
  });
});

describe('gpushare fleet report reads what it reads honestly', () => {
  it('follows a symbolic link to a node directory, and lists a link back up the tree once instead of walking it', async () => {
    const fleet = tempDir('gpushare-fleet-');
    const elsewhere = tempDir('gpushare-elsewhere-');
    for (const name of ['n1', 'n2']) placeRun(fleet, H100, name, `GPU-${name}`);
    placeRun(elsewhere, H100, 'n3', 'GPU-n3');
    symlinkSync(path.join(elsewhere, 'n3'), path.join(fleet, 'n3'));
    symlinkSync(fleet, path.join(fleet, 'loop'));
    const result = await cli(['fleet', 'report', fleet, '--json']);
    expect(result.exitCode).toBe(0);
    const json = JSON.parse(result.stdout) as FleetJson;
    expect(json.nodes.map((n) => n.name).sort()).toEqual(['n1', 'n2', 'n3']);
    expect(json.notCompared).toEqual([
      {
        path: 'loop',
        reason: `the same directory as ${path.basename(fleet)} (through a symbolic link): its runs are read once, there`,
        fails: false,
      },
    ]);
  });

  // Root reads any directory whatever its mode: there is nothing to test as root.
  it.skipIf(process.getuid?.() === 0)(
    'a directory that cannot be read is listed as unreadable and exits 1',
    async () => {
      const fleet = tempDir('gpushare-fleet-');
      for (const name of ['n1', 'n2']) placeRun(fleet, H100, name, `GPU-${name}`);
      mkdirSync(path.join(fleet, 'locked'));
      chmodSync(path.join(fleet, 'locked'), 0o000);
      try {
        const result = await cli(['fleet', 'report', fleet, '--json']);
        expect(result.exitCode).toBe(1);
        expect((JSON.parse(result.stdout) as FleetJson).notCompared).toEqual([
          { path: 'locked', reason: 'a directory that cannot be read (EACCES)', fails: true },
        ]);
      } finally {
        chmodSync(path.join(fleet, 'locked'), 0o755);
      }
    },
  );
});
