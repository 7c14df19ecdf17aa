/** A fleet search's report (`capacity --serve --fleet`): per mode, its steps and the largest fleet at the SLO with its interval. */
import { mdCode, mdText } from '../../core/escape/markdown.js';
import { termText } from '../../core/escape/terminal.js';
import { SIMULATED_TEXT, simulatedMarkdown } from '../../record/simulated.js';
import { MPS_CLIENT_LIMIT } from '../../system/mps/client-limit.js';
import { isSimulated } from '../../system/nvidia/schema.js';
import type { ServeRun } from '../record.js';
import { OVER_CEILING_TEXT } from '../verdicts.js';
import type { FleetAnalysis } from './fleet-analysis.js';
import type { FleetAnswer, FleetCapacityAnalysis, FleetCapacityMode } from './fleet-capacity-analysis.js';
import { fleetMarkdown } from './fleet-markdown.js';

const pct = (v: number | null) => (v === null ? '–' : `${(v * 100).toFixed(1)}%`);
const LIMITS: Record<FleetAnswer['limitedBy'], string> = {
  slo: 'the SLO (a larger fleet failed it)',
  steps: "the search's step limit (no larger fleet failed, none passed)",
  memory: "the GPU's memory (the servers' mem_fraction)",
  'mps clients': `MPS's ${MPS_CLIENT_LIMIT} clients per GPU`,
  'max servers': '--max-servers',
  'size limit': "gpushare's size limit",
};

/** The answer in words: the largest fleet, its interval and what set it. */
export function answerText(a: FleetAnswer): string {
  if (a.servers === null) return 'no fleet size tried kept every server within the SLO';
  const interval = a.interval === null ? '' : `, interval ${a.interval[0]}–${a.interval[1]}`;
  return `${a.servers} servers${interval}, limited by ${LIMITS[a.limitedBy]}${a.unverified ? ` (unverified: ${OVER_CEILING_TEXT}, or no ceiling)` : ''}`;
}

function modeLines(m: FleetCapacityMode): string[] {
  const head = `### ${m.mode}: ${m.status === 'measured' ? answerText(m.answer) : m.status}`;
  return [
    head,
    '',
    ...(m.reason ? [`${m.status}: ${mdText(m.reason)}`, ''] : []),
    `At most ${m.top.servers} servers: ${mdText(m.top.text)}.`,
    '',
    '| step | servers | why | per kind | rate (req/s) | sent (req/s) | generator | worst | hot | cold | verdict | started / stopped / kept | early stop |',
    '|---:|---:|---|---|---:|---:|---|---:|---:|---:|---|---|---|',
    ...m.steps.map(
      (x, i) =>
        `| ${i + 1} | ${x.servers} | ${x.why} | ${x.counts.map((c) => `${mdText(c.kind)} ${c.count}`).join(', ')} | ${x.ratePerS.toFixed(2)} | ${x.sentPerS === null ? '–' : x.sentPerS.toFixed(2)} | ${x.ceiling} | ${pct(x.worst)} | ${pct(x.hot)} | ${pct(x.cold)} | ${x.verdict} | ${x.started} / ${x.stopped} / ${x.kept} | ${x.earlyStop === null ? '' : mdText(x.earlyStop)} |`,
    ),
    '',
  ];
}

export function fleetCapacityMarkdown(run: ServeRun, fleet: FleetAnalysis, a: FleetCapacityAnalysis): string {
  const search = run.fleet?.search;
  const bench = fleetMarkdown(run, { ...fleet, modes: [] })
    .split('\n')
    .filter((line) => !line.startsWith('# gpushare') && line !== '## Per mode');
  return [
    ...simulatedMarkdown(run.fingerprint),
    `# gpushare capacity --serve --fleet ${mdText(run.id)}`,
    '',
    `The largest fleet of the file's kinds (${mdCode(run.fleet?.file ?? '')}, in its proportions, its rate scaled so each server's mean load stays the file's) that keeps every server within the SLO, per mode.`,
    `Search: from the file's size, doubling while every server is within, halving while one is over, then bisecting; an unclear step is measured once more (its verdict over both) and then counts as not passing; once bracketed, the highest passing and the lowest failing sizes are measured ${search?.replicates ?? 0} times more. A step ends early as over when a server's TTFT p50 rises through a window (Mann–Kendall over its five slices) while it completes under 90% of the requests it is sent. Between steps only the servers that changed were started or stopped.`,
    "The answer is the largest size every measurement of which kept every server within; its interval runs to one below the smallest larger size that failed every measurement (sizes between passed some and failed others, or were not measured). Worst, hot and cold: the lowest attainment of all servers, of the hot fifth, of the cold tail. Generator: the step's sent rate against the generator's own ceiling.",
    '',
    '## Per mode',
    '',
    ...a.modes.flatMap(modeLines),
    ...bench.slice(simulatedMarkdown(run.fingerprint).length),
  ].join('\n');
}

export function fleetCapacitySummary(run: ServeRun, a: FleetCapacityAnalysis): string {
  const lines = [
    ...(isSimulated(run.fingerprint) ? [SIMULATED_TEXT] : []),
    `gpushare capacity --serve --fleet ${run.id}: ${run.status}`,
    ...a.modes.map((m) =>
      m.status === 'measured'
        ? `${m.mode}: ${answerText(m.answer)}`
        : `${m.mode}: ${m.status}${m.reason ? `: ${termText(m.reason)}` : ''}`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}
