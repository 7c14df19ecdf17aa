/** Run ids and the JSON records of probe and capacity runs (bench runs have their own store and schema). */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { UserError } from '../core/errors.js';
import { type Fingerprint, gpuAt, isSimulated } from '../system/nvidia/schema.js';

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

/** What every probe, capacity and multi-GPU record starts with: its kind, id, state and times (ISO 8601). */
export interface RecordHeader<Schema extends string> {
  schema: Schema;
  id: string;
  status: 'running' | 'complete' | 'interrupted' | 'failed';
  createdAt: string;
  finishedAt: string | null;
}

/** The record `file` in `dir` if it is there, checked to carry `schemaId`; null when `dir` has no such file. */
export async function loadRecord<T>(dir: string, file: string, schemaId: string, rerun: string): Promise<T | null> {
  const where = path.join(dir, file);
  const text = await readFile(where, 'utf8').catch(() => null);
  if (text === null) return null;
  let record: unknown;
  try {
    record = JSON.parse(text);
  } catch {
    throw new UserError(`${where} is not JSON: it was cut short or edited; run ${rerun} again`);
  }
  if ((record as { schema?: unknown }).schema !== schemaId) throw new UserError(`${where} is not a ${schemaId} record`);
  return record as T;
}
