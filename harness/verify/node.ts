/**
 * What verify needs from the node, and the probes it runs there: a private MPS daemon set up as the
 * generated scripts set theirs (their `set_default_*` commands), client roles with the environment a
 * client of those files gets, and the daemon's own answer to which processes are its clients.
 */

import type { ProcessRunner } from '../core/process.js';
import type { SessionDaemon, SessionMpsStart } from '../session/lifecycle.js';
import { parsePids } from '../system/mps/daemon.js';
import type { MpsPaths } from '../system/mps/ownership.js';
import type { Gpu } from '../system/nvidia/schema.js';
import { NotMeasured, num, type Role, Roles } from './roles.js';

export interface VerifyNode {
  runner: ProcessRunner;
  python: string;
  /** CUDA_VISIBLE_DEVICES of every client: the GPU under test. */
  visibleDevices: string;
  /** The GPU under test as nvidia-smi described it. */
  gpu: Gpu;
  /** Every GPU index nvidia-smi lists on this node. */
  gpuIndices: number[];
  /** CUDA_VISIBLE_DEVICES naming every GPU of the node: for the cases that need two. */
  visibleAll: string;
  /** A fresh private daemon (recorded in the run before it starts); `paths` to choose its directory first. */
  startMps(label: string, paths?: MpsPaths, visibleDevices?: string): Promise<SessionMpsStart>;
  /** Registers a synchronous killer for a forced exit; returns its removal. */
  onForcedExit(kill: () => void): () => void;
  /** PIDs left running by a role that would not stop: recorded as a warning. */
  leftPids: number[];
}

/** Client roles with no MPS daemon: plain time-slicing. */
export async function withoutMps<T>(node: VerifyNode, body: (roles: Roles) => Promise<T>): Promise<T> {
  const roles = new Roles(node.runner, node.python, { CUDA_VISIBLE_DEVICES: node.visibleDevices });
  const remove = node.onForcedExit(() => roles.killNow());
  try {
    return await body(roles);
  } finally {
    node.leftPids.push(...(await roles.stopAll()));
    remove();
  }
}

/**
 * A private daemon with `defaults` (control commands, e.g. `set_default_active_thread_percentage 25`)
 * given before any client, roles whose environment is the daemon's, and both stopped however `body` ends.
 */
export async function withMps<T>(
  node: VerifyNode,
  label: string,
  defaults: readonly string[],
  body: (daemon: SessionDaemon, roles: Roles) => Promise<T>,
  options: { paths?: MpsPaths; before?: (roles: Roles) => Promise<void>; visibleDevices?: string } = {},
): Promise<T> {
  const visible = options.visibleDevices ?? node.visibleDevices;
  const roles = new Roles(node.runner, node.python, { CUDA_VISIBLE_DEVICES: visible });
  const remove = node.onForcedExit(() => roles.killNow());
  let daemon: SessionDaemon | null = null;
  try {
    if (options.before) await options.before(roles);
    const started = await node.startMps(label, options.paths, visible);
    if (!started.ok) throw new NotMeasured(`the MPS daemon did not start: ${started.reason}`);
    daemon = started.daemon;
    for (const command of defaults) {
      const answer = await daemon.ask(command);
      if (answer === null) throw new NotMeasured(`the MPS daemon did not take "${command}"`);
    }
    return await body(daemon, roles);
  } finally {
    node.leftPids.push(...(await roles.stopAll()));
    remove();
    if (daemon !== null) await daemon.stop();
  }
}

/** The PIDs of every client of the daemon's servers; null when no server runs (no client attached). */
export async function clientsOf(daemon: SessionDaemon): Promise<number[] | null> {
  const servers = parsePids((await daemon.ask('get_server_list')) ?? '');
  if (servers.length === 0) return null;
  const clients: number[] = [];
  for (const s of servers) clients.push(...parsePids((await daemon.ask(`get_client_list ${s}`)) ?? ''));
  return clients;
}

/** The probe's smcap role: SMs it sees and the fp16 GEMM rate it reaches. */
export async function smcap(roles: Roles, env: Record<string, string>): Promise<{ sms: number; tflops: number }> {
  const m = await roles.start('smcap', 'smcap', [], env).expect(['result']);
  return { sms: num(m.sms), tflops: num(m.tflops) };
}

/** The probe's hog role: allocates 1 GiB blocks (then 64 MiB) up to `boundMib`; left running, holding it. */
export async function hog(
  roles: Roles,
  boundMib: number,
  env: Record<string, string>,
): Promise<{ role: Role; heldMib: number; error: string | null }> {
  const role = roles.start('hog', 'hog', ['--chunk-mib', '1024', '--max-mib', String(boundMib)], env);
  await role.expect(['ready']);
  const m = await role.expect(['result']);
  return { role, heldMib: num(m.heldMib), error: typeof m.error === 'string' ? m.error : null };
}

/** The probe's context role: cuMemGetInfo's free and total, left running so the daemon can be asked about it. */
export async function context(
  roles: Roles,
  env: Record<string, string>,
): Promise<{ role: Role; pid: number; freeMib: number; totalMib: number }> {
  const role = roles.start('context', 'context', [], env);
  const m = await role.expect(['ready']);
  return { role, pid: num(m.pid), freeMib: num(m.freeMib), totalMib: num(m.totalMib) };
}
