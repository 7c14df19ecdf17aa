/**
 * `gpushare fleet job --slurm`: the Kubernetes Job's per-node run and merge as an `sbatch --array`
 * script, for sites that schedule GPUs with Slurm. Each array task benches one node's GPUs (or one
 * GPU, --per gpu) with the same bench command and exit-code handling as the Job's pods, writes its
 * run under a shared results directory named by node, and `gpushare fleet report` merges them.
 */

import { UserError } from '../../core/errors.js';
import { commentText } from '../../core/escape/embed.js';
import { argText } from '../../core/escape/terminal.js';
import { defaultDeadlineS } from './manifest.js';

export interface SlurmSpec {
  name: string;
  modes: readonly string[];
  count: number;
  per: 'node' | 'gpu';
  gpusPerNode: number;
  /** Seconds each array task may run (#SBATCH --time). */
  timeLimitS: number;
  partition: string | null;
  constraint: string | null;
  /** Where the runs go: relative paths are under the directory sbatch was run from. */
  resultsDir: string;
  source: string;
}

/** Slurm partition names and feature constraints (features joined by & | , with brackets and counts). */
const PARTITION = /^[A-Za-z0-9_.-]{1,64}$/;
const CONSTRAINT = /^[A-Za-z0-9_.&|,[\]*:-]{1,256}$/;
/** A path written into the script inside double quotes: no quote, $, backquote, backslash or space. */
const SAFE_PATH = /^[A-Za-z0-9_./+-]{1,1024}$/;

export function checkPartition(value: string): string {
  if (!PARTITION.test(value))
    throw new UserError(
      `--partition ${argText(value)}: needs a Slurm partition name (letters, digits, "_", "." and "-"), e.g. gpu`,
    );
  return value;
}

export function checkConstraint(value: string): string {
  if (!CONSTRAINT.test(value))
    throw new UserError(
      `--constraint ${argText(value)}: needs Slurm node features joined by & or |, e.g. h100 or "h100&ib"`,
    );
  return value;
}

export function checkResultsDir(value: string): string {
  if (!SAFE_PATH.test(value) || value.split('/').includes('..'))
    throw new UserError(
      `--results-dir ${argText(value)}: needs a path of letters, digits, "_", ".", "+", "-" and "/" (no "..", spaces or quotes), e.g. gpushare-fleet-results`,
    );
  return value;
}

/** The default time limit of one task: as the Job's deadline, 30 min to start plus 15 min per GPU benched. */
export function defaultTimeLimitS(spec: Pick<SlurmSpec, 'per' | 'gpusPerNode'>): number {
  return defaultDeadlineS(spec);
}

const hms = (s: number) =>
  `${Math.floor(s / 3600)}:${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;

/** Array tasks: one per node, or one per GPU of every node. */
export function slurmTasks(spec: Pick<SlurmSpec, 'per' | 'count' | 'gpusPerNode'>): number {
  return spec.per === 'node' ? spec.count : spec.count * spec.gpusPerNode;
}

export function slurmScript(spec: SlurmSpec): string {
  const tasks = slurmTasks(spec);
  const gpus = spec.per === 'node' ? spec.gpusPerNode : 1;
  const results = spec.resultsDir.startsWith('/') ? spec.resultsDir : `$SLURM_SUBMIT_DIR/${spec.resultsDir}`;
  const comment = (text: string) => `# ${commentText(text)}`;
  const header = [
    '#!/bin/bash',
    comment(`gpushare fleet job --slurm: ${spec.name}, ${tasks} array task(s)`),
    comment(`Made by: ${spec.source}`),
    comment(
      spec.per === 'node'
        ? `One task per GPU node: each holds the whole node (--exclusive, all ${gpus} GPU(s)) and runs gpushare bench --modes ${spec.modes.join(',')}${gpus > 1 ? ' --gpus all (a cross-GPU check, then a run per GPU)' : ''}, as the Kubernetes Job's pods do.`
        : `One task per GPU: ${spec.gpusPerNode} per node, each with 1 GPU; benches on one node run at the same time and share its CPUs, PCIe and power.`,
    ),
    comment(
      'Slurm places array tasks itself: --exclusive keeps two tasks off one node at once, but one node can take two tasks in turn; each run is named by its node, so fleet report shows which nodes were measured.',
    ),
    comment('Submit:  sbatch <this file>   (from the directory the results go under)'),
    comment(
      `Report:  gpushare fleet report ${spec.resultsDir}   (after the last task; or submit it with --dependency=afterany:<job id>)`,
    ),
    comment(
      'A task succeeds when bench measured: exit 0, 1 (a threshold failed) or 3 (inconclusive), logged as "gpushare-bench-exit <run> <code>"; any other code fails the task. GPUSHARE names the gpushare command (default: gpushare on PATH).',
    ),
    `#SBATCH --job-name=${spec.name}`,
    `#SBATCH --array=0-${tasks - 1}`,
    '#SBATCH --nodes=1',
    '#SBATCH --ntasks=1',
    `#SBATCH --gres=gpu:${gpus}`,
    ...(spec.per === 'node' ? ['#SBATCH --exclusive'] : []),
    `#SBATCH --time=${hms(spec.timeLimitS)}`,
    `#SBATCH --output=${spec.name}-%A_%a.out`,
    ...(spec.partition ? [`#SBATCH --partition=${spec.partition}`] : []),
    ...(spec.constraint ? [`#SBATCH --constraint=${spec.constraint}`] : []),
  ];
  const run =
    spec.per === 'node'
      ? gpus > 1
        ? '$results/$node'
        : '$results/$node/gpu0'
      : '$results/$node/task$SLURM_ARRAY_TASK_ID';
  const body = [
    'set -u',
    `results="${results}"`,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
    'node="${SLURMD_NODENAME:-$(hostname -s)}"',
    `run="${run}"`,
    // A task on a node another task already benched (or a requeued one) keeps the earlier run beside it.
    'if [ -e "$run" ]; then run="$run-retry-$(date -u +%Y%m%dT%H%M%SZ)"; fi',
    'mkdir -p "$(dirname "$run")"',
    'status=0',
    // Slurm's scancel and time limit send SIGTERM: pass it on to bench, so it stops its clients and MPS daemon and saves its run.
    `"\${GPUSHARE:-gpushare}" bench --modes ${spec.modes.join(',')}${gpus > 1 ? ' --gpus all' : ''} --out "$run" &`,
    'pid=$!',
    'trap \'kill -TERM "$pid" 2>/dev/null\' TERM INT',
    'wait "$pid"',
    'code=$?',
    'if [ "$code" -gt 128 ] && kill -0 "$pid" 2>/dev/null; then wait "$pid"; code=$?; fi',
    'echo "gpushare-bench-exit $run $code"',
    'case "$code" in 0|1|3) ;; *) status=$code ;; esac',
    'exit "$status"',
  ];
  return `${[...header, '', ...body].join('\n')}\n`;
}
