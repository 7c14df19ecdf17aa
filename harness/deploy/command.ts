/** `gpushare artifacts` and `gpushare plan`: production files for a GPU, and the answer to "which mode?". */
import { analyze } from '../bench/analysis/analyze.js';
import { type Measured, measuredFromAnalysis } from '../bench/analysis/which-mode.js';
import type { Run } from '../bench/record/schema.js';
import { loadRun } from '../bench/record/store.js';
import { defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode, UserError } from '../core/errors.js';
import { commentText } from '../core/escape/embed.js';
import { mdFence, mdText } from '../core/escape/markdown.js';
import { argText, termJson, termText } from '../core/escape/terminal.js';
import { TERMINAL_COLUMNS, wrapLine } from '../core/wrap.js';
import { protectionFor, protections } from '../mix/analysis.js';
import { loadMixRun, type MixRun } from '../mix/record.js';
import { openRun } from '../record/evidence.js';
import { notARunOf } from '../record/record-file.js';
import { SIMULATED_TEXT, simulatedJson, simulatedMarkdown } from '../record/simulated.js';
import { analyzeServe, servePlan } from '../serve/analysis.js';
import { serveSummary } from '../serve/markdown.js';
import { loadServeRun, type ServeRun } from '../serve/record.js';
import { gpuAt, isSimulated } from '../system/nvidia/schema.js';
import { adviceText, advise, contextOverhead, type PlanGpu, type PlanRequest } from './advice.js';
import { type ArtifactFile, artifactBundle, type BundleSpec, sharingConfigs } from './bundle.js';
import { defaultSharing } from './default-sharing.js';
import { artifactsDraSpec, draFiles, planDraSpec } from './dra.js';
import { inProcessIndex } from './in-process-index.js';
import { devicePluginConfig, MAX_MPS_REPLICAS, type Operator, pluginMpsLimits } from './k8s.js';
import { standardGeometries } from './mig-parted.js';
import { BUILTIN_MIG_GPUS, builtinMigGpu, migGpuFromRun } from './mig-profiles.js';
import { type ClientCap, capText, mixClientFiles } from './mix-clients.js';
import { ARTIFACTS_FLAGS, PLAN_FLAGS, resolveArtifactsOptions, resolvePlanOptions } from './options.js';
import { writeOutDir } from './out-dir.js';
import { explainText, planScreen } from './plan-screen.js';
import { tritonFiles } from './triton.js';

const MPS_DIRS = { pipeDirectory: '/tmp/nvidia-mps', logDirectory: '/var/log/nvidia-mps' };

export interface ArtifactsOptions {
  out: string;
  run?: string;
  /** A mix run whose protection settings go into the files. */
  mix?: string | undefined;
  gpu?: string;
  replicas: number;
  operator: Operator;
  /** The node's GPUs the MPS scripts serve: every one, or these indices. */
  gpus: number[] | 'all';
  /** --k8s dra: the DRA claims and Job too. */
  dra: boolean;
  /** --force: replace files in --out that gpushare did not write. */
  force: boolean;
}

export interface PlanOptions extends PlanRequest {
  run?: string;
  gpu?: string;
  /** Memory of a --gpu model without a built-in table, GiB. */
  gpuMemGiB: number | null;
  /** Print the advice as JSON instead of text. */
  json: boolean;
  /** Print the arithmetic behind the answer (adviceText) instead of the one-screen answer. */
  explain: boolean;
  out?: string;
  /** A mix run whose protection settings go into the MPS files. */
  mix?: string | undefined;
  operator: Operator;
  gpus: number[] | 'all';
  dra: boolean;
  force: boolean;
}

/** SMs of the built-in GPU models (NVIDIA's data sheets): green contexts split them. */
const BUILTIN_SM_COUNTS: Record<string, number> = {
  'A100-40GB': 108,
  'A100-80GB': 108,
  'H100-80GB': 132,
  'H200-141GB': 132,
};

function builtinGpu(name: string): PlanGpu {
  const table = builtinMigGpu(name);
  if (!table)
    throw new UserError(
      `unknown GPU "${name}" for --gpu-model: choose from ${BUILTIN_MIG_GPUS.map((g) => g.name).join(', ')}, or give --run with a measured run`,
    );
  return { name: table.name, memoryGiB: table.memoryGiB, mig: table, smCount: BUILTIN_SM_COUNTS[table.name] ?? null };
}

/** A GPU for plan: a built-in table, or any model whose memory is given (no MIG table: MIG not assessed). */
function planGpu(name: string, memoryGiB: number | null): PlanGpu {
  if (builtinMigGpu(name) || memoryGiB === null) {
    if (!builtinMigGpu(name)) {
      throw new UserError(
        `unknown GPU "${name}" for --gpu-model: choose from ${BUILTIN_MIG_GPUS.map((g) => g.name).join(', ')}, give its memory with --gpu-mem-gib (time-slicing and MPS need no MIG table), or give --run with a measured run`,
      );
    }
    return builtinGpu(name);
  }
  return { name: commentText(name), memoryGiB, mig: null };
}

/**
 * Why costs measured by `run` may not be this GPU's, or null: the run's GPU does not name the model
 * (`A100` is no word of "NVIDIA H100 80GB HBM3"), or its memory differs from the model's by over 10%.
 * Slowdowns and latencies are the measured GPU's; plan then fits them to another.
 */
export function otherGpuWarning(run: Pick<Run, 'id' | 'fingerprint' | 'config'>, gpu: PlanGpu): string | null {
  const measured = gpuAt(run.fingerprint, run.config.gpuIndex);
  if (!measured) return null;
  const family = gpu.name.split('-')[0] ?? gpu.name;
  const named = new RegExp(
    `(^|[^A-Za-z0-9])${family.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^A-Za-z0-9])`,
    'i',
  ).test(measured.name ?? '');
  const memoryGiB = (measured.memoryTotalMiB ?? 0) / 1024;
  const sameMemory = Math.abs(memoryGiB - gpu.memoryGiB) <= 0.1 * gpu.memoryGiB;
  if (named && sameMemory) return null;
  return `run ${run.id} was measured on ${termText(measured.name ?? 'another GPU')} (${memoryGiB.toFixed(0)} GiB), and the plan is for the ${termText(gpu.name)} (${gpu.memoryGiB.toFixed(0)} GiB): its measured costs (slowdowns, latencies, memory overhead) are that GPU's and may not hold on this one; measure on it (gpushare bench) to plan from its own`;
}

/** 16 TiB: more GPU memory than any GPU has, by far; a larger value is no measurement. */
const MAX_GPU_MEMORY_MIB = 16 * 1024 * 1024;

function runGpu(run: Pick<Run, 'id' | 'fingerprint'>, gpuIndex: number): PlanGpu {
  const gpu = gpuAt(run.fingerprint, gpuIndex);
  if (!gpu) throw new UserError(`run ${run.id} has no GPU ${gpuIndex} in its fingerprint`);
  // The name is free text from run.json: it reaches comments and the index, never a command.
  const python = run.fingerprint.python;
  const where = `run ${run.id}: fingerprint.gpus[${run.fingerprint.gpus.indexOf(gpu)}]`;
  // What plan computes with must be there: a GPU of null, zero or negative memory fits nothing, silently.
  const memoryMiB = gpu.memoryTotalMiB;
  if (memoryMiB === null || !(memoryMiB > 0) || memoryMiB > MAX_GPU_MEMORY_MIB)
    throw new UserError(
      `${where}.memoryTotalMiB is ${memoryMiB}: plan needs the GPU's memory; give --gpu-model (or --gpu-mem-gib) instead of --run`,
    );
  return {
    name: commentText(gpu.name ?? 'GPU'),
    memoryGiB: memoryMiB / 1024,
    mig: migGpuFromRun(gpu, where),
    smCount: python.status === 'ok' ? python.smCount : null,
  };
}

async function writeBundle(
  out: { dir: string; force: boolean },
  files: ArtifactFile[],
  index: string,
  deps: AppDeps,
): Promise<void> {
  await writeOutDir(
    out.dir,
    [
      ...files.map((f) => ({ name: f.name, content: f.content, mode: f.executable ? 0o755 : 0o644 })),
      { name: 'README.md', content: index, mode: 0o644 },
    ],
    out.force,
  );
  deps.err(`wrote ${files.length + 1} files to ${out.dir}\n`);
  // A printed command, not a run: verify needs the GPU node these files are for.
  if (files.some((f) => VERIFIABLE.has(f.name)))
    deps.err(
      `gpushare: check on the GPU node that every limit they declare holds: gpushare verify ${argText(out.dir)}\n`,
    );
}

/** The files `gpushare verify` reads (harness/verify/declared.ts). */
const VERIFIABLE = new Set([
  'gpushare-mps-start.sh',
  'gpushare-mix-client.sh',
  'gpushare-device-plugin-configmap.yaml',
  'gpushare-mig-parted.yaml',
]);

function indexText(title: string, lines: string[], files: ArtifactFile[]): string {
  return [`# ${title}`, '', ...lines, '', ...files.map((f) => `- [\`${f.name}\`](${f.name})`), ''].join('\n');
}

/** The environment of one in-process server of every model, as gpushare's streams and green modes set it. */
function inProcessSettings(mode: 'streams' | 'green', options: PlanOptions, measured: Measured | null): ArtifactFile {
  const m = measured?.[mode];
  const lines = [
    `# gpushare plan: ${options.models} models in one process (${mode === 'green' ? 'green contexts' : 'in-process streams'}).`,
    `# Source this before starting a server built on gpushare_protocol.serve; one tenant per model, one CUDA stream each.`,
    ...(m
      ? [
          `# Measured with ${m.clients} ${commentText(m.workload)} tenants: slowdown ${m.slowdown?.toFixed(2) ?? 'n/a'}x.`,
        ]
      : []),
    `GPUSHARE_TENANTS=${options.models}`,
    ...(mode === 'green' ? [`GPUSHARE_GREEN_SM_PCT=${options.smPct}`] : []),
    '',
  ];
  return { name: 'gpushare-in-process.env', content: lines.join('\n'), executable: false };
}

/** `gpushare artifacts`: flags, options, run. */
export const artifactsCommand = defineCommand({
  flags: ARTIFACTS_FLAGS,
  resolve: resolveArtifactsOptions,
  run: artifacts,
});

/** `gpushare plan`: flags, options, run. */
export const planCommand = defineCommand({ flags: PLAN_FLAGS, resolve: resolvePlanOptions, run: plan });

async function artifacts(options: ArtifactsOptions, deps: AppDeps): Promise<number> {
  const run = options.run ? await loadRun(await openRun(options.run)) : null;
  const mix = options.mix ? await loadMix(await openRun(options.mix)) : null;
  if (!run && !options.gpu && !mix)
    throw new UserError(
      'artifacts needs --run <run-dir> (the GPU it measured), --mix <mix-run-dir> or --gpu-model <model>',
    );
  const gpu = options.gpu
    ? builtinGpu(options.gpu)
    : run
      ? runGpu(run, run.config.gpuIndex)
      : runGpu(mix as MixRun, (mix as MixRun).gpuIndex);
  const source = run
    ? `run ${run.id} on ${gpu.name}`
    : mix
      ? `mix run ${mix.id} on ${gpu.name}`
      : `the built-in table for ${gpu.name}`;
  // The ClusterPolicy default is the mode decision's, between the plugin's two modes; none without a measurement.
  const chosen = defaultSharing(run ? measuredFromAnalysis(run, analyze(run)) : null);
  const spec: BundleSpec = {
    source,
    mps: {
      gpus: options.gpus,
      threadPct: run?.config.mps.threadPct ?? null,
      pinnedMemLimit: run?.config.mps.memLimit ?? null,
      ...MPS_DIRS,
    },
    sharing: sharingConfigs(options.replicas),
    defaultSharing: chosen.mode ? `${chosen.mode === 'mps' ? 'mps' : 'timeslicing'}-${options.replicas}` : null,
    operator: options.operator,
    mig: gpu.mig ? { gpu: gpu.mig, geometries: standardGeometries(gpu.mig) } : null,
  };
  const caps = mix ? mixCaps(mix) : null;
  const files = [
    ...artifactBundle(spec),
    ...(mix && caps ? mixClientFiles(caps, mixSource(mix)) : []),
    ...(options.dra ? draFiles(artifactsDraSpec(source, chosen.mode, spec.mps, options.replicas)) : []),
  ];
  const lines = [
    `Generated by \`gpushare artifacts\` from ${mdText(source)}.`,
    chosen.mode
      ? `The ClusterPolicy default is \`${spec.defaultSharing}\`. ${mdText(chosen.why.replace(/\.?$/, '.'))}`
      : mdText(chosen.why),
    replicasLine(options.replicas, gpu.memoryGiB),
    mpsLimitsLine(spec.mps, run?.id ?? null),
    gpu.mig
      ? `MIG geometries (each checked by the placement solver): ${Object.keys(standardGeometries(gpu.mig)).join(', ')}.`
      : 'No MIG table: no mig-parted config.',
    ...(mix && caps
      ? [
          `From ${mdText(mixSource(mix))}, each MPS client's thread cap (\`gpushare-mix-client.sh\`, \`gpushare-mix-pods.yaml\`): the victim uncapped; ${caps.map((c) => mdText(capText(c))).join('; ')}.`,
        ]
      : []),
  ];
  const simulated = [run, mix].some((r) => r !== null && isSimulated(r.fingerprint));
  const index = indexText(
    `gpushare artifacts for ${mdText(gpu.name)}`,
    [...simulatedMarkdown({ simulated }), ...lines],
    files,
  );
  await writeBundle({ dir: options.out, force: options.force }, files, index, deps);
  return ExitCode.ok;
}

/** What the device-plugin configs are sized by: --replicas, and what the plugin's MPS daemon gives each share. */
function replicasLine(replicas: number, gpuMemoryGiB: number): string {
  const mps = Math.min(replicas, MAX_MPS_REPLICAS);
  const each = pluginMpsLimits(mps, gpuMemoryGiB * 1024);
  return `The device-plugin configs share each GPU ${replicas} ways (\`--replicas\`, 4 unless given): \`timeslicing-${replicas}\` and \`mps-${mps}\`, whose own MPS daemon gives each share ${each.threadPct}% of the SMs and ${each.memLimitMiB} MiB of memory.`;
}

/** The limits the host MPS scripts set, or that they set none: those the run measured MPS with. */
function mpsLimitsLine(mps: BundleSpec['mps'], runId: string | null): string {
  const set = [
    ...(mps.threadPct !== null ? [`the default thread percentage ${mps.threadPct}%`] : []),
    ...(mps.pinnedMemLimit !== null ? [`the pinned memory limit ${mps.pinnedMemLimit}`] : []),
  ];
  const from = runId ? `run ${runId}` : 'no run';
  if (set.length === 2) return `\`gpushare-mps-start.sh\` sets ${set.join(' and ')}, those ${from} measured MPS with.`;
  return `\`gpushare-mps-start.sh\` sets ${set.length > 0 ? `only ${set[0]}` : 'no default thread percentage and no pinned memory limit'}: ${from} measured MPS ${set.length > 0 ? 'with that alone' : 'without them'} (\`gpushare bench --mps-thread-pct\`, \`--mps-mem-limit\`), so the daemon's defaults stand for the rest (every SM, all of the memory).`;
}

/** The mix run in `dir`, or a refusal naming what the directory holds instead. */
async function loadMix(dir: string): Promise<MixRun> {
  return (await loadMixRun(dir)) ?? Promise.reject(await notARunOf(dir, 'mix'));
}

/** Each aggressor's cap from a mix run, with the loads it held at (see protectionFor). */
function mixCaps(mix: MixRun): ClientCap[] {
  const found = protections(mix);
  return mix.settings.aggressors.map((a) => ({ aggressor: a.name, ...protectionFor(found, a.name) }));
}

function mixSource(mix: MixRun): string {
  const p = mix.settings.protect;
  return `mix run ${mix.id} (victim ${mix.settings.victim.name}, p99 within ${p.kind === 'ms' ? `${p.value} ms` : `${p.value}× alone`} at ${mix.settings.loads.map((l) => `${Math.round(l * 100)}%`).join(' and ')} load)`;
}

/**
 * plan --run <server run>: how many copies of that server per GPU, in which mode, from its measured
 * groups (serve/analysis.ts's servePlan); the files --out writes are for protocol workloads.
 */
function planServer(run: ServeRun, options: PlanOptions, deps: AppDeps): number {
  if (options.out)
    throw new UserError(
      `--out writes launchers for models measured by gpushare bench; ${options.run} is a server run: drop --out (its answer is the mode and copies to start your server with)`,
    );
  const analysis = analyzeServe(run);
  const answer = servePlan(run, analysis);
  if (options.json) deps.out(termJson({ ...simulatedJson(run.fingerprint), runId: run.id, ...answer }));
  else deps.out(serveSummary(run, analysis));
  return answer.mode === null ? ExitCode.inconclusive : ExitCode.ok;
}

async function plan(options: PlanOptions, deps: AppDeps): Promise<number> {
  const dir = options.run ? await openRun(options.run) : null;
  const served = dir ? await loadServeRun(dir) : null;
  if (served !== null) return planServer(served, options, deps);
  const run = dir ? await loadRun(dir) : null;
  if (!run && !options.gpu) throw new UserError('plan needs --gpu-model <model> (e.g. A100-80GB) or --run <run-dir>');
  const simulated = run !== null && isSimulated(run.fingerprint);
  if (simulated && options.gpu)
    throw new UserError(
      `cannot plan for a real ${options.gpu} from run ${run.id}: it was made on gpushare's simulator, so its costs say nothing about any GPU; give --run a run measured on a real GPU, or plan from --gpu-model alone`,
    );
  const gpu = options.gpu ? planGpu(options.gpu, options.gpuMemGiB) : runGpu(run as Run, (run as Run).config.gpuIndex);
  const mixed = run && options.gpu ? otherGpuWarning(run, gpu) : null;
  if (mixed !== null) deps.err(`gpushare plan: warning: ${mixed}\n`);
  const request = {
    models: options.models,
    memGiB: options.memGiB,
    smPct: options.smPct,
    sloP99Ms: options.sloP99Ms,
    headroomPct: options.headroomPct,
  };
  const measured = run ? measuredFromAnalysis(run, analyze(run), options.models) : null;
  const advice = advise(request, gpu, measured);
  const text = `${simulated ? `${SIMULATED_TEXT}\n\n` : ''}${adviceText(advice)}`;
  const width = deps.terminal.isTty
    ? Math.min(deps.terminal.columns || TERMINAL_COLUMNS, TERMINAL_COLUMNS)
    : TERMINAL_COLUMNS;
  const screen = options.explain
    ? explainText(text, width)
    : `${simulated ? `${wrapLine(SIMULATED_TEXT, width).join('\n')}\n` : ''}${planScreen(advice, measured, width)}`;
  deps.out(options.json ? termJson(simulated ? { simulated, ...advice } : advice) : screen);
  if (options.out && (advice.recommendation === 'streams' || advice.recommendation === 'green')) {
    const mode = advice.recommendation;
    const server = {
      models: options.models,
      mode,
      source: run ? `run ${run.id} on ${gpu.name}` : `the built-in table for ${gpu.name}`,
      runId: run?.id ?? null,
      measured: measured?.[mode] ?? null,
      needGiB: options.models * options.memGiB + contextOverhead(measured, mode).gib,
      smPct: options.smPct,
    };
    const files = [
      ...tritonFiles(server),
      inProcessSettings(mode, options, measured),
      ...(options.dra
        ? draFiles({ source: `gpushare plan for ${gpu.name}`, models: options.models, kind: 'whole' })
        : []),
    ];
    const index = inProcessIndex(text, server, files);
    await writeBundle({ dir: options.out, force: options.force }, files, index, deps);
  } else if (options.out && advice.recommendation) {
    const source = `gpushare plan (${options.models} models × ${options.memGiB} GiB, ${options.smPct}% SMs) for ${gpu.name}${run ? `, costs from run ${run.id}` : ''}`;
    const mig =
      advice.recommendation === 'mig' && gpu.mig
        ? {
            gpu: gpu.mig,
            geometries: { 'gpushare-plan': advice.assessments.find((a) => a.mode === 'mig')?.geometry ?? {} },
          }
        : null;
    const key = advice.recommendation === 'mps' ? `mps-${options.models}` : `timeslicing-${options.models}`;
    const mix = options.mix && advice.recommendation === 'mps' ? await loadMix(await openRun(options.mix)) : null;
    const bundle = artifactBundle({
      source,
      mps: { gpus: options.gpus, threadPct: advice.mpsThreadPct, pinnedMemLimit: advice.mpsMemLimit, ...MPS_DIRS },
      sharing: {
        [key]: devicePluginConfig(advice.recommendation === 'mps' ? 'mps' : 'timeSlicing', Math.max(2, options.models)),
      },
      // A default only from measurements: without a run nothing says which mode costs less.
      defaultSharing: run ? key : null,
      operator: options.operator,
      mig,
    }).filter((f) => advice.recommendation === 'mps' || !f.name.startsWith('gpushare-mps'));
    const files = [
      ...bundle,
      ...(mix ? mixClientFiles(mixCaps(mix), mixSource(mix)) : []),
      ...(options.dra ? draFiles(planDraSpec(source, options.models, advice, mig)) : []),
    ];
    const pluginNote =
      advice.recommendation === 'mps'
        ? `\nTwo ways to run MPS, with the same limits; use one per node, never both. The device plugin's MPS sharing (\`${key}\` in the ConfigMap) starts its own daemon and splits each GPU evenly between its ${options.models} replicas: ${advice.mpsThreadPct}% of the SMs and ${advice.mpsMemLimit.replace(/M$/, ' MiB')} of memory each. The host scripts start a daemon with those same limits, for nodes whose device plugin does not share with MPS.\n`
        : '';
    await writeBundle(
      { dir: options.out, force: options.force },
      files,
      `# gpushare plan\n\n${mdFence(text)}${pluginNote}\n${files.map((f) => `- [\`${f.name}\`](${f.name})`).join('\n')}\n`,
      deps,
    );
  }
  return ExitCode.ok;
}
