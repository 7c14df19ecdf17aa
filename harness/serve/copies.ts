/**
 * Copies of the user's server: each one's command line, memory share and environment, and starting a
 * set of them one at a time, each awaited ready before the next (or, asked, all at once).
 */
import { createServer } from 'node:net';
import type { Clock } from '../core/clock.js';
import type { ProcessRunner } from '../core/process.js';
import type { LoadGenerator } from '../load/pool.js';
import type { LoadResult } from '../load/run.js';
import { type KillRegistry, WorkloadGroup } from '../workload/group.js';
import { type GroupMode, IN_PROCESS, type ServeSettings } from './record.js';
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
export function memFraction(measure: ServeSettings['measure'], mode: GroupMode, copies: number): number {
  const share = measure === 'bench' ? 45 : 90;
  return Math.floor(mode === 'dedicated' && measure === 'bench' ? share : share / copies) / 100;
}

/**
 * The environment of a copy under `mode` beside `copies - 1` others: the MPS pipe directory, the thread
 * cap (mps-threads), and with `memCapMiB` each MPS copy's pinned device memory limit (device 0: the one
 * GPU CUDA_VISIBLE_DEVICES names).
 */
export function modeEnv(
  mode: GroupMode,
  copies: number,
  mpsEnv: Record<string, string>,
  threadPct: number | null,
  memCapMiB: number | null = null,
): Record<string, string> {
  if (mode === 'timeslice' || mode === 'dedicated' || mode === IN_PROCESS) return {};
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
  mode: GroupMode,
  copies: number,
  env: Record<string, string>,
): Promise<StartOutcome> {
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
 * Servers started and ready, or the one that did not come up: its label, and one line saying why. `each`:
 * every member as Copies of its own (in the plans' order), for a caller that stops them one by one.
 */
export type StartOutcome =
  | { copies: Copies; each: Copies[]; problem: null }
  | { copies: null; problem: string; failed: string[] };

/** A member started in its own group: the member, and the group that owns its lifetime. */
interface Started {
  member: ServerMember;
  group: CopyGroup;
}

/**
 * `count` distinct free ports: ports the kernel hands out one after another can repeat once each
 * probe's socket is closed, and servers started at once must not share one.
 */
async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  for (let tries = 0; ports.size < count && tries < count * 10; tries++) ports.add(await freePort());
  if (ports.size < count) throw new Error(`could not find ${count} distinct free ports on 127.0.0.1`);
  return [...ports];
}

/**
 * Starts servers (settings.start): serial by default, each awaited ready before the next starts: an
 * engine that sizes its KV cache from the memory free when it starts (vLLM, SGLang, TGI) mis-sizes it
 * beside one still loading. parallel: every server started at once, each awaited ready within its own
 * --ready-timeout-s, for light servers (a fleet of 40 up in seconds, not 40 start-ups end to end). A
 * server that does not come up stops them all and is named, with its command and the end of its log
 * (parallel: the first seen, the rest not waited for to their deadlines).
 */
export async function startMembers(set: CopySet, plans: readonly MemberPlan[]): Promise<StartOutcome> {
  const s = set.settings;
  const started: Started[] = [];
  const stop = async () => {
    await Promise.all(started.map((one) => one.group.stop(STOP_MS)));
    return started.flatMap(({ member }) => (member.leftRunning.length > 0 ? [leftText(member)] : []));
  };
  const start = (plan: MemberPlan, port: number): Started => {
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
    const one = { member, group: WorkloadGroup.start([member], set.clock, set.reaper) };
    started.push(one);
    return one;
  };
  /** Null once ready; else why not, with its command and the end of its log. */
  const ready = async ({ member, group }: Started): Promise<string | null> => {
    const got = await group.ready(s.readyTimeoutMs, set.abort);
    if (got.status === 'ready') return null;
    const why = got.reply.kind === 'timeout' ? `not ready within ${s.readyTimeoutMs / 1000} s` : got.reply.reason;
    return `${member.label} (${member.spec.command}) did not come up: ${why}; ${member.logEnd()}`;
  };
  const failures: Array<{ label: string; line: string }> = [];
  try {
    if ((s.start ?? 'serial') === 'parallel') {
      const ports = await freePorts(plans.length);
      await firstFailure(
        plans.map((plan, k) => start(plan, ports[k] as number)),
        ready,
        (one, line) => failures.push({ label: one.member.label, line }),
      );
    } else {
      for (const plan of plans) {
        const one = start(plan, await freePort());
        const line = await ready(one);
        if (line === null) continue;
        failures.push({ label: one.member.label, line });
        break;
      }
    }
  } catch (error) {
    await stop();
    throw error;
  }
  if (failures.length > 0) {
    const left = await stop();
    return {
      copies: null,
      problem: [...failures.map((f) => f.line), ...left].join('; '),
      failed: failures.map((f) => f.label),
    };
  }
  const members = started.map((one) => one.member);
  const each = started.map(({ member, group }) => ({
    group: WorkloadGroup.of([member], set.clock),
    members: [member],
    stop: async () => {
      await group.stop(STOP_MS);
      return member.leftRunning.length > 0 ? [leftText(member)] : [];
    },
  }));
  // The members' lifetimes are the one-member groups'; windows drive them together.
  return { copies: { group: WorkloadGroup.of(members, set.clock), members, stop }, each, problem: null };
}

/**
 * Members that load one running server, each naming its own model in its requests (a fleet's in-process
 * arm: one process serving every server's model): they start and stop nothing, the host's group owns it.
 */
export function attachedMembers(
  set: CopySet,
  host: ServerMember,
  models: readonly { index: number; label: string; model: string }[],
): ServerMember[] {
  return models.map(
    (m) =>
      new ServerMember(
        set.runner,
        set.clock,
        { ...host.spec, index: m.index, label: m.label, model: m.model },
        set.generator,
        host,
      ),
  );
}

/**
 * Awaits `ready` of every one of `all` until all are ready or one is not: the rest are not waited for
 * (the caller stops them, which ends their waits); `failed` hears the one not ready. An error (an
 * interrupt) is thrown as soon as it comes.
 */
async function firstFailure<T>(
  all: readonly T[],
  ready: (one: T) => Promise<string | null>,
  failed: (one: T, line: string) => void,
): Promise<void> {
  let done = false;
  await new Promise<void>((resolve, reject) => {
    let left = all.length;
    if (left === 0) resolve();
    for (const one of all)
      ready(one).then((line) => {
        left -= 1;
        if (done || (line === null && left > 0)) return;
        done = true;
        if (line !== null) failed(one, line);
        resolve();
      }, reject);
  });
  done = true;
}
