/** A fleet run's report (`bench --serve --fleet`): per mode, the hot servers and the cold tail apart. */
import { mdCode, mdText } from '../../core/escape/markdown.js';
import { termText } from '../../core/escape/terminal.js';
import { SIMULATED_TEXT, simulatedMarkdown } from '../../record/simulated.js';
import { isSimulated } from '../../system/nvidia/schema.js';
import { ceilingLines } from '../markdown.js';
import type { ServeRun } from '../record.js';
import { OVER_CEILING_TEXT, unverifiedText } from '../verdicts.js';
import type { FleetAnalysis, FleetModeAnalysis, GeneratorCheck, ServerAttainment } from './fleet-analysis.js';
import type { FitCheck } from './fleet-fit.js';
import type { ServerMemory } from './fleet-memory.js';

const pct = (v: number | null) => (v === null ? '–' : `${(v * 100).toFixed(1)}%`);
const ms = (v: number | null) => (v === null ? '–' : v.toFixed(1));
const span = (i: [number, number] | null) => (i === null ? '–' : `${pct(i[0])}–${pct(i[1])}`);

/** A server's memory under one arm, MiB, as the record has it (fleet-memory.ts); undefined where none was sampled. */
type MemoryOf = (server: number) => ServerMemory | undefined;

const memoryOf =
  (run: ServeRun, mode: string): MemoryOf =>
  (server) =>
    run.fleet?.memory?.find((x) => x.mode === mode && x.server === server);

function serverRows(servers: ReadonlyArray<Omit<ServerAttainment, 'hot'>>, memory: MemoryOf): string[] {
  const mib = (index: number) => {
    const m = memory(index);
    return m?.memoryMiB == null ? '–' : m.memoryMiB.toFixed(0);
  };
  return [
    '| server | kind | rate (req/s) | requests | within SLO | attainment | 95% interval | verdict | TTFT p99, worst window (ms) | memory (MiB) |',
    '|---|---|---:|---:|---:|---:|---|---|---:|---:|',
    ...servers.map(
      (s) =>
        `| ${mdText(s.label)} | ${mdText(s.kind)} | ${s.ratePerS.toFixed(2)} | ${s.requests} | ${s.good} | ${pct(s.attainment)} | ${span(s.interval)} | ${s.verdict} | ${ms(s.ttftP99Ms)} | ${mib(s.index)} |`,
    ),
  ];
}

/** Why memory is not known, once per reason, with the servers it holds for. */
function memoryNotes(servers: ReadonlyArray<Omit<ServerAttainment, 'hot'>>, memory: MemoryOf): string[] {
  const why = new Map<string, string[]>();
  for (const s of servers) {
    const reason = memory(s.index)?.reason;
    if (reason != null) why.set(reason, [...(why.get(reason) ?? []), s.label]);
  }
  return [...why].map(([reason, labels]) => `Memory of ${mdText(labels.join(', '))} not known: ${mdText(reason)}.`);
}

/** A mode's windows against the generator's ceiling, in one sentence; none for runs that kept no totals. */
export function generatorText(g: GeneratorCheck | null, ceilingRatePerS: number | null): string | null {
  if (g === null || g.windows === 0) return null;
  const sent = `the generator sent up to ${g.sentPerS?.toFixed(1)} req/s in its ${g.windows} windows`;
  if (g.unverified > 0) return `Load: ${sent}, ${unverifiedText(ceilingRatePerS)}.`;
  if (g.over > 0)
    return `Load: ${sent}, ${g.over} of them ${OVER_CEILING_TEXT}: they measured the generator as much as the servers.`;
  return `Load: ${sent}, every one within its ceiling of ${ceilingRatePerS?.toFixed(0)} req/s.`;
}

function modeLines(m: FleetModeAnalysis, memory: MemoryOf, ceilingRatePerS: number | null): string[] {
  if (m.status !== 'measured')
    return [`### ${m.mode}`, '', `${m.status}${m.reason ? `: ${mdText(m.reason)}` : ''}`, ''];
  const load = generatorText(m.generator, ceilingRatePerS);
  return [
    `### ${m.mode}: ${m.verdict}`,
    '',
    `Goodput of the whole GPU: ${m.goodPerS.toFixed(2)} requests/s within the SLO, ${m.tokensPerS.toFixed(0)} output tokens/s.${load === null ? '' : ` ${load}`}`,
    '',
    '**Hot servers**',
    '',
    ...serverRows(
      m.servers.filter((s) => s.hot),
      memory,
    ),
    '',
    '**Cold tail**',
    '',
    ...serverRows(
      m.servers.filter((s) => !s.hot),
      memory,
    ),
    '',
    ...withBlank(memoryNotes(m.servers, memory)),
  ];
}

/** The pre-check (fleet-fit.ts): each check with its figures; nothing for runs before it. */
function fitLines(checks: readonly FitCheck[] | undefined): string[] {
  if (checks === undefined || checks.length === 0) return [];
  const mark = (c: FitCheck) =>
    c.fits === null ? 'not checked' : c.fits ? 'fits' : c.blocks ? 'rules out' : 'warning';
  return [
    '## What limits the fleet',
    '',
    ...checks.map((c) => `- ${mark(c)} (${c.modes.join(', ')}): ${mdText(c.text)}`),
    '',
  ];
}

/** `lines` with a blank line after them (before, `first`), or nothing. */
const withBlank = (lines: string[], first = false) =>
  lines.length === 0 ? [] : first ? ['', ...lines] : [...lines, ''];

export function fleetMarkdown(run: ServeRun, a: FleetAnalysis): string {
  const f = run.fleet;
  if (f === undefined) return '';
  const s = run.settings;
  return [
    ...simulatedMarkdown(run.fingerprint),
    `# gpushare bench --serve --fleet ${mdText(run.id)}`,
    '',
    `Fleet ${mdCode(f.file)}: ${f.servers.length} servers of ${new Set(f.servers.map((x) => x.kind)).size} kinds, traffic ${f.source} (seed ${f.seed}), the same ${f.trace.requests} requests in every window of ${s.windowMs / 1000} s (${mdCode(f.trace.file)}), ${s.rounds} windows per mode after a warm-up.`,
    `SLO: TTFT within ${s.sloTtftP99Ms} ms; a server is within it when its attainment's 95% interval lies at or above ${pct(a.target)}, missed when wholly below. Hot: the top fifth by rate (servers ${a.hot.join(', ')}).`,
    '',
    ...ceilingLines(a.ceiling),
    '',
    ...fitLines(f.fit),
    '## Baseline: each kind alone on the GPU, with the arrivals of one of its servers',
    '',
    ...serverRows(a.baseline, memoryOf(run, 'baseline')),
    ...withBlank(memoryNotes(a.baseline, memoryOf(run, 'baseline')), true),
    ...a.baseline
      .filter((b) => b.status !== 'measured')
      .map((b) => `- ${mdText(b.kind)}: ${b.status}${b.reason ? `: ${mdText(b.reason)}` : ''}`),
    '',
    '## Per mode',
    '',
    ...a.modes.flatMap((m) => modeLines(m, memoryOf(run, m.mode), a.ceiling.ratePerS)),
    ...(run.warnings.length > 0 ? ['## Warnings', '', ...run.warnings.map((w) => `- ${mdText(w)}`), ''] : []),
  ].join('\n');
}

export function fleetSummary(run: ServeRun, a: FleetAnalysis): string {
  const lines = [
    ...(isSimulated(run.fingerprint) ? [SIMULATED_TEXT] : []),
    `gpushare bench --serve --fleet ${run.id}: ${run.status}`,
    ...ceilingLines(a.ceiling).map((l) => termText(l.replace(/^- /, ''))),
    ...a.modes.map((m) => {
      const missed = m.servers.filter((s) => s.verdict === 'missed').map((s) => s.label);
      return m.status !== 'measured'
        ? `${m.mode}: ${m.status}${m.reason ? `: ${termText(m.reason)}` : ''}`
        : `${m.mode}: ${m.verdict}; ${m.goodPerS.toFixed(2)} good req/s${missed.length > 0 ? `; missed: ${termText(missed.join(', '))}` : ''}`;
    }),
  ];
  return `${lines.join('\n')}\n`;
}
