/** A server run as text: the console summary and report.md, both from the one analysis. */
import { mdCode, mdText } from '../core/escape/markdown.js';
import { termText } from '../core/escape/terminal.js';
import { SIMULATED_TEXT, simulatedMarkdown } from '../record/simulated.js';
import { requestsNeeded } from '../stats/p99.js';
import { isSimulated } from '../system/nvidia/schema.js';
import {
  type Estimate,
  type GroupAnalysis,
  RATIOS,
  type RatioName,
  type ServeAnalysis,
  serveAnswer,
} from './analysis.js';
import { type LatencyName, pooledLines } from './pooled.js';
import type { ServeRun } from './record.js';
import { unverifiedCapacities } from './sent-rate.js';
import { sloText } from './steps.js';
import { unverifiedText } from './verdicts.js';
import { warmupLines, warmupText } from './warmup.js';

const RATIO_LABEL: Record<RatioName, string> = {
  throughput: 'throughput (% of dedicated)',
  ttftP50: 'TTFT p50 ×',
  ttftP99: 'TTFT p99 ×',
  itlP50: 'ITL p50 ×',
  itlP99: 'ITL p99 ×',
  e2eP50: 'e2e p50 ×',
  e2eP99: 'e2e p99 ×',
  goodput: 'goodput ×',
};

const num = (v: number | null | undefined, digits = 2) => (v == null || !Number.isFinite(v) ? '–' : v.toFixed(digits));

/** "0.84 [0.80, 0.88]", or as a percentage; "of 5 rounds" where rounds had no value. */
export function estimateText(e: Estimate | null | undefined, percent = false, rounds = e?.n ?? 0): string {
  if (!e || e.value === null) return '–';
  const f = (v: number) => (percent ? `${(v * 100).toFixed(0)}%` : v.toFixed(2));
  const of = e.n < rounds ? ` (${e.n} of ${rounds} rounds)` : '';
  return e.ci
    ? `${f(e.value)} [${f(e.ci[0])}, ${f(e.ci[1])}]${of}`
    : `${f(e.value)} (no CI: ${e.n} of ${rounds} rounds)`;
}

const groupName = (g: Pick<GroupAnalysis, 'mode' | 'copies'>) => `${g.mode} ×${g.copies}`;

const inputText = (s: ServeRun['settings']) =>
  s.inputTokensMax != null ? `${s.inputTokens}–${s.inputTokensMax} (uniform)` : String(s.inputTokens);

function setup(run: ServeRun): string[] {
  const s = run.settings;
  const gpu = run.fingerprint.gpus.find((g) => g.index === run.gpuIndex);
  return [
    `- Run ${mdCode(run.id)} (${run.status}), ${mdText(gpu?.name ?? 'GPU')}, driver ${mdText(run.fingerprint.driverVersion ?? '?')}, ${mdText(run.createdAt)}`,
    `- Server: ${mdCode(s.serve)} (${s.api}, ready at ${mdText(s.readyPath)})`,
    s.measure === 'bench'
      ? `- Load: closed loop, ${s.concurrency} requests resident per shared copy; the dedicated copy (a plain process, the only one loaded while it is measured, resident beside the group's idle copies, {mem_fraction} 0.45 against 0.45 ÷ copies each) carries copies × ${s.concurrency}. Prompts of ${inputText(s)} words, each made unique; ${s.outputTokens} output tokens; ${s.windowMs / 1000} s windows (throughput counts tokens that arrived within them), ${warmupText(s)}, then ${s.rounds} ABBA rounds per group. Latencies are of requests that ended ok.`
      : `- Load: open-loop Poisson, the total rate split evenly over the copies, each step long enough for the 473 requests a p99 claim needs (${s.windowMs / 1000}–${s.maxStepMs / 1000} s); ${inputText(s)} input words, ${s.outputTokens} output tokens.`,
    `- SLO: TTFT p99 ≤ ${s.sloTtftP99Ms} ms${s.sloItlMaxMs !== null ? `, every ITL ≤ ${s.sloItlMaxMs} ms for goodput` : ''}. Servers on CPUs ${mdText(s.serverCpus ?? '(not pinned)')}, the load generator on ${s.generatorCpus ?? s.generatorCpu ?? '(not pinned)'}${s.loadWorkers !== undefined ? ` (${s.loadWorkers} worker processes)` : ''}; host ${run.host.cpus} CPUs (${mdText(run.host.cpuModel ?? '?')}).`,
  ];
}

/** The sweep's rates below the first within, where the null servers were over the allowance: not a ceiling, but said. */
function slowBelow(c: ServeAnalysis['ceiling']): string {
  const below = c.steps.filter((s) => c.fromPerS !== null && s.requestsPerS < c.fromPerS);
  if (below.length === 0) return '';
  const rates = below.map((s) => `${num(s.e2eP50Ms, 3)} ms at ${num(s.requestsPerS, 0)} req/s`).join(', ');
  return ` Below ${num(c.fromPerS, 0)} req/s the null servers' e2e p50 was over it (${rates}): at those rates the generator and loopback add more than 1%, and windows sending them are not flagged.`;
}

/** The generator's ceiling in the report's words: bench's copies and fleets alike. */
export function ceilingLines(c: ServeAnalysis['ceiling']): string[] {
  if (c.steps.length === 0)
    return ["- The generator's ceiling was not measured: no window of this run is checked against it."];
  const top = c.steps.at(-1);
  const ttft =
    c.ttftAddedMs !== null
      ? ` There it adds ${num(c.ttftAddedMs, 3)} ms to TTFT (p99)${c.ttftShare !== null ? `, ${num(c.ttftShare * 100, 1)}% of this run's lowest TTFT p50` : ''}.`
      : '';
  return [
    c.ratePerS !== null
      ? `- Load generator ceiling on this host: ${c.atLeast ? 'at least ' : ''}${num(c.ratePerS, 0)} requests/s, ${num(c.tokensPerS, 0)} output tokens/s with under 1% added latency (null-server e2e p50 and send lag p99 ≤ ${num(c.allowedMs, 3)} ms, 1% of this run's lowest e2e p50).${ttft}${slowBelow(c)}`
      : `- Load generator ceiling: no null-server rate stayed within 1% of this run's e2e p50 (${num(c.allowedMs, 3)} ms allowed): no window is verified against it.`,
    `- Null server up to ${top?.ratePerS} req/s: e2e p50 ${num(top?.e2eP50Ms, 3)} ms, p99 ${num(top?.e2eP99Ms, 3)} ms, send lag p99 ${num(top?.lagP99Ms, 3)} ms, the generator busy ${num((top?.cpuShare ?? 0) * 100, 0)}% of one core.`,
  ];
}

export function serveMarkdown(run: ServeRun, analysis: ServeAnalysis, version: string): string {
  const plan = serveAnswer(run, analysis);
  const lines = [
    ...simulatedMarkdown(run.fingerprint),
    `# Server run ${mdText(run.id)}`,
    '',
    ...setup(run),
    ...ceilingLines(analysis.ceiling),
    '',
    `**Plan:** ${plan.answer}.`,
    '',
  ];
  const measured = analysis.groups.filter((g) => g.status === 'measured');
  if (run.settings.measure === 'bench') {
    lines.push(
      '## Shared ÷ dedicated at equal requests resident per GPU',
      '',
      'Each cell: the median of the per-round ratios [95% CI of that median: the round-to-round spread of this run only].',
      '',
      `| group | tokens/s per GPU | ${RATIOS.map((r) => RATIO_LABEL[r]).join(' | ')} | TTFT p99 SLO |${run.settings.gpuHourUsd !== null ? ' $ per 1M tokens (shared / dedicated) |' : ''}`,
      `|---|---|${RATIOS.map(() => '---').join('|')}|---|${run.settings.gpuHourUsd !== null ? '---|' : ''}`,
    );
    for (const g of measured)
      lines.push(
        `| ${groupName(g)} | ${estimateText(g.tokensPerS)} | ${RATIOS.map((r) => `${estimateText(g.ratios?.[r], r === 'throughput', g.rounds)}${thinMark(g, r)}`).join(' | ')} | ${sloText(g.slo)} (${g.slo?.over ?? 0}/${g.slo?.requests ?? 0} over) |${g.costPer1M ? ` ${num(g.costPer1M.shared)} / ${num(g.costPer1M.dedicated)} |` : ''}`,
      );
    lines.push(...pooledSection(measured), ...warmupSection(run));
  } else {
    lines.push(
      `## Capacity at TTFT p99 ≤ ${run.settings.sloTtftP99Ms} ms`,
      '',
      '| group | req/s at the SLO | first failing req/s | output tokens/s there | steps |',
      '|---|---|---|---|---|',
    );
    for (const g of measured)
      lines.push(
        `| ${groupName(g)} | ${num(g.capacity?.ratePerS, 1)}${g.capacity?.unverified ? ` (unverified: ${unverifiedText(analysis.ceiling.ratePerS)})` : ''} | ${num(g.capacity?.failedAtPerS, 1)} | ${num(g.capacity?.tokensPerS, 0)} | ${run.groups.find((x) => x.mode === g.mode && x.copies === g.copies)?.steps.length ?? 0} |`,
      );
  }
  if (run.settings.measure === 'capacity') lines.push(...warmupSection(run));
  const other = analysis.groups.filter((g) => g.status !== 'measured');
  if (other.length > 0)
    lines.push(
      '',
      '## Not measured',
      '',
      ...other.map((g) => `- ${groupName(g)}: ${g.status}${g.reason ? `: ${mdText(g.reason)}` : ''}`),
    );
  const flagged = measured.filter((g) => g.failedRequests > 0 || g.overCeiling > 0 || g.generatorBusy > 0);
  const unverified = unverifiedCapacities(measured, analysis.ceiling.ratePerS);
  if (flagged.length > 0 || run.warnings.length > 0 || unverified.length > 0)
    lines.push(
      '',
      '## Warnings',
      '',
      ...flagged.map(
        (g) =>
          `- ${groupName(g)}: ${g.failedRequests} failed requests; ${g.overCeiling} windows over the generator's ceiling or unverified; ${g.generatorBusy} with the generator over half a core busy`,
      ),
      ...unverified.map((line) => `- ${mdText(line)}`),
      ...run.warnings.map((w) => `- ${mdText(w)}`),
    );
  lines.push('', `gpushare ${version}`, '');
  return lines.join('\n');
}

/** " †" on a p99 ratio where some round's window held too few values for its own p99. */
function thinMark(g: GroupAnalysis, r: RatioName): string {
  const name = THIN_OF[r];
  return name !== undefined && (g.percentiles?.thinRounds[name] ?? 0) > 0
    ? ` † ${g.percentiles?.thinRounds[name]} of ${g.rounds}`
    : '';
}
const THIN_OF: Partial<Record<RatioName, LatencyName>> = { ttftP99: 'ttft', itlP99: 'itl', e2eP99: 'e2e' };

function pooledSection(measured: GroupAnalysis[]): string[] {
  const lines = pooledLines(measured);
  if (lines.length === 0) return [];
  return [
    '',
    `† A p99 ratio marked "† k of n": in k of its n rounds a window held fewer than ${requestsNeeded(0)} values, too few for its p99 to be claimed from it alone (stats/p99.ts: even the slowest is then no 95% bound); the ratio of those per-round p99s stays the estimate, and the p99s themselves are claimed pooled below.`,
    '',
    '## p99 over every round (pooled)',
    '',
    "Each arm's windows of all rounds merged; [the order-statistic interval of the p99, each bound at 97.5%; none where too few values give it] and the values it rests on.",
    '',
    ...lines,
  ];
}

function warmupSection(run: ServeRun): string[] {
  const lines = warmupLines(run.groups);
  return lines.length === 0 ? [] : ['', '## Warm-up', '', ...lines];
}

/** The console summary: one line per group, then the plan. */
export function serveSummary(run: ServeRun, analysis: ServeAnalysis): string {
  const lines = [
    ...(isSimulated(run.fingerprint) ? [SIMULATED_TEXT] : []),
    `gpushare ${run.settings.measure} --serve ${run.id}: ${run.status}`,
    ...ceilingLines(analysis.ceiling).map((l) => l.replace(/^- /, '')),
  ];
  for (const g of analysis.groups) {
    if (g.status !== 'measured') {
      lines.push(`${groupName(g)}: ${g.status}${g.reason ? `: ${termText(g.reason)}` : ''}`);
      continue;
    }
    lines.push(
      run.settings.measure === 'bench'
        ? `${groupName(g)}: ${estimateText(g.ratios?.throughput, true)} of dedicated throughput, ${num(g.tokensPerS?.value, 0)} tok/s per GPU; TTFT p99 × ${estimateText(g.ratios?.ttftP99)}; SLO ${sloText(g.slo)}`
        : `${groupName(g)}: ${num(g.capacity?.ratePerS, 1)} req/s at the SLO (failed at ${num(g.capacity?.failedAtPerS, 1)})`,
    );
  }
  lines.push(`plan: ${serveAnswer(run, analysis).answer}`);
  return `${lines.join('\n')}\n`;
}
