/**
 * `gpushare fleet report`, in process, over copies of committed runs laid out as a fleet, one made different, over
 * a directory of the fixture runs as results/ holds them, over runs whose text is hostile, and over trees with links and what cannot be read (a FIFO
 * run.json, which must not block, is read by the built CLI in test/e2e/fleet-report.test.ts).
 */
import { chmodSync, cpSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Resvg } from '@resvg/resvg-js';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../harness/bench/record/schema.js';
import type { FleetAnalysis } from '../../harness/fleet/report/analyze.js';
import {
  DEFAULT_RUN as DEFAULT,
  degrade,
  expectOneLineError,
  fixtureRunsDir,
  H100_RUN as H100,
  H100_REPEAT_RUN as H100_REPEAT,
  H200_RUN as H200,
  placeRun,
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

  it('a directory of experiments, not a fleet: a run alike no other, of a model whose runs share no usual settings, is listed and counts for nothing', async () => {
    const busy = (run: Run) => void (run.contamination = ['pid 4242 python3 held 1024 MiB']);
    const report = async (place: (dir: string) => void) => {
      const dir = tempDir('gpushare-fleet-');
      place(dir);
      const json = await cli(['fleet', 'report', dir, '--json']);
      const junit = path.join(tempDir(), 'fleet.xml');
      const text = await cli(['fleet', 'report', dir, '--out', tempDir(), '--junit', junit]);
      const xml = readFileSync(junit, 'utf8');
      return { code: json.exitCode, json: JSON.parse(json.stdout) as FleetJson, text: unfolded(text.stdout), xml };
    };
    // The 250 ms suite made busy beside the 500 ms suite: two settings, neither most H100 runs': set aside, not counted.
    const experiments = await report((dir) => {
      placeRun(dir, H100, 'e4176e', 'GPU-1', 0, busy);
      placeRun(dir, DEFAULT, 'd4099d', 'GPU-2');
    });
    expect([experiments.code, experiments.json.failingNodes]).toEqual([0, []]);
    expect(experiments.json.nodes.find((n) => n.name === 'e4176e')).toMatchObject({ apart: true, pass: false });
    expect(experiments.text).toMatch(
      /^contaminated \(set aside: not counted\): e4176e: the GPU was busy when the run started/m,
    );
    expect(experiments.text).toMatch(/^exit 0: no outlier and no failing node$/m);
    expect(experiments.xml).toMatch(/<testsuites name="gpushare fleet" tests="\d+" failures="0" errors="0"/);
    expect(experiments.xml).toMatch(
      /classname="gpushare\.fleet\.e4176e" name="node checks" time="0"><skipped message="set aside: contaminated: /,
    );
    // The only run of its GPU model is that model's node of the fleet: counted.
    const alone = await report((dir) => placeRun(dir, H100, 'e4176e', 'GPU-1', 0, busy));
    expect([alone.code, alone.json.failingNodes]).toEqual([1, ['e4176e']]);
    // Where most of the model's runs share settings, every run is a node: the odd one fails for its settings too.
    const fleet = await report((dir) => {
      placeRun(dir, H100, 'n1', 'GPU-1');
      placeRun(dir, H100, 'n2', 'GPU-2');
      placeRun(dir, DEFAULT, 'odd', 'GPU-3', 0, busy);
    });
    expect([fleet.code, fleet.json.failingNodes]).toEqual([1, ['odd']]);
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

  it('over a directory of committed runs (the fixtures, three copies added): like compared with like, special-purpose runs set aside with why, the run made different on purpose an outlier', async () => {
    // test/fixtures/runs as a user's results/ holds it (bench runs, a capacity, a probe, a mix run and a
    // two-GPU host), with two more GPUs of the 250 ms default suite and one made 30% worse on purpose, so
    // that suite's group is large enough to have an outlier.
    const results = path.join(tempDir(), 'results');
    cpSync(await fixtureRunsDir(), results, { recursive: true });
    placeRun(results, H100, 'again-e4176e', 'GPU-x1');
    placeRun(results, H100_REPEAT, 'again-c263f1', 'GPU-x2');
    placeRun(results, H100_REPEAT, 'made-different', 'GPU-x3', 0, (run) => degrade(run, 1.3));
    const out = tempDir();
    const result = await cli(['fleet', 'report', results, '--json', '--out', out]);
    expect(result.exitCode).toBe(1);
    const json = JSON.parse(result.stdout) as FleetJson;
    expect(json.outlierNodes).toEqual(['made-different']);
    expect(json.nodes.find((n) => n.name === 'made-different')?.outliers.sort()).toEqual([...HEADLINE].sort());
    // Like with like: a group per GPU model and settings.
    const id = (name: string) => `2026-11-2${name}`;
    const default250 = [id('2-h100-80gb-hbm3-c263f1'), id('2-h100-80gb-hbm3-e4176e')];
    const default500 = [id('2-h100-80gb-hbm3-d4099d'), id('2-h100-80gb-hbm3-f89eae')];
    const custom = id('2-h100-80gb-hbm3-c67faf');
    const loop2 = id('7-h100-80gb-hbm3-2c8cff');
    const sweep = id('7-h100-80gb-hbm3-01535a');
    const h200 = [id('1-h200-a6c68a'), id('1-h200-d7edc0')];
    const host = (gpu: string) => `${id('3-h200-x2-73884e')}/${gpu}`;
    expect(json.groups.map((g) => [...g.nodes].sort()).sort()).toEqual(
      [
        [...default250, 'again-c263f1', 'again-e4176e', 'made-different'],
        default500,
        [custom],
        [loop2],
        [sweep],
        [h200[0]],
        [h200[1]],
        [host('gpu0'), host('gpu1')],
      ].sort(),
    );
    for (const g of json.groups.filter((g) => g.nodes.length < 3)) expect(g.untested).not.toBeNull();
    // Set aside with why: every H100 run of other settings than most H100s ran fails for its settings,
    // naming what differs; the loop-2 run for its protocol loop alone.
    expect(json.failingNodes.sort()).toEqual([...default500, custom, loop2, sweep, 'made-different'].sort());
    const flags = (name: string) => json.nodes.find((n) => n.name === name)?.flags ?? [];
    for (const name of [...default500, custom, loop2, sweep])
      expect(flags(name).map((f) => f.kind)).toEqual(['settings']);
    expect(flags(loop2)[0]?.text).toMatch(/: protocol loop: 2 here, 1 in it$/);
    expect(flags(default500[0] as string)[0]?.text).toContain('window: 500 ms here, 250 ms in it');
    expect(json.groups.find((g) => g.nodes.includes(custom))?.setAside).toMatch(
      /^no other NVIDIA H100 80GB HBM3 run has its settings; the nearest, .+, differs: comparisons only here: mps\/custom, timeslice\/custom;/,
    );
    expect(json.groups.find((g) => g.nodes.includes(h200[0] as string))?.setAside).toMatch(
      /^no other NVIDIA H200 run has its settings; the nearest, 2026-11-21-h200-d7edc0, differs: /,
    );
    expect(json.gpuModels.sort()).toEqual(['NVIDIA H100 80GB HBM3', 'NVIDIA H200']);
    expect(json.notCompared.map((x) => [x.path, x.reason.split(' (')[0], x.fails])).toEqual([
      [id('3-h100-80gb-hbm3-capacity-7490ed'), 'a capacity record', false],
      [id('3-h100-80gb-hbm3-probe-84e6b8'), 'a probe record', false],
      [`${id('3-h200-x2-73884e')}/cross`, 'a cross-GPU check of a multi-GPU host', false],
    ]);
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
