/**
 * An MPS daemon as a run records it, the same in every product (bench's modes[].mps, probe's and
 * capacity's daemons[]): written before `nvidia-cuda-mps-control -d` runs, so a harness killed at any
 * moment leaves a record that --resume and doctor act on.
 */
import { z } from 'zod';

export const MpsDaemonRecordSchema = z.object({
  /** Null until the daemon has logged it (a record made while it started). */
  controlPid: z.number().int().nullable(),
  serverPids: z.array(z.number().int()),
  /** Its control.log and server.log, copied into the run directory (relative paths). */
  logFiles: z.array(z.string()),
  /** Its private pipe directory: lets --resume find and quit a daemon left by a killed harness. */
  pipeDirectory: z.string().nullable(),
  /** How it shut down; "starting" while it starts, "running" while it serves the run. */
  shutdown: z.string(),
  /** Where its logs go in the run directory, relative; absent: mps. */
  logDirectory: z.string().optional(),
});
export type MpsDaemonRecord = z.infer<typeof MpsDaemonRecordSchema>;

/** True while a record says its daemon may still be running: its harness has not shut it down. */
export function daemonMayRun(record: MpsDaemonRecord): boolean {
  return (record.shutdown === 'running' || record.shutdown === 'starting') && record.pipeDirectory !== null;
}
