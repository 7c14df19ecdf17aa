/**
 * The processes on one GPU with the memory each holds, as nvidia-smi lists them: `--query-compute-apps`
 * first; where it lists none, the process table of plain `nvidia-smi`, which under MPS lists each client
 * ("M+C") with its memory where the query lists nothing (test/fixtures: an H200 VM, driver 580).
 */
import type { ProcessRunner } from '../../core/process.js';
import { smiText } from './fingerprint.js';
import { COMPUTE_APP_FIELDS, parseCsvRows, queryArg } from './smi-csv.js';

export interface GpuProcess {
  pid: number;
  /** Its executable's name as nvidia-smi gives it (the table cuts long ones), or null. */
  name: string | null;
  /** Device memory it holds, MiB; null where nvidia-smi gives none ([N/A]). */
  usedMemoryMiB: number | null;
}

export type GpuProcesses = { ok: true; processes: GpuProcess[] } | { ok: false; error: string };

/** `--query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv,noheader,nounits`: the rows of `gpuUuid`. */
export function parseComputeApps(text: string, gpuUuid: string | null): GpuProcesses {
  const rows = parseCsvRows(text, COMPUTE_APP_FIELDS);
  if (!rows.ok)
    return { ok: false, error: `nvidia-smi --query-compute-apps printed an unreadable line: ${rows.error}` };
  return {
    ok: true,
    processes: rows.rows
      .filter((r) => r.pid !== null && (gpuUuid === null || r.gpuUuid === null || r.gpuUuid === gpuUuid))
      .map((r) => ({ pid: r.pid as number, name: r.name, usedMemoryMiB: r.usedMemoryMiB })),
  };
}

/** The rows of plain `nvidia-smi`'s process table: `|  0  N/A  N/A  576  M+C  python3  712MiB |`. */
export function parseProcessTable(text: string): GpuProcess[] {
  const processes: GpuProcess[] = [];
  for (const line of text.split('\n')) {
    const row = /^\|\s+\d+\s+\S+\s+\S+\s+(\d+)\s+[CGM+]+\s+(.*?)\s+(\d+|N\/A)(?:MiB)?\s+\|$/.exec(line.trimEnd());
    if (row === null) continue;
    processes.push({
      pid: Number(row[1]),
      name: row[2] === '' ? null : (row[2] as string),
      usedMemoryMiB: row[3] === 'N/A' ? null : Number(row[3]),
    });
  }
  return processes;
}

/** The processes on GPU `gpuUuid` and their memory: the query's, else the table's, else none (or why not). */
export async function gpuProcesses(runner: ProcessRunner, gpuUuid: string): Promise<GpuProcesses> {
  const query = await smiText(runner, [
    `--query-compute-apps=${queryArg(COMPUTE_APP_FIELDS)}`,
    '--format=csv,noheader,nounits',
  ]);
  const listed = query.ok ? parseComputeApps(query.text, gpuUuid) : query;
  if (listed.ok && listed.processes.length > 0) return listed;
  const table = await smiText(runner, ['-i', gpuUuid]);
  const rows = table.ok ? parseProcessTable(table.text) : [];
  return rows.length > 0 ? { ok: true, processes: rows } : listed;
}
