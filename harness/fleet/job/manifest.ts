/**
 * The Kubernetes Indexed Job of `gpushare fleet job`: one pod per GPU node (or per GPU) of a pool, each
 * running `gpushare bench` on whole GPUs and handing its run directories back. Pure: a spec in, the
 * manifest out (typed with kubernetes-types, so only fields of the API can be written).
 *
 * The GPU Feature Discovery labels used here are the ones the NVIDIA device plugin writes
 * (NVIDIA/k8s-device-plugin, internal/lm/resource.go `baseLabeler`: `nvidia.com/gpu.product`,
 * `.count`, `.replicas` and `.sharing-strategy`; the strategy values `none`, `mps` and `time-slicing`
 * are `SharingStrategy` in api/config/v1/sharing.go). The strategy is `none` unless a sharing config
 * gives the GPU more than one replica.
 */
import type { Job } from 'kubernetes-types/batch/v1.js';
import type {
  Affinity,
  Container,
  EnvVar,
  NodeSelectorRequirement,
  PodSpec,
  TopologySpreadConstraint,
  Volume,
} from 'kubernetes-types/core/v1.js';
import { commentText } from '../../core/escape/embed.js';
import { yamlText } from '../../core/escape/yaml.js';

/** GFD's label for the device plugin's sharing strategy: none, mps or time-slicing. */
export const SHARING_STRATEGY_LABEL = 'nvidia.com/gpu.sharing-strategy';
/** GFD's label for the replicas each GPU is advertised as (0 or 1: not shared; older plugins lack the strategy label). */
export const REPLICAS_LABEL = 'nvidia.com/gpu.replicas';
/** GFD's product label; the plugin appends -SHARED to it when the shared resource is not renamed. */
export const PRODUCT_LABEL = 'nvidia.com/gpu.product';
export const SHARED_STRATEGIES = ['mps', 'time-slicing'] as const;
export const GPU_RESOURCE = 'nvidia.com/gpu';

/** The lines around each pod's results in its log, and the shell pipeline that unpacks them. */
export const RESULTS_BEGIN = 'gpushare-results-begin';
export const RESULTS_END = 'gpushare-results-end';
/** Reads one pod's log on stdin and unpacks its run directories into fleet-results/ (POSIX awk, base64 and tar). */
export const EXTRACT_PIPELINE = `awk '/^${RESULTS_END}/{f=0} f; /^${RESULTS_BEGIN}/{f=1}' | base64 -d | tar -xzf - -C fleet-results`;

/** Where each pod writes its runs: an emptyDir it prints to the log, or a shared claim. */
export type ResultsSpec = { kind: 'logs' } | { kind: 'pvc'; claimName: string };

export interface FleetJobSpec {
  name: string;
  /** null: the namespace kubectl's context names. */
  namespace: string | null;
  image: string;
  modes: readonly string[];
  /** The pool: nodeSelector labels, equality only. */
  nodeSelector: Record<string, string>;
  /** Nodes in the pool. */
  count: number;
  /** node: one pod holds all of a node's GPUs and benches them with bench --gpus all; gpu: one pod per GPU, in parallel. */
  per: 'node' | 'gpu';
  gpusPerNode: number;
  results: ResultsSpec;
  backoffLimit: number;
  activeDeadlineS: number;
  /** Schedule onto nodes whose device plugin shares GPUs (the pod then gets one share, not a GPU). */
  allowSharedPool: boolean;
  runtimeClass: string | null;
  /** The command line that makes this manifest, for its header. */
  source: string;
}

/** Pods the Job runs: one per node, or one per GPU of every node. */
export function jobPods(spec: Pick<FleetJobSpec, 'per' | 'count' | 'gpusPerNode'>): number {
  return spec.per === 'node' ? spec.count : spec.count * spec.gpusPerNode;
}

/** GPUs each pod requests, and benches. */
export function podGpus(spec: Pick<FleetJobSpec, 'per' | 'gpusPerNode'>): number {
  return spec.per === 'node' ? spec.gpusPerNode : 1;
}

/** The default --active-deadline-s: 30 min to pull the image and start, plus 15 min per GPU a pod benches (one after another, if its cross-GPU check says so). */
export function defaultDeadlineS(spec: Pick<FleetJobSpec, 'per' | 'gpusPerNode'>): number {
  return 1800 + 900 * podGpus(spec);
}

function podLabels(spec: FleetJobSpec): Record<string, string> {
  return { 'app.kubernetes.io/name': 'gpushare', 'app.kubernetes.io/instance': spec.name };
}

/**
 * Nodes whose GPUs the device plugin does not share: strategy `none`, or no strategy label at all and
 * at most one replica (device plugins before the strategy label) or no replicas label (no GFD).
 * Terms are ORed, the expressions of a term ANDed.
 */
function wholeGpuNodeTerms(): Array<{ matchExpressions: NodeSelectorRequirement[] }> {
  const noStrategy: NodeSelectorRequirement = { key: SHARING_STRATEGY_LABEL, operator: 'DoesNotExist' };
  return [
    { matchExpressions: [{ key: SHARING_STRATEGY_LABEL, operator: 'In', values: ['none'] }] },
    { matchExpressions: [noStrategy, { key: REPLICAS_LABEL, operator: 'Lt', values: ['2'] }] },
    { matchExpressions: [noStrategy, { key: REPLICAS_LABEL, operator: 'DoesNotExist' }] },
  ];
}

/** The pod's shell script: bench each GPU, note each exit code, and (logs) print the runs as base64 tar.gz. */
export function podScript(spec: FleetJobSpec): string {
  const gpus = podGpus(spec);
  const bench = (gpuFlag: string) => `gpushare bench --modes ${spec.modes.join(',')}${gpuFlag} --out "/results/$run"`;
  // A retried pod on the same node finds its predecessor's run on the claim: a new directory, the old one kept.
  const retry =
    spec.results.kind === 'pvc'
      ? ['if [ -e "/results/$run" ]; then run="$run-retry-$(date -u +%Y%m%dT%H%M%SZ)"; fi']
      : [];
  const one = (indent: string, gpuFlag: string) =>
    [
      ...retry,
      // The shell is PID 1, which ignores SIGTERM: pass an eviction's or the deadline's SIGTERM on to
      // bench, so it stops its clients and MPS daemon and saves its run, and wait for it to finish.
      `${bench(gpuFlag)} &`,
      'pid=$!',
      'trap \'kill -TERM "$pid" 2>/dev/null\' TERM INT',
      'wait "$pid"',
      'code=$?',
      'if [ "$code" -gt 128 ] && kill -0 "$pid" 2>/dev/null; then wait "$pid"; code=$?; fi',
      'echo "gpushare-bench-exit $run $code"',
      // 1 (a threshold failed) and 3 (inconclusive) are measurements: the run is kept and graded by `fleet report`.
      'case "$code" in 0|1|3) ;; *) status=$code ;; esac',
    ].map((line) => indent + line);
  const lines = [
    'status=0',
    ...(gpus === 1
      ? [`run="$NODE_NAME/${spec.per === 'node' ? 'gpu0' : 'pod$JOB_COMPLETION_INDEX'}"`, ...one('', '')]
      : // Every GPU of the node: a cross-GPU check, then a run per GPU in $NODE_NAME/gpu<i>, beside host.json.
        ['run="$NODE_NAME"', ...one('', ' --gpus all')]),
    ...(spec.results.kind === 'logs'
      ? [
          `echo "${RESULTS_BEGIN} $NODE_NAME-$JOB_COMPLETION_INDEX"`,
          'tar -C /results -czf - . | base64',
          `echo "${RESULTS_END}"`,
        ]
      : []),
    'exit "$status"',
  ];
  return `${lines.join('\n')}\n`;
}

export function fleetJob(spec: FleetJobSpec): Job {
  const labels = podLabels(spec);
  const pods = jobPods(spec);
  const gpus = String(podGpus(spec));
  const env: EnvVar[] = [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }];
  const container: Container = {
    name: 'bench',
    image: spec.image,
    command: ['/bin/sh', '-c', podScript(spec)],
    env,
    resources: {
      // Whole GPUs (extended resources: the request equals the limit). No CPU limit: CFS throttling would show up as latency in the clients measured.
      requests: { [GPU_RESOURCE]: gpus, cpu: '4', memory: '16Gi' },
      limits: { [GPU_RESOURCE]: gpus },
    },
    securityContext: { privileged: false, allowPrivilegeEscalation: false },
    volumeMounts: [
      { name: 'results', mountPath: '/results', ...(spec.results.kind === 'pvc' ? { subPath: spec.name } : {}) },
      { name: 'shm', mountPath: '/dev/shm' },
    ],
  };
  const volumes: Volume[] = [
    spec.results.kind === 'pvc'
      ? { name: 'results', persistentVolumeClaim: { claimName: spec.results.claimName } }
      : { name: 'results', emptyDir: {} },
    { name: 'shm', emptyDir: { medium: 'Memory', sizeLimit: '1Gi' } },
  ];
  const affinity: Affinity = {
    ...(spec.allowSharedPool
      ? {}
      : {
          nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: wholeGpuNodeTerms() } },
        }),
    ...(spec.per === 'node'
      ? {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { labelSelector: { matchLabels: labels }, topologyKey: 'kubernetes.io/hostname' },
            ],
          },
        }
      : {}),
  };
  const spread: TopologySpreadConstraint[] = [
    {
      maxSkew: 1,
      topologyKey: 'kubernetes.io/hostname',
      whenUnsatisfiable: 'ScheduleAnyway',
      labelSelector: { matchLabels: labels },
    },
  ];
  const podSpec: PodSpec = {
    restartPolicy: 'Never',
    // The MPS daemon, its server and its clients all run in this one container: no host IPC namespace needed.
    hostIPC: false,
    ...(spec.runtimeClass ? { runtimeClassName: spec.runtimeClass } : {}),
    nodeSelector: spec.nodeSelector,
    ...(Object.keys(affinity).length > 0 ? { affinity } : {}),
    ...(spec.per === 'gpu' ? { topologySpreadConstraints: spread } : {}),
    tolerations: [{ key: GPU_RESOURCE, operator: 'Exists', effect: 'NoSchedule' }],
    containers: [container],
    volumes,
  };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: spec.name,
      ...(spec.namespace ? { namespace: spec.namespace } : {}),
      labels: { ...labels, 'app.kubernetes.io/managed-by': 'gpushare' },
    },
    spec: {
      completionMode: 'Indexed',
      completions: pods,
      parallelism: pods,
      backoffLimit: spec.backoffLimit,
      activeDeadlineSeconds: spec.activeDeadlineS,
      // A drained or preempted node is not the bench's failure: the pod is replaced without counting.
      podFailurePolicy: {
        rules: [{ action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] }],
      },
      template: { metadata: { labels }, spec: podSpec },
    },
  };
}

/** The one-liner that reads every succeeded pod's runs back out of its log (logs mode), for the header. */
export function collectCommand(spec: Pick<FleetJobSpec, 'name' | 'namespace'>): string {
  const ns = spec.namespace ? ` -n ${spec.namespace}` : '';
  return (
    `mkdir -p fleet-results && for pod in $(kubectl get pods${ns} -l app.kubernetes.io/instance=${spec.name} --field-selector=status.phase=Succeeded -o name); ` +
    `do kubectl logs${ns} "$pod" | ${EXTRACT_PIPELINE}; done`
  );
}

/** Prose as `#` comment lines of at most 110 columns (a word longer than that keeps its own line). */
function comment(text: string): string[] {
  const lines: string[] = [];
  let line = '#';
  for (const word of commentText(text).split(' ').filter(Boolean)) {
    if (line.length + 1 + word.length > 110 && line !== '#') {
      lines.push(line);
      line = '#';
    }
    line += ` ${word}`;
  }
  return [...lines, line];
}

function header(spec: FleetJobSpec): string {
  const pods = jobPods(spec);
  const gpus = podGpus(spec);
  const ns = spec.namespace ? ` -n ${spec.namespace}` : '';
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  const what =
    spec.per === 'node'
      ? `An Indexed Job that runs gpushare bench --modes ${spec.modes.join(',')} on ${plural(spec.count, 'GPU node')}: one pod per node (a required podAntiAffinity on the pod's labels keeps two off one node), ` +
        (gpus > 1
          ? `holding all ${gpus} GPUs of its node (nvidia.com/gpu: ${gpus}) and benching them with gpushare bench --gpus all (a cross-GPU check, then a run per GPU, side by side only where the check shows the GPUs do not disturb each other), so no bench shares the node with another pod.`
          : "holding 1 whole GPU (nvidia.com/gpu: 1). On nodes with more GPUs the others stay free for other pods: give --gpus-per-node <the nodes' GPU count> to hold whole nodes.")
      : `An Indexed Job that runs gpushare bench --modes ${spec.modes.join(',')} on every GPU of ${plural(spec.count, 'node')}: ${pods} pods, one per GPU with 1 whole GPU each (nvidia.com/gpu: 1), ${spec.gpusPerNode} per node, spread over the pool's nodes by a preferred topologySpreadConstraint (ScheduleAnyway: a full node, or a pool larger than --count, does not stall the Job). The benches on one node run at the same time and share its CPUs, PCIe and power.`;
  const sharing = spec.allowSharedPool
    ? `--allow-shared-pool: no affinity on ${SHARING_STRATEGY_LABEL}. On a node whose device plugin shares its GPUs (${SHARING_STRATEGY_LABEL} mps or time-slicing, ${REPLICAS_LABEL} > 1), nvidia.com/gpu: 1 is one replica of a GPU that other pods use too: the bench measures a GPU that is already shared, and the plugin refuses a pod more than 1 replica.`
    : `Whole GPUs only: a node whose device plugin advertises its GPUs as shared replicas (GPU Feature Discovery's ${SHARING_STRATEGY_LABEL} = mps or time-slicing, ${REPLICAS_LABEL} > 1) cannot give a pod a whole GPU through nvidia.com/gpu: a request there gets one replica of a GPU other pods use too, and the bench would measure their sharing, not the modes. So a required nodeAffinity keeps the pods to nodes whose ${SHARING_STRATEGY_LABEL} is none, or that have no such label and ${REPLICAS_LABEL} below 2 or absent (device plugins before the strategy label; clusters without GFD). Labels as NVIDIA/k8s-device-plugin writes them (internal/lm/resource.go, api/config/v1/sharing.go). --allow-shared-pool drops the affinity.`;
  const results =
    spec.results.kind === 'logs'
      ? [
          ...comment(
            `Results in the pod logs (--results logs, the default: it needs no storage class or shared volume and works on any cluster). Each pod prints its run directories as a base64 tar.gz between "${RESULTS_BEGIN}" and "${RESULTS_END}" lines; a run is 0.1-0.5 MB, well inside the kubelet's 10 MiB log rotation. Pods are kept (no ttlSecondsAfterFinished), so their logs can be read until the Job is deleted. To unpack every succeeded pod's runs into fleet-results/:`,
          ),
          `#   ${collectCommand(spec)}`,
        ]
      : comment(
          `Results on the PersistentVolumeClaim ${spec.results.claimName} (--results pvc), under ${spec.name}/ (the mount's subPath). The claim must be ReadWriteMany: pods on ${plural(spec.count, 'node')} write to it at once. A retried pod that finds its run directory taken writes <run>-retry-<time> beside it.`,
        );
  // Every line made comment-safe: the names in it are checked by the options, but a line break must never end a comment.
  return [
    `# gpushare fleet job: ${spec.name}`,
    ...comment(what),
    `# Made by: ${spec.source}`,
    '#',
    `# Apply:   kubectl apply${ns} -f <this file>`,
    `# Watch:   kubectl get pods${ns} -l app.kubernetes.io/instance=${spec.name} -o wide`,
    `# Report:  gpushare fleet report ${spec.results.kind === 'logs' ? 'fleet-results' : `<claim>/${spec.name}`}   (runs: ${spec.per === 'node' ? "<node>/gpu<i>, i the GPU's index in the pod" : "<node>/pod<index>, index the pod's completion index"})`,
    `# Delete:  kubectl delete job${ns} ${spec.name}   (before applying it again: a Job's pod template cannot change)`,
    '#',
    ...comment(sharing),
    '#',
    ...results,
    '#',
    ...comment(
      `A pod succeeds when bench measured: exit 0, 1 (a threshold failed) or 3 (inconclusive), each logged as "gpushare-bench-exit <run> <code>"; the verdicts are graded across nodes by gpushare fleet report. Any other code (2: cannot run here) fails the pod, and the Job replaces it, up to backoffLimit ${spec.backoffLimit} failures in all; evictions and preemptions (DisruptionTarget) are not counted. activeDeadlineSeconds ${spec.activeDeadlineS} bounds the whole Job, pods waiting for a node included.`,
    ),
    '#',
    ...comment(
      "Not privileged: bench changes no GPU setting (no compute mode, clocks or MIG geometry), and starts its own MPS daemon inside the container, where its clients run too, so hostIPC stays false (the host's IPC namespace would only let it meet other pods' MPS daemons). nvidia-smi and nvidia-cuda-mps-control come from the NVIDIA container toolkit's driver mount (the image sets NVIDIA_DRIVER_CAPABILITIES=compute,utility). /dev/shm is a 1 GiB memory volume; CPU is requested but not limited, since CFS throttling would show up as latency in the clients measured.",
    ),
  ]
    .map(commentText)
    .join('\n');
}

export function fleetJobYaml(spec: FleetJobSpec): string {
  // No anchors: every repeated object (the pod labels) is written out where it is used.
  return `${header(spec)}\n${yamlText(fleetJob(spec), { lineWidth: 0, aliasDuplicateObjects: false })}`;
}
