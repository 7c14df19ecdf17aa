/**
 * Kubernetes artifacts for NVIDIA's device plugin (directly or through the GPU Operator). The zod
 * schemas mirror the plugin's config structs (api/config/v1: Config, Sharing, ReplicatedResources,
 * ReplicatedResource), so only fields the plugin honours can be written.
 */
import type { ConfigMap, Pod } from 'kubernetes-types/core/v1.js';
import { z } from 'zod';
import { commentText } from '../core/escape/embed.js';
import { yamlText } from '../core/escape/yaml.js';
import { MPS_CLIENT_LIMIT } from '../system/mps/client-limit.js';

/** MPS in the device plugin serves at most as many clients per GPU as an MPS server accepts. */
export const MAX_MPS_REPLICAS = MPS_CLIENT_LIMIT;

const ReplicatedResourceSchema = z
  .object({
    name: z.string().regex(/^[a-z0-9.-]+\/[a-z0-9.-]+$/, 'a resource name such as nvidia.com/gpu'),
    rename: z.string().optional(),
    devices: z
      .union([
        z.literal('all'),
        z.number().int().positive(),
        z.array(z.union([z.string(), z.number().int().nonnegative()])),
      ])
      .optional(),
    replicas: z.number().int().min(2, 'sharing needs at least 2 replicas'),
  })
  .strict();

const ReplicatedResourcesSchema = z
  .object({
    renameByDefault: z.boolean().optional(),
    failRequestsGreaterThanOne: z.boolean().optional(),
    resources: z.array(ReplicatedResourceSchema).min(1),
  })
  .strict();

/** The device plugin's config file (version v1) with one sharing strategy. */
export const DevicePluginConfigSchema = z
  .object({
    version: z.literal('v1'),
    sharing: z
      .object({
        timeSlicing: ReplicatedResourcesSchema.optional(),
        mps: ReplicatedResourcesSchema.extend({
          resources: z
            .array(ReplicatedResourceSchema.extend({ replicas: z.number().int().min(2).max(MAX_MPS_REPLICAS) }))
            .min(1),
        }).optional(),
      })
      .strict()
      .refine((s) => (s.timeSlicing === undefined) !== (s.mps === undefined), 'exactly one of timeSlicing and mps'),
  })
  .strict();
export type DevicePluginConfig = z.infer<typeof DevicePluginConfigSchema>;

export type SharingStrategy = 'timeSlicing' | 'mps';

/**
 * The limits the device plugin's own MPS daemon gives each of `replicas` clients per GPU, as its
 * mps-control-daemon computes them: `set_default_active_thread_percentage` 100 ÷ replicas and
 * `set_default_device_pinned_mem_limit` total MiB ÷ replicas, both rounded down.
 */
export function pluginMpsLimits(replicas: number, gpuMemoryMiB: number): { threadPct: number; memLimitMiB: number } {
  return { threadPct: Math.floor(100 / replicas), memLimitMiB: Math.floor(gpuMemoryMiB / replicas) };
}

/** A device-plugin config that advertises each GPU as `replicas` shared GPUs. */
export function devicePluginConfig(strategy: SharingStrategy, replicas: number): DevicePluginConfig {
  const resources = {
    // Renamed resources (nvidia.com/gpu.shared) keep shared and whole GPUs apart in requests.
    renameByDefault: true,
    // One replica is one share; asking for more would not buy more GPU, so refuse it.
    failRequestsGreaterThanOne: true,
    resources: [{ name: 'nvidia.com/gpu', replicas }],
  };
  return DevicePluginConfigSchema.parse({
    version: 'v1',
    sharing: strategy === 'mps' ? { mps: resources } : { timeSlicing: resources },
  });
}

export const CONFIG_MAP_NAME = 'gpushare-device-plugin-config';

/** Where the GPU Operator runs: upstream defaults; OpenShift uses nvidia-gpu-operator / gpu-cluster-policy. */
export interface Operator {
  namespace: string;
  clusterPolicy: string;
}
export const DEFAULT_OPERATOR: Operator = { namespace: 'gpu-operator', clusterPolicy: 'cluster-policy' };
/** The node label the GPU Operator's device plugin reads to pick a config from the ConfigMap. */
export const CONFIG_LABEL = 'nvidia.com/device-plugin.config';

export interface SharingArtifacts {
  /** ConfigMap whose keys are named configs. */
  configMap: string;
  /** `kubectl label node … nvidia.com/device-plugin.config=<key>` and the ClusterPolicy patch. */
  selection: string;
  clusterPolicyPatch: string;
  /** A pod asking for one share. */
  pod: string;
}

/**
 * Every artifact for a set of named device-plugin configs. `defaultKey` is the ClusterPolicy default:
 * null when no measurement chose a mode, and then no node gets a config it did not ask for.
 */
export function sharingArtifacts(
  configs: Record<string, DevicePluginConfig>,
  defaultKey: string | null,
  source: string,
  operator: Operator = DEFAULT_OPERATOR,
): SharingArtifacts {
  const configMap: ConfigMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: CONFIG_MAP_NAME,
      namespace: operator.namespace,
      labels: { 'app.kubernetes.io/managed-by': 'gpushare' },
    },
    data: Object.fromEntries(Object.entries(configs).map(([key, config]) => [key, yamlText(config)])),
  };
  const patch = {
    spec: { devicePlugin: { config: { name: CONFIG_MAP_NAME, ...(defaultKey ? { default: defaultKey } : {}) } } },
  };
  const renamed = Object.values(configs).some((c) => (c.sharing.mps ?? c.sharing.timeSlicing)?.renameByDefault);
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'gpushare-shared-gpu-example' },
    spec: {
      restartPolicy: 'Never',
      containers: [
        {
          name: 'app',
          image: 'nvcr.io/nvidia/cuda:13.0.0-base-ubuntu24.04',
          command: ['nvidia-smi', '-L'],
          resources: { limits: { [renamed ? 'nvidia.com/gpu.shared' : 'nvidia.com/gpu']: '1' } },
        },
      ],
    },
  };
  const note = `# Generated by gpushare from ${commentText(source)}.\n`;
  return {
    configMap: `${note}${yamlText(configMap)}`,
    selection: `${note}# Pick a config per node (${defaultKey ? 'the ClusterPolicy default applies to unlabelled nodes' : 'no default: no measurement chose a mode, so unlabelled nodes keep whole GPUs'}):\n${Object.keys(
      configs,
    )
      .map((key) => `#   kubectl label node <node> ${CONFIG_LABEL}=${key} --overwrite`)
      .join('\n')}\n${yamlText({ metadata: { labels: defaultKey ? { [CONFIG_LABEL]: defaultKey } : {} } })}`,
    clusterPolicyPatch: `${note}# kubectl patch clusterpolicies.nvidia.com/${commentText(operator.clusterPolicy)} --type merge --patch-file gpushare-clusterpolicy-patch.yaml\n${yamlText(patch)}`,
    pod: `${note}${yamlText(pod)}`,
  };
}
