/** Run ids, the header every record starts with, and the reading of a probe, capacity or multi-GPU record through its schema. */
import { randomBytes } from 'node:crypto';
import { lstatSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { UserError } from '../core/errors.js';
import { type Fingerprint, FingerprintSchema, gpuAt, isSimulated } from '../system/nvidia/schema.js';
import { kindText, RECORD_KINDS, type RecordKind, recordKindIn } from './kinds.js';
import { LOCK_FILE } from './lock.js';
import { readRegularFile } from './store.js';

/**
 * `<date>-[simulated-]<gpu>-[<kind>-]<6 hex>`, e.g. 2026-11-21-h200-3fa9c2, 2026-11-23-h100-80gb-hbm3-probe-84e6b8
 * or, on gpushare's simulator, 2026-11-24-simulated-h200-3fa9c2. At most 60 characters of the GPU's
 * name: a run id is a token of at most 128 (RunIdSchema).
 */
export function newRunId(
  createdAt: string,
  fingerprint: Fingerprint,
  gpuIndex: number,
  kind: string | null = null,
): string {
  const slug =
    (gpuAt(fingerprint, gpuIndex)?.name ?? 'gpu')
      .toLowerCase()
      .replace(/^nvidia\s+/, '')
      .replace(/[^a-z0-9]+/g, '-')
      .slice(0, 60)
      .replace(/^-|-$/g, '') || 'gpu';
  const simulated = isSimulated(fingerprint) ? 'simulated-' : '';
  return `${createdAt.slice(0, 10)}-${simulated}${slug}-${kind !== null ? `${kind}-` : ''}${randomBytes(3).toString('hex')}`;
}

/** A run id: a token that is safe as a file name, in a path and in generated files (no "/", "..", spaces or control characters). */
export const RunIdSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/,
    'a run id of letters, digits, ".", "_" and "-" (e.g. 2026-11-22-h100-3fa9c2)',
  )
  .refine((id) => !id.includes('..'), 'a run id without ".."');

/** A directory named inside a record (host.json's gpu0, cross): one path component, never "..", "/" or an absolute path. */
export const DirNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'a directory name of letters, digits, ".", "_" and "-" (e.g. gpu0)')
  .refine((name) => !name.includes('..'), 'a directory name without ".."');

/**
 * `<parent>/<name>`, a run directory a record names (a multi-GPU run's gpu0/, cross/): never a symbolic link, which
 * would present a run from outside the parent as the parent's own. Absent is fine: it may not have started yet.
 */
export function ownRunDir(parent: string, name: string): string {
  const dir = path.join(parent, name);
  let link = false;
  try {
    link = lstatSync(dir).isSymbolicLink();
  } catch {
    return dir;
  }
  if (link)
    throw new UserError(
      `${dir} is a symbolic link: the run directories a multi-GPU run lists are its own (remove the link, or report the run it points to on its own)`,
    );
  return dir;
}

/** Where a run stands: `running` until it ends, or its harness was killed (then --resume continues it). */
export const RunStatusSchema = z.enum(['running', 'complete', 'interrupted', 'failed']);
export type RunStatus = z.infer<typeof RunStatusSchema>;

/** What every probe, capacity and multi-GPU record starts with: its kind, id, state and times (ISO 8601). */
export interface RecordHeader<Schema extends string> {
  schema: Schema;
  id: string;
  status: RunStatus;
  createdAt: string;
  finishedAt: string | null;
}

/** RecordHeader's schema, for a record whose schema id is `schema`. */
export function recordHeaderSchema<const Schema extends string>(schema: Schema) {
  return {
    schema: z.literal(schema),
    id: RunIdSchema,
    status: RunStatusSchema,
    createdAt: z.string(),
    finishedAt: z.string().nullable(),
  };
}

/** The header of a run on one GPU of one machine (probe, capacity, mix, serve, verify): the machine and the GPU follow. */
export interface MachineRecordHeader<Schema extends string> extends RecordHeader<Schema> {
  fingerprint: Fingerprint;
  gpuIndex: number;
}

/** MachineRecordHeader's schema, for a record whose schema id is `schema`. */
export function machineRecordHeaderSchema<const Schema extends string>(schema: Schema) {
  return {
    ...recordHeaderSchema(schema),
    fingerprint: FingerprintSchema,
    gpuIndex: z.number().int().nonnegative(),
  };
}

/** A new run's header, as it is first saved: running, not finished. */
export function newMachineRecordHeader<const Schema extends string>(
  schema: Schema,
  run: { id: string; createdAt: string; fingerprint: Fingerprint },
  gpuIndex: number,
): MachineRecordHeader<Schema> {
  return {
    schema,
    id: run.id,
    status: 'running',
    createdAt: run.createdAt,
    finishedAt: null,
    fingerprint: run.fingerprint,
    gpuIndex,
  };
}

/**
 * The record of `kind` in `dir`, read without blocking (a FIFO is refused) and checked against
 * `schema`; null when `dir` holds no such file. Anything else unreadable is a one-line UserError.
 */
export async function loadRecord<S extends z.ZodType>(
  dir: string,
  kind: RecordKind,
  schema: S,
): Promise<z.output<S> | null> {
  const { file: name, noun, command } = RECORD_KINDS[kind];
  const file = path.join(dir, name);
  let text: string;
  try {
    text = await readRegularFile(file, `give a directory made by ${command}`);
  } catch (error) {
    // No such file, or `dir` is no directory: it holds no record of this kind.
    if (['ENOENT', 'ENOTDIR'].includes((error as NodeJS.ErrnoException).code ?? '')) return null;
    if (error instanceof UserError) throw error;
    throw new UserError(`cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UserError(`${file} is not JSON: it was cut short or edited; run ${command} again`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UserError(
      `${file} does not match the ${noun} schema at ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
    );
  }
  return parsed.data;
}

/** The refusal for `dir`, which holds no record of `wanted`: it names what the directory is instead. */
export async function notARunOf(dir: string, wanted: RecordKind): Promise<UserError> {
  const found = await recordKindIn(dir);
  const { noun, file, command } = RECORD_KINDS[wanted];
  return new UserError(
    found !== null && found !== wanted
      ? `${dir} is ${kindText(found)}, not a ${noun}: give a directory made by ${command}`
      : `${dir} holds no ${noun} (no ${file}): give a directory made by ${command}`,
  );
}

/**
 * The refusal of --resume for `dir`, which holds no record of `wanted`. A run killed before its first
 * save (while it fingerprints the machine, or between its lock and its record) leaves no directory, or
 * one holding only its lock and temp files: there is nothing to continue, and one line says to start
 * afresh there. Anything else is refused as notARunOf refuses it.
 */
export async function notResumable(dir: string, wanted: RecordKind): Promise<UserError> {
  const entries = await readdir(dir).catch(() => null);
  const { noun, file, command } = RECORD_KINDS[wanted];
  const leftByAKill = (name: string) => name === LOCK_FILE || name.startsWith(`${file}.`);
  if (entries === null || entries.every(leftByAKill))
    return new UserError(
      `${dir} holds no ${noun} to resume: ${entries === null ? 'it does not exist' : `no ${file} was saved there`} (a ${noun} killed before its first save leaves none); start it afresh with ${command} --out ${dir}`,
    );
  return notARunOf(dir, wanted);
}
