/** plan's answer for a fleet run, rendered: its lines (the terminal, and the README of --out) and --json. */
import { termJson, termText } from '../../core/escape/terminal.js';
import { SIMULATED_TEXT, simulatedJson } from '../../record/simulated.js';
import { CUDA_CONTEXT_MIB, MPS_CAP_CONTEXT_MIB } from '../../system/cuda-context.js';
import { isSimulated } from '../../system/nvidia/schema.js';
import { gib } from '../plan-types.js';
import type { FleetFacts, PlannedServer } from './facts.js';
import { countsPerKind, SIMPLER_FIRST } from './verdicts.js';

const settings = (s: PlannedServer) =>
  [
    `${gib(s.memGiB)} (mem_fraction ${s.memFraction})`,
    ...(s.memLimitMiB !== null ? [`CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=${s.memLimitMiB}M`] : []),
    ...(s.threadPct !== null ? [`CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=${s.threadPct}`] : []),
  ].join(', ');

/** The answer's lines, run text unescaped (each output escapes them its own way). */
export function fleetPlanLines(facts: FleetFacts): string[] {
  const { run, gpu, choice, servers } = facts;
  const slo = `TTFT p99 <= ${facts.sloTtftP99Ms} ms`;
  const kinds = countsPerKind(servers)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  const head = [
    ...(isSimulated(run.fingerprint) ? [SIMULATED_TEXT, ''] : []),
    `gpushare plan: fleet run ${run.id} (${facts.source === 'bench' ? 'bench --serve --fleet' : 'capacity --serve --fleet'}) on ${gpu.name}, ${gib(gpu.memoryMiB / 1024)}`,
    ...facts.modes.map((m) => `  ${m.mode}: ${m.line}`),
  ];
  if (choice === null)
    return [
      ...head,
      `none advised: no mode kept every server within ${slo} (the servers that did not are named above)`,
    ];
  const tie =
    choice.tiedWith.length > 0
      ? ` (${choice.tiedWith.join(', ')} did as well within the intervals: the simpler mode is taken, in the order ${SIMPLER_FIRST.join(' < ')})`
      : '';
  const mps = choice.mode !== 'timeslice';
  return [
    ...head,
    `mode: ${choice.mode}${tie}, every server within ${slo}`,
    `servers per GPU: ${servers.length} (${kinds})`,
    ...servers.map((s) => `  ${s.label} (${s.kind}, ${s.model}): ${settings(s)}`),
    ...(mps
      ? [
          `each MPS memory limit is the server's share plus ${MPS_CAP_CONTEXT_MIB} MiB for its CUDA context (${CUDA_CONTEXT_MIB} MiB) and some to spare; give the engine its mem_fraction as measured`,
          'the fleet run set no pinned-memory limit: check the limits on the node with gpushare verify <the --out directory>',
        ]
      : ['time-slicing limits neither memory nor SMs: each engine keeps to its mem_fraction by its own setting']),
    'commands (as recorded, placeholders unfilled):',
    ...servers.map((s) => `  ${s.label}: ${s.command ?? 'not recorded by this run: see its fleet file'}`),
  ];
}

/** The terminal's answer. */
export function fleetPlanTerminal(facts: FleetFacts): string {
  return `${fleetPlanLines(facts)
    .map((l) => termText(l))
    .join('\n')}\n`;
}

/** --json: the mode, the servers and their settings. */
export function fleetPlanJson(facts: FleetFacts): string {
  return termJson({
    ...simulatedJson(facts.run.fingerprint),
    runId: facts.run.id,
    source: facts.source,
    gpu: facts.gpu,
    sloTtftP99Ms: facts.sloTtftP99Ms,
    mode: facts.choice?.mode ?? null,
    tiedWith: facts.choice?.tiedWith ?? [],
    modes: facts.modes,
    serversPerGpu: facts.choice === null ? null : facts.servers.length,
    perKind: Object.fromEntries(countsPerKind(facts.servers)),
    servers: facts.choice === null ? [] : facts.servers,
  });
}
