/**
 * The Kubernetes DRA path (`gpushare artifacts --k8s dra`, `plan --k8s dra`): resource.k8s.io/v1
 * ResourceClaims and ResourceClaimTemplates for NVIDIA's DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu,
 * formerly NVIDIA/k8s-dra-driver-gpu), its GpuConfig sharing settings (api/nvidia.com/resource/v1beta1,
 * sharing.go: strategy TimeSlicing with timeSlicingConfig.interval, or MPS with
 * mpsConfig.defaultActiveThreadPercentage and defaultPinnedDeviceMemoryLimit), the consumable-shares
 * form for time-slicing, and a Job whose pods request a claim instead of nvidia.com/gpu. Pure: text out.
 *
 * A ResourceClaimTemplate gives every pod a claim (a device) of its own; pods share a device only by
 * naming one ResourceClaim (the driver's "user-mediated sharing"), or through consumable shares
 * ("system-mediated": independent claims on one device, scheduling accounting only, no MPS).
 */
import { checked, commentText, MEM_LIMIT } from '../core/escape/embed.js';
import { yamlText } from '../core/escape/yaml.js';
import type { ArtifactFile } from './bundle.js';

export const DRA_DRIVER = 'gpu.nvidia.com';
export const GPU_DEVICE_CLASS = 'gpu.nvidia.com';
export const MIG_DEVICE_CLASS = 'mig.nvidia.com';
export const GPU_CONFIG_API = 'resource.nvidia.com/v1beta1';
export const SHARED_CLAIM = 'gpushare-shared-gpu';

/** What the DRA files are for: the recommendation and its settings. */
export type DraSpec = {
  source: string;
  /** Pods of the Job: one per model. */
  models: number;
} & (
  | { kind: 'mps'; threadPct: number | null; pinnedMemLimit: string | null }
  | { kind: 'timeslice'; interval: 'Default' | 'Short' | 'Medium' | 'Long' }
  | { kind: 'mig'; profile: string }
  /** One process serves every model (streams, green contexts), or a GPU each: a whole GPU per claim. */
  | { kind: 'whole' }
);

/** "20377M" (MPS: MiB) as a Kubernetes quantity, "20377Mi"; the driver turns it back into MiB. */
export function quantity(limit: string): string {
  const safe = checked(limit, (x) => MEM_LIMIT.test(x), 'the MPS memory limit', 'a size such as 4G, 512M or 1024K');
  return `${safe.slice(0, -1)}${safe.slice(-1)}i`;
}

function gpuConfig(spec: DraSpec): Record<string, unknown> | null {
  if (spec.kind === 'mps')
    return {
      apiVersion: GPU_CONFIG_API,
      kind: 'GpuConfig',
      sharing: {
        strategy: 'MPS',
        mpsConfig: {
          ...(spec.threadPct !== null ? { defaultActiveThreadPercentage: spec.threadPct } : {}),
          ...(spec.pinnedMemLimit !== null ? { defaultPinnedDeviceMemoryLimit: quantity(spec.pinnedMemLimit) } : {}),
        },
      },
    };
  if (spec.kind === 'timeslice')
    return {
      apiVersion: GPU_CONFIG_API,
      kind: 'GpuConfig',
      sharing: { strategy: 'TimeSlicing', timeSlicingConfig: { interval: spec.interval } },
    };
  return null;
}

/** The claim's spec: one device of the class the recommendation needs, with its sharing config. */
export function claimSpec(spec: DraSpec): Record<string, unknown> {
  const profile =
    spec.kind === 'mig'
      ? checked(spec.profile, (p) => /^[0-9]+g\.[0-9]+gb(\+[a-z]+)?$/.test(p), 'the MIG profile', 'such as 3g.40gb')
      : null;
  const config = gpuConfig(spec);
  return {
    devices: {
      requests: [
        {
          name: 'gpu',
          exactly: {
            deviceClassName: spec.kind === 'mig' ? MIG_DEVICE_CLASS : GPU_DEVICE_CLASS,
            ...(profile !== null
              ? { selectors: [{ cel: { expression: `device.attributes['${DRA_DRIVER}'].profile == '${profile}'` } }] }
              : {}),
          },
        },
      ],
      ...(config !== null
        ? { config: [{ requests: ['gpu'], opaque: { driver: DRA_DRIVER, parameters: config } }] }
        : {}),
    },
  };
}

/** A fresh object each time: a shared one would be written as a YAML anchor and alias. */
const meta = () => ({ labels: { 'app.kubernetes.io/managed-by': 'gpushare' } });

/** The Job: one pod per model, each requesting the claim (shared) or a claim of its own (template). */
/** Not kubernetes-types' Job: its PodResourceClaim is the 1.30 shape (source.resourceClaimName), gone in 1.31. */
export function claimJob(spec: DraSpec, shared: boolean): Record<string, unknown> {
  const pods = spec.kind === 'whole' ? 1 : Math.max(1, spec.models);
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'gpushare-dra-models', ...meta() },
    spec: {
      completionMode: 'Indexed',
      completions: pods,
      parallelism: pods,
      backoffLimit: 0,
      template: {
        metadata: meta(),
        spec: {
          restartPolicy: 'Never',
          resourceClaims: [
            shared
              ? { name: 'gpu', resourceClaimName: SHARED_CLAIM }
              : { name: 'gpu', resourceClaimTemplateName: 'gpushare-gpu' },
          ],
          containers: [
            {
              name: 'model',
              image: 'nvcr.io/nvidia/cuda:13.0.0-base-ubuntu24.04',
              command: ['nvidia-smi', '-L'],
              // A claim instead of nvidia.com/gpu: the DRA driver, not the device plugin, gives the device.
              resources: { claims: [{ name: 'gpu' }] },
            },
          ],
        },
      },
    },
  };
}

/** The DRA files for `spec`: claims, the consumable-shares form where it applies, and the Job. */
export function draFiles(spec: DraSpec): ArtifactFile[] {
  const note = `# Generated by gpushare from ${commentText(spec.source)}.`;
  const shared = spec.kind === 'mps' || spec.kind === 'timeslice';
  const gates =
    spec.kind === 'mps'
      ? 'the DRA driver with featureGates.MPSSupport=true (alpha; not with DynamicMIG or ConsumableShares)'
      : spec.kind === 'timeslice'
        ? 'the DRA driver with featureGates.TimeSlicingSettings=true (alpha) for a non-default interval'
        : 'the DRA driver (no feature gate: whole GPUs and existing MIG devices are GA)';
  const claims = [
    note,
    `# Needs Kubernetes 1.34+ (resource.k8s.io/v1) and ${gates}; docs/verify.md#dra has the table.`,
    ...(shared
      ? [
          `# ${SHARED_CLAIM}: one ResourceClaim that every model's pod names (resourceClaimName), so they share one GPU with`,
          '# the config below; all of them must be in its namespace. The template gives each pod a GPU of its own with the',
          '# same config: for one pod whose containers share it.',
          '---',
          yamlText({
            apiVersion: 'resource.k8s.io/v1',
            kind: 'ResourceClaim',
            metadata: { name: SHARED_CLAIM, ...meta() },
            spec: claimSpec(spec),
          }),
        ]
      : []),
    '---',
    yamlText({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaimTemplate',
      metadata: { name: shared ? SHARED_CLAIM : 'gpushare-gpu', ...meta() },
      spec: { spec: claimSpec(spec) },
    }),
  ].join('\n');
  const files: ArtifactFile[] = [{ name: 'gpushare-dra-claims.yaml', content: claims, executable: false }];
  if (spec.kind === 'timeslice')
    files.push({
      name: 'gpushare-dra-consumable-shares.yaml',
      content: [
        note,
        `# Time-slicing without a shared claim: the DRA driver installed with featureGates.ConsumableShares=true and`,
        `# consumableShares=${Math.max(2, spec.models)} publishes ${Math.max(2, spec.models)} shares per GPU; each claim of this template takes one, so the`,
        '# scheduler places independent pods (any namespace) on one GPU. Kubernetes 1.34+ with the DRAConsumableCapacity',
        '# feature gate (1.34, 1.35). Scheduling accounting only: nothing limits a pod at run time, and with ConsumableShares',
        '# the driver rejects MPS claims. Its pods name resourceClaimTemplateName: gpushare-gpu-share.',
        '---',
        yamlText({
          apiVersion: 'resource.k8s.io/v1',
          kind: 'ResourceClaimTemplate',
          metadata: { name: 'gpushare-gpu-share', ...meta() },
          spec: { spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: GPU_DEVICE_CLASS } }] } } },
        }),
      ].join('\n'),
      executable: false,
    });
  files.push({
    name: 'gpushare-dra-job.yaml',
    content: `${note}\n# One pod per model, each requesting ${shared ? `the shared claim ${SHARED_CLAIM}` : 'a claim of its own (gpushare-gpu)'} instead of nvidia.com/gpu.\n${yamlText(claimJob(spec, shared))}`,
    executable: false,
  });
  return files;
}

/** artifacts' DRA spec: the measured default mode; without one, time-slicing (what CUDA does anyway), no limits. */
export function artifactsDraSpec(
  source: string,
  mode: 'mps' | 'timeslice' | null,
  mps: { threadPct: number | null; pinnedMemLimit: string | null },
  replicas: number,
): DraSpec {
  return mode === 'mps'
    ? { source, models: replicas, kind: 'mps', threadPct: mps.threadPct, pinnedMemLimit: mps.pinnedMemLimit }
    : { source, models: replicas, kind: 'timeslice', interval: 'Default' };
}

/** plan's DRA spec for its recommendation (MPS with its limits, time-slicing, a MIG profile). */
export function planDraSpec(
  source: string,
  models: number,
  advice: { recommendation: string | null; mpsThreadPct: number; mpsMemLimit: string },
  mig: { geometries: Record<string, Record<string, number>> } | null,
): DraSpec {
  if (advice.recommendation === 'mps')
    return { source, models, kind: 'mps', threadPct: advice.mpsThreadPct, pinnedMemLimit: advice.mpsMemLimit };
  const profile = mig ? Object.keys(Object.values(mig.geometries)[0] ?? {})[0] : undefined;
  if (advice.recommendation === 'mig' && profile !== undefined) return { source, models, kind: 'mig', profile };
  if (advice.recommendation === 'timeslice') return { source, models, kind: 'timeslice', interval: 'Default' };
  return { source, models, kind: 'whole' };
}
