/** The artifact files for one GPU, as name → text: pure, so `artifacts` and `plan` share it and tests read it. */

import { MPS_CLIENT_LIMIT } from '../system/mps/client-limit.js';
import { type DevicePluginConfig, devicePluginConfig, type Operator, sharingArtifacts } from './k8s.js';
import { migPartedConfig, migPartedYaml } from './mig-parted.js';
import type { MigGpu } from './mig-profiles.js';
import type { Geometry } from './mig-solver.js';
import { type MpsScriptSettings, mpsStartScript, mpsStopScript, mpsSystemdUnit } from './mps-scripts.js';

export interface ArtifactFile {
  name: string;
  content: string;
  executable: boolean;
}

export interface BundleSpec {
  source: string;
  mps: Omit<MpsScriptSettings, 'source'>;
  sharing: Record<string, DevicePluginConfig>;
  /** The ClusterPolicy default config key; null when nothing measured which mode is cheaper. */
  defaultSharing: string | null;
  operator?: Operator;
  mig: { gpu: MigGpu; geometries: Record<string, Geometry> } | null;
}

export function artifactBundle(spec: BundleSpec): ArtifactFile[] {
  const mps = { ...spec.mps, source: spec.source };
  const k8s = sharingArtifacts(spec.sharing, spec.defaultSharing, spec.source, spec.operator);
  const files: ArtifactFile[] = [
    { name: 'gpushare-mps-start.sh', content: mpsStartScript(mps), executable: true },
    { name: 'gpushare-mps-stop.sh', content: mpsStopScript(mps), executable: true },
    { name: 'gpushare-mps.service', content: mpsSystemdUnit(mps), executable: false },
    { name: 'gpushare-device-plugin-configmap.yaml', content: k8s.configMap, executable: false },
    { name: 'gpushare-node-label.yaml', content: k8s.selection, executable: false },
    { name: 'gpushare-clusterpolicy-patch.yaml', content: k8s.clusterPolicyPatch, executable: false },
    { name: 'gpushare-shared-gpu-pod.yaml', content: k8s.pod, executable: false },
  ];
  if (spec.mig)
    files.push({
      name: 'gpushare-mig-parted.yaml',
      content: migPartedYaml(migPartedConfig(spec.mig.gpu, spec.mig.geometries), spec.mig.gpu, spec.source),
      executable: false,
    });
  return files;
}

/** The device-plugin configs for `replicas`-way sharing, one key per strategy. */
export function sharingConfigs(replicas: number): Record<string, DevicePluginConfig> {
  return {
    [`timeslicing-${replicas}`]: devicePluginConfig('timeSlicing', replicas),
    [`mps-${replicas}`]: devicePluginConfig('mps', Math.min(replicas, MPS_CLIENT_LIMIT)),
  };
}
