/**
 * One generator worker process (load/pool.ts starts them): reads jobs from stdin, one JSON line each,
 * sends its part of each load (load/run.ts sendPart) and writes each request's record as it ends, then
 * the job's end with the CPU time this process spent on it. Jobs run side by side (the copies of one
 * window). It exits when its stdin closes: the harness is gone, and nothing of its load may outlive it.
 */
import { createInterface } from 'node:readline';
import type { PoolJob, WorkerLine } from './pool-protocol.js';
import { sendPart } from './run.js';

const running = new Map<number, AbortController>();
const write = (line: WorkerLine) => process.stdout.write(`${JSON.stringify(line)}\n`);

async function run(job: PoolJob): Promise<void> {
  const abort = new AbortController();
  running.set(job.job, abort);
  const cpuBefore = process.cpuUsage();
  try {
    const records = await sendPart({ ...job.options, signal: abort.signal }, job.part, job.startMs);
    for (const record of records) write({ job: job.job, record });
  } finally {
    running.delete(job.job);
    const cpu = process.cpuUsage(cpuBefore);
    write({ job: job.job, done: true, cpuMs: (cpu.user + cpu.system) / 1000 });
  }
}

const input = createInterface({ input: process.stdin });
input.on('line', (line) => {
  const message = JSON.parse(line) as { abort: number } | PoolJob;
  if ('abort' in message) running.get(message.abort)?.abort();
  else void run(message);
});
input.on('close', () => {
  for (const abort of running.values()) abort.abort();
  process.exit(0);
});
write({ ready: true });
