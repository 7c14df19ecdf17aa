/**
 * The files `plan --out` writes for its recommendation, and their README: a Triton repository and the
 * in-process settings for in-process streams or green contexts; the MPS scripts, device-plugin configs
 * and mig-parted geometry for the others (with a mix run's caps and the DRA files where asked).
 */

import type { Measured } from '../bench/analysis/which-mode.js';
import { commentText } from '../core/escape/embed.js';
import { mdFence } from '../core/escape/markdown.js';
import { openRun } from '../record/evidence.js';
import { type ArtifactFile, artifactBundle } from './bundle.js';
import { draFiles, planDraSpec } from './dra.js';
import { inProcessIndex } from './in-process-index.js';
import { devicePluginConfig } from './k8s.js';
import { mixClientFiles } from './mix-clients.js';
import { loadMix, mixCaps, mixSource } from './mix-protection.js';
import type { PlanOptions } from './options.js';
import type { ModelFacts } from './plan-sources.js';
import type { PlanAdvice } from './plan-types.js';
import { tritonFiles } from './triton.js';
import { contextOverhead } from './verdicts.js';
import { MPS_DIRS } from './write-bundle.js';

/** What --out writes: the files and the README that lists them. */
export interface PlanBundle {
  files: ArtifactFile[];
  index: string;
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

/** In-process streams or green contexts: one server of every model, its Triton repository and settings. */
function inProcessBundle(
  mode: 'streams' | 'green',
  facts: ModelFacts,
  options: PlanOptions,
  planText: string,
): PlanBundle {
  const { run, gpu, measured } = facts;
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
  return { files, index: inProcessIndex(planText, server, files) };
}

/** Time-slicing, MPS or MIG: the host scripts, device-plugin config and geometry for the recommendation. */
async function sharingBundle(
  mode: 'timeslice' | 'mps' | 'mig',
  advice: PlanAdvice,
  facts: ModelFacts,
  options: PlanOptions,
  planText: string,
): Promise<PlanBundle> {
  const { run, gpu } = facts;
  const source = `gpushare plan (${options.models} models × ${options.memGiB} GiB, ${options.smPct}% SMs) for ${gpu.name}${run ? `, costs from run ${run.id}` : ''}`;
  const mig =
    mode === 'mig' && gpu.mig
      ? {
          gpu: gpu.mig,
          geometries: { 'gpushare-plan': advice.assessments.find((a) => a.mode === 'mig')?.geometry ?? {} },
        }
      : null;
  const key = mode === 'mps' ? `mps-${options.models}` : `timeslicing-${options.models}`;
  // The mix run is read only for an MPS recommendation, after the answer is printed.
  const mix = options.mix && mode === 'mps' ? await loadMix(await openRun(options.mix)) : null;
  const bundle = artifactBundle({
    source,
    mps: { gpus: options.gpus, threadPct: advice.mpsThreadPct, pinnedMemLimit: advice.mpsMemLimit, ...MPS_DIRS },
    sharing: {
      [key]: devicePluginConfig(mode === 'mps' ? 'mps' : 'timeSlicing', Math.max(2, options.models)),
    },
    // A default only from measurements: without a run nothing says which mode costs less.
    defaultSharing: run ? key : null,
    operator: options.operator,
    mig,
  }).filter((f) => mode === 'mps' || !f.name.startsWith('gpushare-mps'));
  const files = [
    ...bundle,
    ...(mix ? mixClientFiles(mixCaps(mix), mixSource(mix)) : []),
    ...(options.dra ? draFiles(planDraSpec(source, options.models, advice, mig)) : []),
  ];
  const pluginNote =
    mode === 'mps'
      ? `\nTwo ways to run MPS, with the same limits; use one per node, never both. The device plugin's MPS sharing (\`${key}\` in the ConfigMap) starts its own daemon and splits each GPU evenly between its ${options.models} replicas: ${advice.mpsThreadPct}% of the SMs and ${advice.mpsMemLimit.replace(/M$/, ' MiB')} of memory each. The host scripts start a daemon with those same limits, for nodes whose device plugin does not share with MPS.\n`
      : '';
  return {
    files,
    index: `# gpushare plan\n\n${mdFence(planText)}${pluginNote}\n${files.map((f) => `- [\`${f.name}\`](${f.name})`).join('\n')}\n`,
  };
}

/** The files for the recommendation, or null where there is none (nothing fits: nothing to deploy). */
export async function planBundle(
  advice: PlanAdvice,
  facts: ModelFacts,
  options: PlanOptions,
  planText: string,
): Promise<PlanBundle | null> {
  const mode = advice.recommendation;
  if (mode === null) return null;
  if (mode === 'streams' || mode === 'green') return inProcessBundle(mode, facts, options, planText);
  return sharingBundle(mode, advice, facts, options, planText);
}
