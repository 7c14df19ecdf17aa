/**
 * Copies of the user's server: each one's command line, memory share and environment, and starting a
 * set of them one at a time, each awaited ready before the next.
 */
import { createServer } from 'node:net';
import type { Clock } from '../core/clock.js';
import type { ProcessRunner } from '../core/process.js';
import type { LoadGenerator } from '../load/pool.js';
import type { LoadResult } from '../load/run.js';
import { type KillRegistry, WorkloadGroup } from '../workload/group.js';
import type { ServeMode, ServeSettings } from './record.js';
import { type LoadCommand, ServerMember, type ServerReady } from './server-member.js';

export type CopyGroup = WorkloadGroup<LoadCommand, LoadResult, ServerReady>;

/**
 * Copies started and ready: driven together as `group`, alive while the first has not exited, stopped by
 * `stop`, which says in one line each the processes of a copy it could not kill (none, normally).
 */
export interface Copies {
  group: CopyGroup;
  members: readonly ServerMember[];
  stop(): Promise<string[]>;
}

const STOP_MS = 10_000;

/** A copy whose processes outlived its stop: their PIDs, and how to end them. */
function leftText(m: ServerMember): string {
  const pids = m.leftRunning.join(' ');
  return `${m.label}: processes ${pids} still running after SIGKILL (kill -9 ${pids} once they can be killed)`;
}

/** A free TCP port on 127.0.0.1, as the kernel picks one. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

/** The command line of copy `index`: its placeholders filled. */
export function fillCommand(
  template: string,
  values: { port: number; index: number; gpuUuid: string; memFraction: number },
  /** {mem_fraction}'s decimals: 2 for copies' shares (whole percents), more for a fleet's (0.035). */
  memDigits = 2,
): string {
  return template
    .replaceAll('{port}', String(values.port))
    .replaceAll('{index}', String(values.index))
    .replaceAll('{gpu_uuid}', values.gpuUuid)
    .replaceAll('{mem_fraction}', values.memFraction.toFixed(memDigits));
}

/**
 * Each copy's {mem_fraction}: memory in proportion to the requests it carries. bench keeps the
 * dedicated copy (N × c requests) resident beside a group's N copies (c each): 45% for it, 45% split
 * among them. capacity runs one group at a time: 90% split among its copies.
 */
export function memFraction(measure: ServeSettings['measure'], mode: ServeMode | 'dedicated', copies: number): number {
  const share = measure === 'bench' ? 45 : 90;
  return Math.floor(mode === 'dedicated' && measure === 'bench' ? share : share / copies) / 100;
}

/**
 * The environment of a copy under `mode` beside `copies - 1` others: the MPS pipe directory, the thread
 * cap (mps-threads), and with `memCapMiB` each MPS copy's pinned device memory limit (device 0: the one
 * GPU CUDA_VISIBLE_DEVICES names).
 */
export function modeEnv(
  mode: ServeMode | 'dedicated',
  copies: number,
  mpsEnv: Record<string, string>,
  threadPct: number | null,
  memCapMiB: number | null = null,
): Record<string, string> {
  if (mode === 'timeslice' || mode === 'dedicated') return {};
  const cap: Record<string, string> = memCapMiB !== null ? { CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: `0=${memCapMiB}M` } : {};
  if (mode === 'mps') return { ...mpsEnv, ...cap };
  return { ...mpsEnv, ...cap, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(threadPct ?? Math.floor(100 / copies)) };
}

export interface CopySet {
  runner: ProcessRunner;
  clock: Clock;
  reaper: KillRegistry;
  abort: AbortSignal;
  settings: ServeSettings;
  gpuUuid: string;
  /** What sends the copies' loads: the run's generator workers (load/pool.ts), or the harness itself when absent. */
  generator?: LoadGenerator;
}

/** One server to start: its {index}, label, command line (all but {port} filled: `(port) => line`) and environment. */
export interface MemberPlan {
  index: number;
  label: string;
  command: (port: number) => string;
  env: Record<string, string>;
}

/**
 * Starts `copies` copies under `mode` one at a time (startMembers). {index}: 0 for the dedicated copy,
 * 1..N for a group's copies, so copies resident at once never share one.
 */
export function startCopies(
  set: CopySet,
  mode: ServeMode | 'dedicated',
  copies: number,
  env: Record<string, string>,
): Promise<{ copies: Copies; problem: null } | { copies: null; problem: string }> {
  const s = set.settings;
  return startMembers(
    set,
    Array.from({ length: copies }, (_, k) => {
      const index = mode === 'dedicated' ? 0 : k + 1;
      return {
        index,
        label: `${mode} copy ${k + 1} of ${copies}`,
        command: (port: number) =>
          fillCommand(s.serve, {
            port,
            index,
            gpuUuid: set.gpuUuid,
            memFraction: memFraction(s.measure, mode, copies),
          }),
        env,
      };
    }),
  );
}

/**
 * Starts servers one at a time, each awaited ready before the next starts: an engine that sizes its KV
 * cache from the memory free when it starts (vLLM, SGLang, TGI) mis-sizes it beside one still loading. A
 * server that does not come up stops them all and is named, with its command and the end of its log.
 */
export async function startMembers(
  set: CopySet,
  plans: readonly MemberPlan[],
): Promise<{ copies: Copies; problem: null } | { copies: null; problem: string }> {
  const s = set.settings;
  const started: CopyGroup[] = [];
  const members: ServerMember[] = [];
  const stop = async () => {
    await Promise.all(started.map((one) => one.stop(STOP_MS)));
    return members.flatMap((m) => (m.leftRunning.length > 0 ? [leftText(m)] : []));
  };
  for (const plan of plans) {
    const port = await freePort();
    const member = new ServerMember(
      set.runner,
      set.clock,
      {
        index: plan.index,
        label: plan.label,
        command: plan.command(port),
        env: { CUDA_VISIBLE_DEVICES: set.gpuUuid, ...plan.env },
        port,
        readyPath: s.readyPath,
        request: { api: s.api, inputTokens: s.inputTokens, maxTokens: s.outputTokens, timeoutMs: s.requestTimeoutMs },
        inputTokensMax: s.inputTokensMax,
        cpus: s.serverCpus,
      },
      set.generator,
    );
    members.push(member);
    const one = WorkloadGroup.start([member], set.clock, set.reaper);
    started.push(one);
    const ready = await one.ready(s.readyTimeoutMs, set.abort).catch(async (error: unknown) => {
      await stop();
      throw error;
    });
    if (ready.status === 'ready') continue;
    const why = ready.reply.kind === 'timeout' ? `not ready within ${s.readyTimeoutMs / 1000} s` : ready.reply.reason;
    const tail = member.stderrTail().split('\n').slice(-5).join(' | ');
    const left = await stop();
    return {
      copies: null,
      problem: [
        `${member.label} (${member.spec.command}) did not come up: ${why}; its log ends: ${tail || '(empty)'}`,
        ...left,
      ].join('; '),
    };
  }
  // The members' lifetimes are the one-member groups'; windows drive them together.
  return { copies: { group: WorkloadGroup.of(members, set.clock), members, stop }, problem: null };
}
