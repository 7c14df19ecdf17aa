/**
 * The machine's fingerprint and nvidia-smi samples, defined once: every product records them, and
 * the TypeScript types are inferred from these schemas.
 */
import { z } from 'zod';
import { COMPUTE_APP_FIELDS, GPU_FIELDS, type QueryField, SAMPLE_FIELDS } from './smi-csv.js';

type RowShape<Fs extends readonly QueryField[]> = {
  [F in Fs[number] as F['key']]: F['kind'] extends 'number' ? z.ZodNullable<z.ZodNumber> : z.ZodNullable<z.ZodString>;
};

/** A zod object with one nullable column per nvidia-smi field, so the CSV fields and the schema cannot drift. */
function rowSchema<const Fs extends readonly QueryField[]>(fields: Fs): z.ZodObject<RowShape<Fs>> {
  const shape = Object.fromEntries(
    fields.map((f) => [f.key, f.kind === 'number' ? z.number().nullable() : z.string().nullable()]),
  );
  return z.object(shape) as unknown as z.ZodObject<RowShape<Fs>>;
}

/** One nvidia-smi sample; `tUs` is CLOCK_MONOTONIC µs when it arrived, `trialId` the trial whose window holds it. */
export const SampleSchema = rowSchema(SAMPLE_FIELDS).extend({
  tUs: z.number(),
  trialId: z.string().nullable(),
});
export type Sample = z.infer<typeof SampleSchema>;

export const MigDeviceSchema = z.object({
  gpuIndex: z.number().int(),
  profile: z.string(),
  deviceIndex: z.number().int(),
  uuid: z.string(),
});

export const MigProfileSchema = z.object({
  gpuIndex: z.number().int(),
  name: z.string(),
  profileId: z.number().int(),
  instancesFree: z.number().int(),
  instancesTotal: z.number().int(),
  memoryGiB: z.number(),
  smCount: z.number().int(),
  copyEngines: z.number().int(),
  decoders: z.number().int(),
  encoders: z.number().int(),
  jpegs: z.number().int(),
  ofas: z.number().int(),
});

export const MigPlacementSchema = z.object({
  gpuIndex: z.number().int(),
  profileId: z.number().int(),
  starts: z.array(z.number().int()),
  size: z.number().int(),
});

/** One GPU as nvidia-smi describes it, with its MIG devices and the MIG profiles it could make. */
export const GpuSchema = rowSchema(GPU_FIELDS).extend({
  migDevices: z.array(MigDeviceSchema),
  migProfiles: z.array(MigProfileSchema),
  migPlacements: z.array(MigPlacementSchema),
});
export type Gpu = z.infer<typeof GpuSchema>;

export const PythonProbeSchema = z.discriminatedUnion('status', [
  z.object({
    status: z.literal('ok'),
    executable: z.string(),
    version: z.string(),
    torch: z.string().nullable(),
    torchCuda: z.string().nullable(),
    cudaAvailable: z.boolean(),
    deviceName: z.string().nullable(),
    smCount: z.number().int().nullable(),
    triton: z.string().nullable(),
  }),
  z.object({ status: z.literal('error'), executable: z.string(), error: z.string() }),
]);
export type PythonProbe = z.infer<typeof PythonProbeSchema>;

/** What the harness relies on, read before every run and stored in it. */
export const FingerprintSchema = z.object({
  collectedAt: z.string(),
  host: z.object({
    platform: z.string(),
    kernel: z.string(),
    arch: z.string(),
    /** The host's logical CPUs (os.cpus()). */
    cpus: z.number().int(),
    /** The CPU ids this process could run on (its affinity: a container's cpuset); absent in older runs and off Linux. */
    allowedCpus: z.array(z.number().int().nonnegative()).optional(),
    /** CPUs' worth of time its cgroup's quota allowed; null: no quota; absent in older runs. */
    cpuQuota: z.number().positive().nullable().optional(),
    nodeVersion: z.string(),
    /** The machine's host name (on Kubernetes, the pod's); absent in runs before gpushare recorded it. */
    hostname: z.string().optional(),
  }),
  nvidiaSmi: z.object({ path: z.string().nullable(), error: z.string().nullable() }),
  driverVersion: z.string().nullable(),
  cudaVersion: z.string().nullable(),
  gpus: z.array(GpuSchema),
  /** Other compute processes; empty inside VMs that hide them (see the README). */
  computeApps: z.array(rowSchema(COMPUTE_APP_FIELDS)),
  mps: z.object({
    controlPath: z.string().nullable(),
    serverPath: z.string().nullable(),
    /** The pipe directory a client would use by default ($CUDA_MPS_PIPE_DIRECTORY or /tmp/nvidia-mps). */
    defaultPipeDirectory: z.string(),
    /** A control socket exists there: an MPS daemon that gpushare did not start is (or was) running. */
    defaultDaemonSocket: z.boolean(),
    /** PIDs of nvidia-cuda-mps-* processes running before the harness started anything. */
    runningPids: z.array(z.number().int()),
  }),
  python: PythonProbeSchema,
  /** Taken from gpushare's simulator (simulator/ in the package), not a real GPU; absent in runs before gpushare recorded it. */
  simulated: z.boolean().optional(),
});
export type Fingerprint = z.infer<typeof FingerprintSchema>;

/** Whether a fingerprint was taken from gpushare's simulator: its numbers measure no GPU. */
export function isSimulated(fingerprint: Pick<Fingerprint, 'simulated'>): boolean {
  return fingerprint.simulated === true;
}

/** The GPU with nvidia-smi index `index` in a fingerprint. */
export function gpuAt(fingerprint: Fingerprint, index: number): Gpu | undefined {
  return fingerprint.gpus.find((g) => g.index === index);
}

/** How CUDA_VISIBLE_DEVICES names GPU `index` of a fingerprint: its UUID, or the index where nvidia-smi gave none. */
export function visibleDevice(fingerprint: Fingerprint, index: number): string {
  return gpuAt(fingerprint, index)?.uuid ?? String(index);
}
