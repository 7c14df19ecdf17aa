/**
 * The record of a multi-GPU bench (bench --gpus): host.json in a parent directory that holds one
 * ordinary run directory per GPU (gpu<N>/) and the cross-GPU check's run (cross/).
 */
import { z } from 'zod';
import { DirNameSchema, loadRecord, ownRunDir, recordHeaderSchema } from '../../record/record-file.js';
import { ConfigSchema } from './schema.js';

export const HOST_SCHEMA_ID = 'gpushare-host/1';

/** One GPU's bench: its run directory, relative to the parent, and how it ended. */
export const HostGpuSchema = z.object({
  index: z.number().int().nonnegative(),
  uuid: z.string(),
  name: z.string().nullable(),
  /** Run directory inside the parent directory, e.g. gpu0: one path component. */
  dir: DirNameSchema,
  /** bench's exit code for this GPU's run; null until it ends. */
  exitCode: z.number().int().nullable(),
});
export type HostGpu = z.infer<typeof HostGpuSchema>;

export const HostRunSchema = z
  .object({
    ...recordHeaderSchema(HOST_SCHEMA_ID),
    gpus: z
      .array(HostGpuSchema)
      .min(1)
      .refine((gpus) => new Set(gpus.map((g) => g.index)).size === gpus.length, 'each GPU listed once')
      .refine((gpus) => new Set(gpus.map((g) => g.dir)).size === gpus.length, 'each run directory listed once'),
    /** The cross-GPU check's run directory inside the parent; null with a single GPU. */
    crossDir: DirNameSchema.nullable(),
    /** Whether the per-GPU runs ran side by side, and why (decided from the cross-GPU check). */
    schedule: z.object({ parallel: z.boolean(), reason: z.string() }).nullable(),
    /** The settings every GPU's run starts from (each with its own gpuIndex): what --resume starts a GPU that never started with. Absent before 2026-11-24. */
    config: ConfigSchema.optional(),
    /** --allow-busy: a GPU in use is benched anyway (its run marked contaminated). */
    allowBusy: z.boolean().optional(),
    warnings: z.array(z.string()).default(() => []),
    /** Each --resume: when. */
    resumes: z.array(z.object({ at: z.string() })).default(() => []),
  })
  .refine((host) => host.crossDir === null || !host.gpus.some((g) => g.dir === host.crossDir), {
    message: "the cross-GPU check's directory is not a GPU's",
    path: ['crossDir'],
  });
export type HostRun = z.infer<typeof HostRunSchema>;

/** host.json of `dir`, read through its schema (its run directories no links), or null when `dir` is not a multi-GPU run. */
export async function loadHostRun(dir: string): Promise<HostRun | null> {
  const host = await loadRecord(dir, 'host', HostRunSchema);
  for (const name of [...(host?.gpus.map((g) => g.dir) ?? []), ...(host?.crossDir ? [host.crossDir] : [])])
    ownRunDir(dir, name);
  return host;
}
