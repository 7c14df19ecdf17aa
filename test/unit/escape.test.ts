/**
 * Escaping by output context, as properties: arbitrary strings (full unicode, controls, markdown and
 * HTML syntax, `<!--`, line breaks, bidi overrides) through each context's functions, then planted in
 * the runs, fleets and job specs every writer takes, checking that each output parses and keeps the
 * structure it has with a harmless string in the same places.
 */
import fc from 'fast-check';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { analyze } from '../../harness/bench/analysis/analyze.js';
import type { Analysis } from '../../harness/bench/analysis/types.js';
import { fingerprintMismatches, type GateResult, gate, settingMismatches } from '../../harness/bench/gate/gate.js';
import { gateJunit, gateMarkdown, gateText } from '../../harness/bench/gate/outputs.js';
import { hostMarkdown } from '../../harness/bench/outputs/host-markdown.js';
import { runMarkdown } from '../../harness/bench/outputs/markdown.js';
import { summaryJson, summaryText } from '../../harness/bench/outputs/summary.js';
import { runHtml } from '../../harness/bench/outputs/write.js';
import type { HostRun } from '../../harness/bench/record/host-record.js';
import type { Run } from '../../harness/bench/record/schema.js';
import { loadRun } from '../../harness/bench/record/store.js';
import { capacityMarkdown } from '../../harness/capacity/markdown.js';
import { stepLine } from '../../harness/capacity/progress.js';
import { type CapacityRun, loadCapacityRun } from '../../harness/capacity/record.js';
import { capacitySummary, capacityTable } from '../../harness/capacity/table.js';
import { plantSlowdown } from '../../harness/cli/plant-slowdown.js';
import { renderSvg } from '../../harness/core/chart-svg.js';
import { htmlPage, htmlText } from '../../harness/core/escape/html.js';
import { mdCode, mdFence, mdText } from '../../harness/core/escape/markdown.js';
import { termJson, termText } from '../../harness/core/escape/terminal.js';
import { shownEscaped } from '../../harness/core/escape/unprintable.js';
import { xmlAttr, xmlText } from '../../harness/core/escape/xml.js';
import { yamlText } from '../../harness/core/escape/yaml.js';
import { sharingConfigs } from '../../harness/deploy/bundle.js';
import { sharingArtifacts } from '../../harness/deploy/k8s.js';
import { migPartedConfig, migPartedYaml, standardGeometries } from '../../harness/deploy/mig-parted.js';
import { builtinMigGpu } from '../../harness/deploy/mig-profiles.js';
import { analyzeHistory, type HistoryAnalysis } from '../../harness/fleet/history/analyze.js';
import { historyChart } from '../../harness/fleet/history/chart.js';
import { historyMarkdown } from '../../harness/fleet/history/markdown.js';
import { historyJson, historyText } from '../../harness/fleet/history/outputs.js';
import { type FleetJobSpec, fleetJob, fleetJobYaml } from '../../harness/fleet/job/manifest.js';
import { resolveFleetJobOptions } from '../../harness/fleet/job/options.js';
import { analyzeFleet, type FleetAnalysis, type FleetRules } from '../../harness/fleet/report/analyze.js';
import { fleetChart } from '../../harness/fleet/report/chart.js';
import { fleetMarkdown } from '../../harness/fleet/report/markdown.js';
import { fleetJson, fleetJunit, fleetText } from '../../harness/fleet/report/outputs.js';
import { loadMixRun, type MixRun } from '../../harness/mix/record.js';
import { mixMarkdown } from '../../harness/mix/report.js';
import { probeMarkdown } from '../../harness/probe/markdown.js';
import { loadProbeRun, type ProbeRun } from '../../harness/probe/record.js';
import { analyzeServe } from '../../harness/serve/analysis.js';
import { serveMarkdown, serveSummary } from '../../harness/serve/markdown.js';
import { loadServeRun, type ServeRun } from '../../harness/serve/record.js';
import { parseDeclared } from '../../harness/verify/declared.js';
import { verifyMarkdown } from '../../harness/verify/markdown.js';
import type { VerifyRun } from '../../harness/verify/record.js';
import { verifySummary } from '../../harness/verify/summary.js';
import type { StepAnalysis } from '../../harness/workload/open-loop.js';
import {
  CAPACITY_RUN,
  DEFAULT_RUN,
  H100_MIX_RUN,
  PROBE_RUN,
  REPEAT_RUN,
  SERVE_CAPACITY_RUN,
  SERVE_RUN,
} from '../helpers.js';
import { inlineOf, markdown, markdownShape, NOT_XML_CHAR, TERMINAL_CONTROL } from '../output-checks.js';

/** Pieces of every syntax that could break an output, and characters a terminal or parser acts on. */
const HOSTILE_PIECES = [
  '<!--',
  '-->',
  '<script>',
  '</td>',
  '\n',
  '\r\n',
  '\r',
  '\u2028',
  '\u0085',
  '|',
  '||',
  '*',
  '**',
  '_',
  '__',
  '`',
  '```',
  '~',
  '~~',
  '[',
  ']',
  '](',
  '(x)',
  '![a](b)',
  '[ ] ',
  '#',
  '# ',
  '### ',
  '> ',
  '- ',
  '+ ',
  '1. ',
  '2) ',
  '---',
  '===',
  '    ',
  '\t',
  ' ',
  '&amp;',
  '&#60;',
  '&lt;',
  '\\',
  '$',
  '$$',
  ':',
  'x',
  'Exit 0',
  'é',
  '模型',
  '🚀',
  '\u0000',
  '\u0007',
  '\u001b[31m',
  '\u001b]0;t\u0007',
  '\u009b31m',
  '\u007f',
  '\u202e',
  '\u2066',
  '\u200b',
  '\u00a0',
  '\ufeff',
  '\ufffe',
  '\ud800',
  '\udfff',
  '"',
  "'",
  '<',
  '>',
  '&',
  'on',
  'no',
  'yes',
  '~',
  '0x10',
  '1e3',
  '=',
  '<<',
  ': ',
  ' #',
  '%',
  '@',
  '!',
  '{',
  '}',
  ',',
  '?',
  '- - -',
];
/** Full unicode, or a string built of the hostile pieces. */
const hostile = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.constantFrom(...HOSTILE_PIECES), maxLength: 12 }),
);
/** The characters of text as a reader sees it on one line: line breaks a space, unprintables escaped. */
const oneLine = (text: string) => shownEscaped(text.replace(/\r\n|[\n\r\u2028\u2029]/g, ' '));
/**
 * A hostile string with something to show: writers rightly treat an empty warning or reason as none,
 * and a value of spaces alone leaves its list item empty (mdText drops the blanks that start a line: a tab there would
 * open a code block).
 */
const present = hostile.filter((s) => oneLine(s.replace(/^[ \t\r\n\u2028\u2029]+/, '')).replace(/[ \t]/g, '') !== '');

describe('markdown: mdText, mdCode, mdFence', () => {
  it('text in the middle of a line, at its start, after a list marker, in a heading and in a table cell stays there, as the text it is', () => {
    fc.assert(
      fc.property(hostile, (s) => {
        const text = oneLine(s.replace(/^[ \t\r\n\u2028\u2029]+/, ''));
        const cases: Array<[string, string, string]> = [
          [`before ${mdText(s)} after`, 'paragraph_open:p', `before ${text} after`],
          [`${mdText(s)} after`, 'paragraph_open:p', `${text} after`],
          [`- ${mdText(s)}`, 'bullet_list_open:ul', text.trimEnd()],
          [`### ${mdText(s)}`, 'heading_open:h3', text.trimEnd()],
          [`| a | b |\n|---|---|\n| ${mdText(s)} | x |`, 'table_open:table', text.trim()],
        ];
        // Nothing left to show (a line break, spaces) leaves a list item or heading empty: only the middle of a line then.
        for (const [doc, first, shown] of text.trim() === '' ? cases.slice(0, 1) : cases) {
          const tokens = markdown.parse(doc, {});
          expect(`${tokens[0]?.type}:${tokens[0]?.tag}`).toBe(first);
          const inlines = tokens.filter((t) => t.type === 'inline');
          // A table keeps its two rows of two cells: the planted text is the first cell of the second row.
          expect(inlines).toHaveLength(doc.startsWith('|') ? 4 : 1);
          const mine = inlineOf((doc.startsWith('|') ? inlines[2] : inlines[0]) as never);
          expect(mine.kinds).toEqual([]);
          expect(mine.text.trim() === '' ? '' : mine.text).toBe(shown.trim() === '' ? '' : shown);
        }
      }),
      // Found by fresh draws: a rule with trailing blanks.
      { numRuns: 1500, examples: [['--- '], ['-- -'], ['=== ']] },
    );
  });

  it('harmless text is left exactly as it is', () => {
    for (const text of [
      'NVIDIA H100 80GB HBM3',
      '580.159.04',
      'RuntimeError: CUDA_ERROR_MPS_MAX_CLIENTS_REACHED (the limit)',
      'A context switch costs ~10–100 µs',
      'examples/torchvision_model.py --batch 8',
      '2.11.0+cu130',
      'host-a/gpu0',
    ])
      expect(mdText(text)).toBe(text);
  });

  it('a code span, on a line or in a table cell, shows its text whatever backticks and pipes it holds', () => {
    fc.assert(
      fc.property(hostile, (s) => {
        const text = oneLine(s);
        const line = inlineOf(markdown.parse(`x ${mdCode(s)} y`, {}).find((t) => t.type === 'inline') as never);
        expect(line.kinds).toEqual(['code_inline']);
        const code = (doc: string) =>
          markdown
            .parse(doc, {})
            .flatMap((t) => t.children ?? [])
            .filter((c) => c.type === 'code_inline')
            .map((c) => c.content);
        // Spaces alone: CommonMark keeps them all, markdown-it strips one at each end.
        const shown = (code: string[]) => (/^ *$/.test(text) ? code.map((c) => (/^ *$/.test(c) ? text : c)) : code);
        expect(shown(code(`x ${mdCode(s)} y`))).toEqual([text]);
        const table = markdown.parse(`| a | b |\n|---|---|\n| ${mdCode(s, 'cell')} | x |`, {});
        expect(table.filter((t) => t.type === 'td_open')).toHaveLength(2);
        expect(shown(code(`| a | b |\n|---|---|\n| ${mdCode(s, 'cell')} | x |`))).toEqual([text]);
      }),
      { numRuns: 1500 },
    );
  });

  it('a fenced block holds every line it is given, and nothing after it', () => {
    fc.assert(
      fc.property(fc.array(hostile, { maxLength: 5 }), (lines) => {
        const text = `${lines.join('\n')}\n`;
        const tokens = markdown.parse(`${mdFence(text)}after\n`, {});
        expect(tokens.map((t) => t.type)).toEqual(['fence', 'paragraph_open', 'inline', 'paragraph_close']);
        expect(tokens[0]?.content).toBe(shownEscaped(text, /\n/));
      }),
      { numRuns: 500 },
    );
  });
});

const xml = new XMLParser({
  ignoreAttributes: false,
  trimValues: false,
  parseAttributeValue: false,
  parseTagValue: false,
  htmlEntities: true,
});
/** An XML document's element tree: element names and nesting, without attributes or text. */
function elements(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(elements);
  if (typeof node !== 'object' || node === null) return null;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([key]) => !key.startsWith('@_') && key !== '#text')
      .map(([key, value]) => [key, elements(value)]),
  );
}

describe('XML: xmlText and xmlAttr', () => {
  it('any text parses back as an attribute and as content, every unprintable character shown escaped', () => {
    fc.assert(
      fc.property(hostile, (s) => {
        const doc = `<a b="${xmlAttr(s)}">${xmlText(s)}</a>`;
        expect(XMLValidator.validate(doc)).toBe(true);
        expect(doc).not.toMatch(NOT_XML_CHAR);
        const shown = shownEscaped(s, /[\t\n\r]/);
        const parsed = xml.parse(doc) as { a: { '@_b': string; '#text'?: string } | string };
        const a = typeof parsed.a === 'string' ? { '@_b': '', '#text': parsed.a } : parsed.a;
        expect(a['@_b']).toBe(shown);
        expect(a['#text'] ?? '').toBe(shown);
      }),
      { numRuns: 1500 },
    );
  });
});

describe('terminal: termText and termJson', () => {
  it('no control, bidi or line break reaches the terminal; printable text is left as it is', () => {
    fc.assert(
      fc.property(hostile, (s) => {
        expect(termText(s)).not.toMatch(TERMINAL_CONTROL);
        expect(termText(s)).not.toMatch(/[\n\u2028\u2029]/);
        if (!/[\p{C}\p{Z}]/u.test(s.replaceAll(' ', ''))) expect(termText(s)).toBe(s);
        const json = termJson({ s, list: [s] });
        expect(json.slice(0, -1)).not.toMatch(TERMINAL_CONTROL);
        expect(JSON.parse(json)).toEqual({ s, list: [s] });
      }),
      { numRuns: 1500 },
    );
  });
});

describe('YAML: yamlText', () => {
  it.each([
    'on',
    'off',
    'On',
    'OFF',
    'yes',
    'no',
    'Yes',
    'NO',
    'y',
    'n',
    'Y',
    'N',
    'true',
    'False',
    '~',
    'null',
    'Null',
    '',
    '0x10',
    '0o10',
    '010',
    '1e3',
    '1_000',
    '1:20',
    '.inf',
    '.NaN',
    '2001-12-14',
    '=',
    '<<',
    '+12',
    '0b101',
  ])('%j is quoted, as a value and as a key', (s) => {
    const text = yamlText(new Map([[s, s]]));
    expect(text).toMatch(/^["'].*["']: ["'].*["']\n$/);
    for (const version of ['1.1', '1.2'] as const)
      expect(parseYaml(text, { version, mapAsMap: true })).toEqual(new Map([[s, s]]));
  });

  it.each([' \n', '\t\n', 'a\n  \nb', '\n \n'])('%j, whose line is only blanks, reads back as itself', (s) => {
    const value = new Map<string, unknown>([
      [s, s],
      ['list', ['', s]],
    ]);
    for (const version of ['1.1', '1.2'] as const)
      expect(parseYaml(yamlText(value), { version, mapAsMap: true })).toEqual(value);
  });

  it('any string, as a value, a key and in a list, reads back as that string under YAML 1.1 and 1.2', () => {
    fc.assert(
      fc.property(hostile, hostile, (s, key) => {
        const value = new Map<string, unknown>([
          [key, s],
          ['list', [s, key]],
        ]);
        const text = yamlText(value);
        for (const version of ['1.1', '1.2'] as const)
          expect(parseYaml(text, { version, mapAsMap: true, uniqueKeys: false })).toEqual(value);
      }),
      { numRuns: 1500 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Every writer, with the string planted in the runs it reads.

let run: Run;
let repeat: Run;
let analysis: Analysis;
let repeatAnalysis: Analysis;
let slowAnalysis: Analysis;
let probe: ProbeRun;
let capacity: CapacityRun;
let mix: MixRun;
let serveBench: ServeRun;
let serveCapacity: ServeRun;

beforeAll(async () => {
  run = await loadRun(DEFAULT_RUN);
  repeat = await loadRun(REPEAT_RUN);
  analysis = analyze(run);
  repeatAnalysis = analyze(repeat);
  slowAnalysis = analyze(plantSlowdown(run, 0.3));
  probe = (await loadProbeRun(PROBE_RUN)) as ProbeRun;
  capacity = (await loadCapacityRun(CAPACITY_RUN)) as CapacityRun;
  mix = (await loadMixRun(H100_MIX_RUN)) as MixRun;
  serveBench = (await loadServeRun(SERVE_RUN)) as ServeRun;
  serveCapacity = (await loadServeRun(SERVE_CAPACITY_RUN)) as ServeRun;
});

/** A copy of a run with `s` as its GPU's name, host, driver, CUDA, Python, warnings, contamination, reasons and a workload argument. */
function planted(r: Run, s: string): Run {
  const f = r.fingerprint;
  return {
    ...r,
    warnings: [s],
    contamination: [s],
    sampler: { ...r.sampler, error: s },
    fingerprint: {
      ...f,
      driverVersion: s,
      cudaVersion: s,
      host: { ...f.host, hostname: s, kernel: s, platform: s },
      gpus: f.gpus.map((g) => (g.index === r.config.gpuIndex ? { ...g, name: s, computeMode: s } : g)),
      python: f.python.status === 'ok' ? { ...f.python, version: s, torch: s } : { ...f.python, error: s },
      mps: { ...f.mps, controlPath: s },
    },
    modes: r.modes.map((m) => (m.status === 'ran' ? m : { ...m, reason: s })),
    plan: r.plan.map((c) => ({ ...c, workload: { ...c.workload, argv: [...c.workload.argv, s] } })),
  };
}

/** The analysis of a planted run: its comparisons read the planted plan, and the first verdict's reasons are `s`. */
function plantedAnalysis(a: Analysis, r: Run, s: string): Analysis {
  const plan = new Map(r.plan.map((c) => [c.id, c]));
  return {
    ...a,
    comparisons: a.comparisons.map((c) => ({ ...c, comparison: plan.get(c.comparison.id) ?? c.comparison })),
    verdicts: a.verdicts.map((v, i) => (i === 0 ? { ...v, reasons: [s], warnings: [s], diagnosis: [s] } : v)),
  };
}

const rules: FleetRules = {
  machineDifferences: (now, before) =>
    fingerprintMismatches(
      { fingerprint: now.fingerprint, gpuIndex: now.config.gpuIndex },
      { fingerprint: before.fingerprint, gpuIndex: before.config.gpuIndex },
    ),
  settingDifferences: settingMismatches,
};

/** Three nodes named after `s`, its GPU name and host on each, the third contaminated (so it fails), and an unreadable run. */
function plantedFleet(s: string): FleetAnalysis {
  const node = (r: Run, a: Analysis, name: string, contaminated: boolean) => {
    const p = planted(r, s);
    return {
      path: name,
      host: s,
      run: { ...p, warnings: [], contamination: contaminated ? [s] : [], sampler: r.sampler },
      analysis: plantedAnalysis(a, p, s),
    };
  };
  return analyzeFleet(
    [
      node(run, analysis, `a/${s}`, false),
      node(repeat, repeatAnalysis, `b/${s}`, false),
      node(run, analysis, `c/${s}`, true),
    ],
    [{ path: `d/${s}`, reason: s, fails: true }],
    rules,
  );
}

/**
 * A history of six runs named after `s` (ids, paths, GPU name, driver), every headline 30% slower from
 * the fourth on (a change), the first run's first headline invalid for reason `s`, and an unreadable run.
 */
function plantedHistory(s: string): HistoryAnalysis {
  const members = Array.from({ length: 6 }, (_, i) => {
    const p = { ...planted(run, s), id: `${s}-${i}`, createdAt: `2026-11-2${i}T00:00:00.000Z` };
    const a = plantedAnalysis(i < 3 ? analysis : slowAnalysis, p, s);
    const verdicts = a.verdicts.map((v, k) => (i === 0 && k === 0 ? { ...v, verdict: 'invalid' as const } : v));
    return { path: `${s}/${i}`, host: s, run: p, analysis: { ...a, verdicts } };
  });
  return analyzeHistory(members, [{ path: `d/${s}`, reason: s, fails: true }], 0.001);
}

let gated: GateResult;
beforeAll(() => {
  gated = gate(run, repeat, run.config.thresholds, { allowMismatch: true });
});

function plantedGate(s: string): GateResult {
  const result = gated;
  return {
    ...result,
    runId: s,
    baselineId: s,
    mismatches: [s],
    problems: [s],
    verdicts: result.verdicts.map((v, i) => (i === 0 ? { ...v, reasons: [s], warnings: [s] } : v)),
  };
}

function plantedHost(s: string): Parameters<typeof hostMarkdown> {
  const host: HostRun = {
    schema: 'gpushare-host/1',
    id: s,
    status: 'complete',
    createdAt: s,
    finishedAt: null,
    gpus: [{ index: 0, uuid: s, name: s, dir: s, exitCode: 0 }],
    crossDir: null,
    schedule: { parallel: true, reason: s },
    warnings: [s],
    resumes: [],
  };
  const r = planted(run, s);
  return [
    host,
    [{ gpu: host.gpus[0] as HostRun['gpus'][number], run: r, analysis: plantedAnalysis(analysis, r, s) }],
    null,
    () => 'r.md',
    '0.1.0',
  ];
}

function plantedProbe(s: string): ProbeRun {
  const f = probe.fingerprint;
  return {
    ...probe,
    warnings: [s],
    fingerprint: { ...f, driverVersion: s, gpus: f.gpus.map((g) => ({ ...g, name: s })) },
    probes: probe.probes.map((o) => (o.status === 'measured' ? o : { ...o, reason: s })),
    cleanup: probe.cleanup.map((c) => ({ ...c, daemon: s })),
  };
}

function plantedCapacity(s: string): CapacityRun {
  const f = capacity.fingerprint;
  return {
    ...capacity,
    warnings: [s],
    fingerprint: { ...f, driverVersion: s, gpus: f.gpus.map((g) => ({ ...g, name: s })) },
    settings: {
      ...capacity.settings,
      workload: { ...capacity.settings.workload, argv: [...capacity.settings.workload.argv, s] },
    },
  };
}

/** A server run with `s` as its GPU, driver, CPU model, a warning, the --serve command, ready path and cores, and the reason its first group failed (a server's log). */
function plantedServe(r: ServeRun, s: string): ServeRun {
  const f = r.fingerprint;
  return {
    ...r,
    warnings: [s],
    fingerprint: { ...f, driverVersion: s, gpus: f.gpus.map((g) => ({ ...g, name: s })) },
    host: { ...r.host, cpuModel: s },
    settings: { ...r.settings, serve: `${r.settings.serve} ${s}`, readyPath: s, serverCpus: s },
    groups: r.groups.map((g, i) => (i === 0 ? { ...g, status: 'failed', reason: s } : g)),
  };
}

function plantedMix(s: string): MixRun {
  const f = mix.fingerprint;
  return {
    ...mix,
    warnings: [s],
    fingerprint: { ...f, driverVersion: s, cudaVersion: s, gpus: f.gpus.map((g) => ({ ...g, name: s })) },
    outcomes: [{ mode: 'mps', status: 'failed', reason: s }],
    settings: {
      ...mix.settings,
      victim: { ...mix.settings.victim, argv: [...mix.settings.victim.argv, s] },
    },
  };
}

/** A verify run (none is committed) whose free text is all `s`: the directory, the source, each row's and case's words, a warning. */
function plantedVerify(s: string): VerifyRun {
  const row = { declared: s, measured: s, tolerance: s, change: s };
  return {
    schema: 'gpushare.verify/1',
    id: 'v-1',
    status: 'complete',
    createdAt: s,
    finishedAt: null,
    fingerprint: { ...run.fingerprint, driverVersion: s, gpus: run.fingerprint.gpus.map((g) => ({ ...g, name: s })) },
    gpuIndex: run.config.gpuIndex,
    artifacts: s,
    declared: { ...parseDeclared({}), source: s },
    requestedCases: ['pipe-missing'],
    rows: [
      { id: 'mps.thread-pct', verdict: 'not enforced', ...row },
      { id: 'mps.attach', verdict: 'enforced', ...row },
    ],
    cases: [{ name: 'pipe-missing', needs: 'one GPU', outcome: 'reproduced', evidence: s }],
    daemons: [],
    leftPids: [],
    warnings: [s],
  };
}

/** Every markdown writer, given the planted string. */
const MARKDOWN: Record<string, (s: string) => string> = {
  'the run report': (s) => {
    const r = planted(run, s);
    return runMarkdown(r, plantedAnalysis(analysis, r, s), { ratios: 'r.svg' }, '0.1.0');
  },
  'the host report': (s) => hostMarkdown(...plantedHost(s)),
  'the fleet report': (s) => fleetMarkdown(plantedFleet(s), { name: 'test', dir: s, version: '0.1.0' }, 'c.svg'),
  'the fleet history': (s) =>
    historyMarkdown(plantedHistory(s), { name: 'test', dir: s, version: '0.1.0' }, new Map([['g1', 'g1.svg']])),
  "the gate's step summary": (s) => gateMarkdown(plantedGate(s)),
  'the probe report': (s) => probeMarkdown(plantedProbe(s), '0.1.0'),
  'the capacity report': (s) => capacityMarkdown(plantedCapacity(s), '0.1.0'),
  'the mix report': (s) => mixMarkdown(plantedMix(s), { heatmap: 'h.svg', frontier: 'f.svg' }),
  'the verify report': (s) => verifyMarkdown(plantedVerify(s), '0.1.0'),
  'the bench --serve report': (s) => {
    const r = plantedServe(serveBench, s);
    return serveMarkdown(r, analyzeServe(r), '0.1.0');
  },
  'the capacity --serve report': (s) => {
    const r = plantedServe(serveCapacity, s);
    return serveMarkdown(r, analyzeServe(r), '0.1.0');
  },
};

describe('every markdown writer keeps its structure whatever the runs say', () => {
  it.each(Object.keys(MARKDOWN))(
    '%s: the headings, paragraphs, lists, table rows and lines of a harmless name',
    (name) => {
      const write = MARKDOWN[name] as (s: string) => string;
      const harmless = write('x');
      const expected = { shape: markdownShape(harmless), lines: harmless.split('\n').length };
      fc.assert(
        fc.property(present, (s) => {
          const text = write(s);
          expect({ shape: markdownShape(text), lines: text.split('\n').length }).toEqual(expected);
        }),
        { numRuns: 60 },
      );
    },
    // Work, not waiting: the mix report analyses its run each time (16 s quiet, 70 s beside three suites on
    // 2 cores); the bound is only against a hang.
    180_000,
  );
});

/** The tags and attribute names of an HTML page, in order: its structure, whatever its text says. */
function htmlShape(html: string): string[] {
  return [...html.matchAll(/<(\/?[a-zA-Z][\w-]*)((?:\s+[\w-]+(?:="[^"]*")?)*)\s*>/g)].map(
    (m) => `${m[1]}${[...(m[2] ?? '').matchAll(/\s([\w-]+)=/g)].map((a) => ` ${a[1]}`).join('')}`,
  );
}

describe('HTML: every report as a page (report --format html) keeps the structure of a harmless name', () => {
  it('htmlText leaves no markup and no unprintable character', () => {
    fc.assert(
      fc.property(present, (s) => {
        const text = htmlText(s);
        expect(text).not.toMatch(/[<>"']|&(?!amp;|lt;|gt;|quot;|#39;)/);
        expect(text).not.toMatch(TERMINAL_CONTROL);
      }),
      { numRuns: 200 },
    );
  });

  it.each(Object.keys(MARKDOWN))('%s', (name) => {
    const write = (s: string) => htmlPage(s, (MARKDOWN[name] as (s: string) => string)(s));
    const expected = htmlShape(write('x'));
    fc.assert(
      fc.property(present, (s) => {
        const html = write(s);
        expect(htmlShape(html)).toEqual(expected);
        expect(html).not.toMatch(/<script|javascript:|<[a-z]+[^>]*\son\w+=/i);
      }),
      { numRuns: 40 },
    );
  });

  it('the run report page with its charts inlined', async () => {
    const page = async (s: string) => {
      const r = planted(run, s);
      return runHtml(r, plantedAnalysis(analysis, r, s));
    };
    const expected = htmlShape(await page('x'));
    await fc.assert(
      fc.asyncProperty(present, async (s) => {
        const html = await page(s);
        expect(htmlShape(html)).toEqual(expected);
        expect(html).not.toMatch(/<script|javascript:/i);
      }),
      { numRuns: 6 },
    );
  }, 120_000);
});

describe('JUnit and SVG parse to the element tree of a harmless name', () => {
  it.each([
    ['the fleet JUnit', (s: string) => fleetJunit(plantedFleet(s), 'test')],
    ["the gate's JUnit", (s: string) => gateJunit(plantedGate(s))],
  ])('%s', (_name, write) => {
    const expected = elements(xml.parse(write('x')));
    fc.assert(
      fc.property(present, (s) => {
        const text = write(s);
        expect(XMLValidator.validate(text)).toBe(true);
        expect(text).not.toMatch(NOT_XML_CHAR);
        expect(elements(xml.parse(text))).toEqual(expected);
      }),
      { numRuns: 100 },
    );
  });

  it('the fleet history chart', async () => {
    const svg = async (s: string) => {
      const g = plantedHistory(s).groups[0];
      return renderSvg(historyChart(g as NonNullable<typeof g>) as NonNullable<ReturnType<typeof historyChart>>);
    };
    const expected = elements(xml.parse(await svg('x')));
    await fc.assert(
      fc.asyncProperty(present, async (s) => {
        const text = await svg(s);
        expect(XMLValidator.validate(text)).toBe(true);
        expect(text).not.toMatch(NOT_XML_CHAR);
        expect(elements(xml.parse(text))).toEqual(expected);
      }),
      { numRuns: 12 },
    );
  }, 60_000);

  it('the fleet chart', async () => {
    const svg = async (s: string) =>
      renderSvg(fleetChart(plantedFleet(s)) as NonNullable<ReturnType<typeof fleetChart>>);
    const expected = elements(xml.parse(await svg('x')));
    await fc.assert(
      fc.asyncProperty(present, async (s) => {
        const text = await svg(s);
        expect(XMLValidator.validate(text)).toBe(true);
        expect(text).not.toMatch(NOT_XML_CHAR);
        expect(elements(xml.parse(text))).toEqual(expected);
      }),
      { numRuns: 12 },
    );
  }, 60_000);
});

/** The committed capacity run's table, analysed once: the properties below only plant text in it. */
let rows: ReturnType<typeof capacityTable> | null = null;
const capacityRows = () => {
  rows ??= capacityTable(capacity);
  return rows;
};

describe("the terminal: no control or bidi character but the writer's own line breaks", () => {
  // The summary and the gate fold long lines at spaces for an 80-column terminal: their line count
  // is checked unfolded (columns Infinity), their characters folded as printed.
  it.each([
    [
      'show',
      (s: string, columns?: number) => {
        const r = planted(run, s);
        return summaryText(r, plantedAnalysis(analysis, r, s), s, true, columns);
      },
    ],
    [
      'summaryJson through termJson (show --json, report --format json)',
      (s: string) => {
        const r = planted(run, s);
        return termJson(summaryJson(r, plantedAnalysis(analysis, r, s)));
      },
    ],
    ['gate', (s: string, columns?: number) => gateText(plantedGate(s), columns)],
    [
      'the bench --serve summary (and plan --run of a server run)',
      (s: string) => {
        const r = plantedServe(serveBench, s);
        return serveSummary(r, analyzeServe(r));
      },
    ],
    ['verify', (s: string) => verifySummary(plantedVerify(s))],
    ['fleet report', (s: string) => fleetText(plantedFleet(s), s)],
    ['fleet report --json', (s: string) => fleetJson(plantedFleet(s))],
    ['fleet history', (s: string) => historyText(plantedHistory(s), s)],
    ['fleet history --json', (s: string) => historyJson(plantedHistory(s))],
    [
      "capacity's table, a reason quoting a workload's stderr",
      (s: string) => capacitySummary(capacityRows().map((r) => ({ ...r, status: 'failed', reason: s }))),
    ],
    [
      "capacity's step line",
      (s: string) => {
        const step = capacityRows()[0]?.steps[0] as StepAnalysis;
        const at = { mode: 'mps', clients: 2, step: 1, maxSteps: 3, targetMs: 10, stepsLeft: 1, stepMs: 1000 };
        return stepLine(at, { ...step, verdict: 'invalid', reason: s });
      },
    ],
  ])('%s', (_name, write: (s: string, columns?: number) => string) => {
    const lines = write('x', Number.POSITIVE_INFINITY).split('\n').length;
    fc.assert(
      fc.property(present, (s) => {
        const text = write(s);
        expect(text).not.toMatch(TERMINAL_CONTROL);
        expect(text).not.toMatch(/[\u2028\u2029]/);
        expect(write(s, Number.POSITIVE_INFINITY).split('\n')).toHaveLength(lines);
      }),
      { numRuns: 60 },
    );
  });
});

/** A JSON round trip: what a YAML reader should give back. */
const plain = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

// 100 runs each: a property is one synchronous stretch, and a vitest worker that does not yield for 60 s loses its
// runner ("Timeout calling onTaskUpdate") on a loaded 2-core machine; npm run test:fuzz draws more.
describe('generated YAML reads back as the same strings under YAML 1.1 and 1.2', () => {
  it('the fleet Job: name, namespace, image, node selector, claim, runtime class and modes', () => {
    const base = resolveFleetJobOptions({ nodes: 'pool=h100', image: 'x/gpushare:1', count: '3' }).spec;
    fc.assert(
      fc.property(hostile, hostile, hostile, (s, key, other) => {
        const spec: FleetJobSpec = {
          ...base,
          name: s,
          namespace: other,
          image: s,
          modes: [s, other],
          nodeSelector: { [`k${key}`]: s, other },
          results: { kind: 'pvc', claimName: other },
          runtimeClass: s,
          source: s,
        };
        const text = fleetJobYaml(spec);
        for (const version of ['1.1', '1.2'] as const)
          expect(parseYaml(text, { version })).toEqual(plain(fleetJob(spec)));
      }),
      { numRuns: 100 },
    );
  });

  it('the device-plugin ConfigMap, node labels, ClusterPolicy patch and mig-parted config', () => {
    const gpu = builtinMigGpu('A100-80GB');
    if (!gpu) throw new Error('no built-in A100-80GB');
    fc.assert(
      fc.property(hostile, hostile, (s, other) => {
        const k8s = sharingArtifacts(sharingConfigs(4), 'mps-4', s, { namespace: s, clusterPolicy: other });
        for (const version of ['1.1', '1.2'] as const) {
          expect(parseYaml(k8s.configMap, { version }).metadata.namespace).toBe(s);
          expect(parseYaml(k8s.clusterPolicyPatch, { version })).toEqual({
            spec: { devicePlugin: { config: { name: 'gpushare-device-plugin-config', default: 'mps-4' } } },
          });
          expect(parseYaml(k8s.selection, { version })).toEqual({
            metadata: { labels: { 'nvidia.com/device-plugin.config': 'mps-4' } },
          });
          const spec = migPartedConfig(gpu, standardGeometries(gpu));
          expect(parseYaml(migPartedYaml(spec, { ...gpu, name: s }, other), { version })).toEqual(plain(spec));
        }
      }),
      { numRuns: 100 },
    );
  });
});
