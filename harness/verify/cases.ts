/**
 * The known silent failures of MPS limits (NVIDIA's "Per-GPU Compute and Memory Limits with MPS",
 * Verified Behavior; nebuly-ai/nos#38; Project-HAMi/HAMi#2135), each run deliberately on this node
 * with a private daemon: `reproduced`, `not reproduced`, or `skipped` with the reason. Each decision
 * is a pure function of what was measured (tested on recorded output).
 */
import { pluginMpsLimits } from '../deploy/k8s.js';
import { chooseMpsDirectory } from '../system/mps/ownership.js';
import type { Declared } from './declared.js';
import { clientsOf, context, hog, smcap, type VerifyNode, withMps, withoutMps } from './node.js';
import { NotMeasured, num, type Role } from './roles.js';
import { BANDWIDTH_LOSS_TOLERANCE, MEMORY_TOLERANCE_MIB, THREAD_TOLERANCE_PTS } from './verdicts.js';

export type CaseResult = 'reproduced' | 'not reproduced' | 'skipped';

export interface CaseOutcome {
  name: CaseName;
  /** What it needs of the node: one GPU, two GPUs, MIG. */
  needs: string;
  outcome: CaseResult;
  /** What was measured (or why it was skipped). */
  evidence: string;
}

/** The limit every memory case declares: 4 GiB, as NVIDIA's page and issue 39 used. */
export const CASE_LIMIT = '4G';
const CASE_LIMIT_MIB = 4096;
/** What a memory case asks to allocate: twice its limit, so an ignored limit shows plainly. */
const CASE_BOUND_MIB = 2 * CASE_LIMIT_MIB;

export const CASES = {
  'pipe-missing': { needs: 'one GPU', what: 'a client whose CUDA_MPS_PIPE_DIRECTORY does not exist' },
  'pipe-misspelled': { needs: 'one GPU', what: 'a client given the pipe directory under a misspelled variable' },
  'limit-invisible-gpu': {
    needs: 'one GPU',
    what: 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4G,1=4G where GPU 1 is not visible',
  },
  'limit-bare-size': { needs: 'one GPU', what: 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=4G, no device index' },
  'memory-total-trap': { needs: 'one GPU', what: 'cudaMemGetInfo total under a 0=4G limit' },
  'bandwidth-not-partitioned': {
    needs: 'one GPU',
    what: 'what a client capped at 50% of the threads loses when its neighbour saturates memory bandwidth',
  },
  'daemon-after-client': { needs: 'one GPU', what: 'a client started before its MPS daemon' },
  'replicas-mismatch': {
    needs: 'one GPU',
    what: "a device-plugin replicas count whose implied caps differ from the scripts'",
  },
  'limit-two-visible-gpus': {
    needs: 'two GPUs',
    what: 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4G,1=4G with both GPUs visible (the control of limit-invisible-gpu)',
  },
  'mig-parted-no-devices': { needs: 'MIG enabled', what: 'mig-parted reports success and creates no MIG devices' },
} as const;
export type CaseName = keyof typeof CASES;
export const CASE_NAMES = Object.keys(CASES) as CaseName[];

const mib = (x: number) => `${Math.round(x)} MiB`;

/** A limit that did nothing: the client allocated past it. */
export function limitIgnored(m: { heldMib: number; limitMib: number }): CaseResult {
  return m.heldMib > m.limitMib + MEMORY_TOLERANCE_MIB ? 'reproduced' : 'not reproduced';
}

/** A client outside MPS: not the daemon's client, and past the daemon's limit. */
export function outsideMps(m: { heldMib: number; limitMib: number; attached: boolean }): CaseResult {
  return !m.attached && limitIgnored(m) === 'reproduced' ? 'reproduced' : 'not reproduced';
}

/** Under a limit that holds (free ≤ limit), total still reports more than the limit. */
export function totalTrap(m: { freeMib: number; totalMib: number; limitMib: number }): CaseResult {
  return m.freeMib <= m.limitMib + MEMORY_TOLERANCE_MIB && m.totalMib > m.limitMib + MEMORY_TOLERANCE_MIB
    ? 'reproduced'
    : 'not reproduced';
}

/** The neighbour lost more than the tolerance of the bandwidth it had alone. */
export function bandwidthShared(m: { aloneGBps: number; besideGBps: number }): CaseResult {
  return m.aloneGBps > 0 && m.besideGBps < m.aloneGBps * (1 - BANDWIDTH_LOSS_TOLERANCE)
    ? 'reproduced'
    : 'not reproduced';
}

/** Under the plugin's daemon the client got a share other than the scripts' cap. */
export function capDiffers(m: { scriptPct: number; measuredShare: number }): CaseResult {
  return Math.abs(m.measuredShare * 100 - m.scriptPct) > THREAD_TOLERANCE_PTS ? 'reproduced' : 'not reproduced';
}

export interface CaseContext {
  node: VerifyNode;
  declared: Declared;
  /** gpushare's own environment: a CUDA_MPS_PIPE_DIRECTORY there would reach every client. */
  hostEnv: Readonly<Record<string, string | undefined>>;
  /** A control socket answers at the default pipe directory (fingerprint). */
  defaultDaemon: boolean;
}

type Measured =
  | { outcome: Exclude<CaseResult, 'skipped'>; evidence: string }
  | { outcome: 'skipped'; evidence: string };

async function memoryCase(
  ctx: CaseContext,
  label: string,
  clientEnv: (daemonEnv: Record<string, string>) => Record<string, string>,
  defaults: string[],
  decide: (m: { heldMib: number; limitMib: number; attached: boolean }) => CaseResult,
): Promise<Measured> {
  return withMps(ctx.node, label, defaults, async (daemon, roles) => {
    const h = await hog(roles, CASE_BOUND_MIB, clientEnv(daemon.env));
    const clients = await clientsOf(daemon);
    const attached = h.role.pid !== null && clients !== null ? clients.includes(h.role.pid) : false;
    return {
      outcome: decide({ heldMib: h.heldMib, limitMib: CASE_LIMIT_MIB, attached }),
      evidence: `allocated ${mib(h.heldMib)} of ${mib(CASE_BOUND_MIB)} asked for against a ${CASE_LIMIT} limit, ${h.error ? 'then out of memory' : 'no error'}; ${attached ? 'a client of the MPS server' : 'not a client of the MPS server'}`,
    };
  });
}

const RUNNERS: Record<CaseName, (ctx: CaseContext) => Promise<Measured>> = {
  'pipe-missing': (ctx) =>
    memoryCase(
      ctx,
      'pipe-missing',
      (env) => ({ CUDA_MPS_PIPE_DIRECTORY: `${env.CUDA_MPS_PIPE_DIRECTORY}-missing` }),
      [`set_default_device_pinned_mem_limit 0 ${CASE_LIMIT}`],
      outsideMps,
    ),
  'pipe-misspelled': async (ctx) => {
    if (ctx.hostEnv.CUDA_MPS_PIPE_DIRECTORY !== undefined)
      return {
        outcome: 'skipped',
        evidence: "CUDA_MPS_PIPE_DIRECTORY is set in gpushare's own environment, which every client inherits",
      };
    if (ctx.defaultDaemon)
      return {
        outcome: 'skipped',
        evidence: 'an MPS daemon answers at the default pipe directory: the client would join it',
      };
    return memoryCase(
      ctx,
      'pipe-misspelled',
      (env) => ({ CUDA_MPS_PIPE_DIRECTRY: env.CUDA_MPS_PIPE_DIRECTORY ?? '' }),
      [`set_default_device_pinned_mem_limit 0 ${CASE_LIMIT}`],
      outsideMps,
    );
  },
  'limit-invisible-gpu': (ctx) =>
    memoryCase(
      ctx,
      'limit-invisible',
      (env) => ({ ...env, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: '0=4G,1=4G' }),
      [],
      limitIgnored,
    ),
  'limit-bare-size': (ctx) =>
    memoryCase(
      ctx,
      'limit-bare',
      (env) => ({ ...env, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: CASE_LIMIT }),
      [],
      limitIgnored,
    ),
  'memory-total-trap': (ctx) =>
    withMps(ctx.node, 'total-trap', [], async (daemon, roles) => {
      const c = await context(roles, { ...daemon.env, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: `0=${CASE_LIMIT}` });
      return {
        outcome: totalTrap({ freeMib: c.freeMib, totalMib: c.totalMib, limitMib: CASE_LIMIT_MIB }),
        evidence: `under 0=${CASE_LIMIT}, cudaMemGetInfo: ${mib(c.freeMib)} free of ${mib(c.totalMib)} total`,
      };
    }),
  'bandwidth-not-partitioned': (ctx) =>
    withMps(ctx.node, 'bandwidth', ['set_default_active_thread_percentage 50'], async (daemon, roles) => {
      const flags = ['--seconds', '2', '--mib', '1024'];
      const neighbour = roles.start('neighbour', 'bandwidth', flags, daemon.env);
      const saturator = roles.start('saturator', 'bandwidth', flags, daemon.env);
      await neighbour.expect(['ready']);
      await saturator.expect(['ready']);
      neighbour.send({ cmd: 'go' });
      const alone = num((await neighbour.expect(['result'])).gbps);
      neighbour.send({ cmd: 'go' });
      saturator.send({ cmd: 'go' });
      const beside = num((await neighbour.expect(['result'])).gbps);
      const other = num((await saturator.expect(['result'])).gbps);
      return {
        outcome: bandwidthShared({ aloneGBps: alone, besideGBps: beside }),
        evidence: `each client capped at 50% of the threads: the neighbour copied ${alone.toFixed(0)} GB/s alone and ${beside.toFixed(0)} GB/s beside a saturating client (${other.toFixed(0)} GB/s), ${((1 - beside / alone) * 100).toFixed(0)}% lost (tolerance ${BANDWIDTH_LOSS_TOLERANCE * 100}%)`,
      };
    }),
  'daemon-after-client': (ctx) => {
    const paths = chooseMpsDirectory();
    let early: Role | null = null;
    return withMps(
      ctx.node,
      'daemon-after',
      [`set_default_device_pinned_mem_limit 0 ${CASE_LIMIT}`],
      async (daemon, roles) => {
        const client: Role | null = early;
        if (client === null) throw new NotMeasured('the early client did not start');
        const ask = CASE_LIMIT_MIB + 1024;
        client.send({ cmd: 'alloc', mib: ask });
        const reply = await client.expect(['alloc']);
        const clients = await clientsOf(daemon);
        const attached = client.pid !== null && (clients?.includes(client.pid) ?? false);
        // A late client of the same daemon, for contrast: it is attached and limited.
        const late = await hog(roles, CASE_LIMIT_MIB + 1024, daemon.env);
        return {
          outcome: reply.ok === true && !attached ? 'reproduced' : 'not reproduced',
          evidence: `the client started before the daemon ${reply.ok === true ? 'allocated' : 'could not allocate'} ${mib(ask)} past its ${CASE_LIMIT} default and is ${attached ? '' : 'not '}its client; one started after it held ${mib(late.heldMib)}`,
        };
      },
      {
        paths,
        before: async (roles) => {
          const role = roles.start('early', 'tenant', [], { CUDA_MPS_PIPE_DIRECTORY: paths.pipeDirectory });
          await role.expect(['ready']);
          early = role;
        },
      },
    );
  },
  'replicas-mismatch': async (ctx) => {
    const mps = ctx.declared.mps;
    const scriptPct = mps?.threadPct ?? null;
    if (scriptPct === null)
      return { outcome: 'skipped', evidence: 'the files declare no MPS thread cap to compare with' };
    // Deliberately not the scripts' count: half as many replicas as the scripts' cap implies.
    const replicas = Math.max(2, Math.floor(Math.floor(100 / scriptPct) / 2));
    const implied = pluginMpsLimits(replicas, ctx.node.gpu.memoryTotalMiB ?? 0);
    if (implied.threadPct === scriptPct)
      return { outcome: 'skipped', evidence: `${replicas} replicas imply the scripts' own ${scriptPct}%` };
    const full = await withoutMps(ctx.node, (roles) => smcap(roles, {}));
    return withMps(
      ctx.node,
      'replicas',
      [`set_default_active_thread_percentage ${implied.threadPct}`],
      async (daemon, roles) => {
        const capped = await smcap(roles, daemon.env);
        const share = capped.tflops / full.tflops;
        return {
          outcome: capDiffers({ scriptPct, measuredShare: share }),
          evidence: `a plugin of ${replicas} MPS replicas sets ${implied.threadPct}% and ${mib(implied.memLimitMiB)} per client; the scripts declare ${scriptPct}%${mps?.pinnedMemLimit ? ` and ${mps.pinnedMemLimit}` : ''}; under the plugin's cap a client reached ${(share * 100).toFixed(0)}% of the uncapped GEMM rate`,
        };
      },
    );
  },
  'limit-two-visible-gpus': async (ctx) => {
    if (ctx.node.gpuIndices.length < 2)
      return { outcome: 'skipped', evidence: `needs two GPUs; this node has ${ctx.node.gpuIndices.length}` };
    // The control of limit-invisible-gpu: the same list, every GPU visible to the daemon and the client.
    return withMps(
      ctx.node,
      'limit-two-visible',
      [],
      async (daemon, roles) => {
        const h = await hog(roles, CASE_BOUND_MIB, { ...daemon.env, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: '0=4G,1=4G' });
        return {
          outcome: limitIgnored({ heldMib: h.heldMib, limitMib: CASE_LIMIT_MIB }),
          evidence: `with GPUs ${ctx.node.visibleAll} visible, 0=4G,1=4G: the client allocated ${mib(h.heldMib)} of ${mib(CASE_BOUND_MIB)} on its first GPU`,
        };
      },
      { visibleDevices: ctx.node.visibleAll },
    );
  },
  'mig-parted-no-devices': async (ctx) => ({
    outcome: 'skipped',
    evidence: `needs MIG enabled (it is ${ctx.node.gpu.migModeCurrent ?? 'not reported'} here) and nvidia-mig-parted run as root, which gpushare never does`,
  }),
};

/** Runs one case; a probe that did not measure is `skipped` with the reason. */
export async function runCase(name: CaseName, ctx: CaseContext): Promise<CaseOutcome> {
  try {
    const m = await RUNNERS[name](ctx);
    return { name, needs: CASES[name].needs, ...m };
  } catch (error) {
    if (!(error instanceof NotMeasured)) throw error;
    return { name, needs: CASES[name].needs, outcome: 'skipped', evidence: `could not run: ${error.message}` };
  }
}
