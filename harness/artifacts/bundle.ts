/** The artifact files for one GPU, as name → text: pure, so `artifacts` and `plan` share it and tests read it. */
import { median } from 'simple-statistics';
import type { Analysis } from '../analysis/analyze.js';
import { armResults } from '../analysis/rounds.js';
import { gpuAt, type Run } from '../run/schema.js';
import type { Measured, MeasuredMode } from './advice.js';
import { devicePluginConfig, sharingArtifacts, type DevicePluginConfig, type Operator } from './k8s.js';
import type { MigGpu } from './mig-profiles.js';
import { migPartedConfig, migPartedYaml } from './mig-parted.js';
import type { Geometry } from './mig-solver.js';
import { mpsStartScript, mpsStopScript, mpsSystemdUnit, type MpsScriptSettings } from './mps-scripts.js';

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
  if (spec.mig) files.push({ name: 'gpushare-mig-parted.yaml', content: migPartedYaml(migPartedConfig(spec.mig.gpu, spec.mig.geometries), spec.mig.gpu, spec.source), executable: false });
  return files;
}

/** The device-plugin configs for `replicas`-way sharing, one key per strategy. */
export function sharingConfigs(replicas: number): Record<string, DevicePluginConfig> {
  return { [`timeslicing-${replicas}`]: devicePluginConfig('timeSlicing', replicas), [`mps-${replicas}`]: devicePluginConfig('mps', Math.min(replicas, 48)) };
}

/** The small-inference probe's costs per mode, as the run measured them (infer first, then gemm, then spin). */
/**
 * What the run measured for each mode on its small-inference probe. With a client sweep and `models`
 * given: the point at the fewest measured clients ≥ models, or the most measured clients when none
 * reaches it (then `extrapolated`: the plan says it quotes fewer clients than asked).
 */
export function measuredFromAnalysis(run: Run, analysis: Analysis, models: number | null = null): Measured {
  const gpu = gpuAt(run.fingerprint, run.config.gpuIndex);
  const forMode = (mode: 'timeslice' | 'mps'): MeasuredMode | null => {
    const workload = ['infer', 'gemm', 'spin'].find((w) => analysis.comparisons.some((c) => c.comparison.mode === mode && c.comparison.workload.name === w && c.completeRounds > 0));
    const points = analysis.comparisons.filter((c) => c.comparison.mode === mode && c.comparison.workload.name === workload && c.completeRounds > 0).sort((a, b) => a.comparison.clientEnv.length - b.comparison.clientEnv.length);
    const ca = models === null ? points[0] : (points.find((c) => c.comparison.clientEnv.length >= models) ?? points.at(-1));
    if (!ca) return null;
    const value = (name: string) => ca.metrics.find((m) => m.metric.name === name)?.stats.value ?? null;
    const contendedP99 = (c: typeof ca) => {
      const p99s = armResults(c.rounds, 'contended').flatMap((r) => (r.latency ? [r.latency.p99Ms / r.chunkIterations] : []));
      return p99s.length > 0 ? median(p99s) : null;
    };
    return {
      workload: ca.comparison.workload.name,
      clients: ca.comparison.clientEnv.length,
      slowdown: value('slowdown'),
      aggregate: value('aggregate-throughput'),
      p99Ratio: value('p99-latency-ratio'),
      contendedP99Ms: contendedP99(ca),
      p99ByClients: points.map((c) => ({ clients: c.comparison.clientEnv.length, p99Ms: contendedP99(c) })),
      memoryPerClientMiB: ca.memoryPerClientMiB,
      extrapolated: models !== null && ca.comparison.clientEnv.length < models,
    };
  };
  return { source: `run ${run.id} (${gpu?.name ?? 'GPU'}, driver ${run.fingerprint.driverVersion ?? '?'})`, timeslice: forMode('timeslice'), mps: forMode('mps') };
}

/** The one decision "which sharing mode measured cheaper": the lower slowdown of the same probe; null when not both were measured. */
export function cheaperMode(measured: Measured): 'mps' | 'timeslice' | null {
  const ts = measured.timeslice?.slowdown ?? null;
  const mps = measured.mps?.slowdown ?? null;
  if (ts === null || mps === null || measured.timeslice?.workload !== measured.mps?.workload) return null;
  return mps <= ts ? 'mps' : 'timeslice';
}
