/**
 * One row per limit the files declare, each checked on this node with a short real probe: the
 * scripts' daemon defaults on a private daemon (thread cap: the probe's smcap against the same client
 * uncapped; memory: the probe's hog and cuMemGetInfo; attachment: the daemon's client list), each mix
 * client's own cap, the GPUs the scripts name, the device plugin's replicas, and a MIG geometry.
 */
import { FLEET_LAUNCHER } from '../deploy/fleet/files.js';
import { pluginMpsLimits } from '../deploy/k8s.js';
import { type Declared, type DeclaredMps, type DeclaredPlugin, sizeMib } from './declared.js';
import { distinctLimits } from './declared-fleet.js';
import { clientsOf, context, hog, smcap, type VerifyNode, withMps, withoutMps } from './node.js';
import { NotMeasured, type Roles } from './roles.js';
import {
  attachVerdict,
  type Judged,
  memInfoVerdict,
  memoryLimitVerdict,
  migVerdict,
  type Row,
  replicasVerdict,
  threadCapVerdict,
  visibleDevicesVerdict,
} from './verdicts.js';

/** How far past a pinned-memory limit the memory probe asks to allocate, MiB. */
export const OVER_LIMIT_MIB = 2048;

const row = (id: string, declared: string, judged: Judged): Row => ({ id, declared, ...judged });

/** The daemon commands of the start script, for a daemon serving one GPU (index 0 within it). */
export function scriptDefaults(mps: DeclaredMps): string[] {
  return [
    ...(mps.threadPct !== null ? [`set_default_active_thread_percentage ${mps.threadPct}`] : []),
    ...(mps.pinnedMemLimit !== null ? [`set_default_device_pinned_mem_limit 0 ${mps.pinnedMemLimit}`] : []),
  ];
}

async function measured(id: string, declared: string, tolerance: string, probe: () => Promise<Judged>): Promise<Row> {
  try {
    return row(id, declared, await probe());
  } catch (error) {
    if (!(error instanceof NotMeasured)) throw error;
    return { id, declared, measured: error.message, verdict: 'not measured', tolerance, change: null };
  }
}

/** Rows that need no probe: the GPUs named, the plugin's implied caps, the MIG devices listed. */
export function staticRows(declared: Declared, node: Pick<VerifyNode, 'gpu' | 'gpuIndices'>): Row[] {
  const rows: Row[] = [];
  const mps = declared.mps;
  if (mps)
    rows.push(
      row(
        'mps.gpus',
        `the scripts serve GPU ${mps.gpus === 'all' ? 'all' : mps.gpus.join(', ')}`,
        visibleDevicesVerdict(mps.gpus, node.gpuIndices),
      ),
    );
  for (const p of declared.plugin.filter((x) => x.strategy === 'timeSlicing'))
    rows.push({
      id: `plugin.${p.key}`,
      declared: `device plugin ${p.key}: ${p.replicas} time-slicing replicas per GPU`,
      measured: "time-slicing sets no per-client limit: each replica may use the whole GPU's memory and SMs",
      verdict: 'skipped',
      tolerance: '',
      change: null,
    });
  if (Object.keys(declared.mig).length > 0) {
    const declaredText = `mig-parted geometries: ${Object.keys(declared.mig).join(', ')}`;
    if (node.gpu.migModeCurrent !== 'Enabled')
      rows.push({
        id: 'mig.geometry',
        declared: declaredText,
        measured: `MIG is ${node.gpu.migModeCurrent ?? 'not reported'} on this GPU: enabling it needs an administrator and a GPU reset, which gpushare never does`,
        verdict: 'skipped',
        tolerance: 'exact',
        change: null,
      });
    else {
      const devices: Record<string, number> = {};
      for (const d of node.gpu.migDevices) devices[d.profile] = (devices[d.profile] ?? 0) + 1;
      rows.push(row('mig.geometry', declaredText, migVerdict(declared.mig, devices)));
    }
  }
  return rows;
}

/** Every row: the static ones, then the probes on a private daemon set up as the scripts set theirs. */
export async function verifyRows(declared: Declared, node: VerifyNode): Promise<Row[]> {
  const rows = staticRows(declared, node);
  const mps = declared.mps;
  const caps = [
    ...(mps?.threadPct != null ? [mps.threadPct] : []),
    ...declared.clients.map((c) => c.threadPct),
    ...declared.plugin.filter((p) => p.strategy === 'mps').map((p) => p.replicas),
    ...(declared.servers ?? []).flatMap((s) => (s.threadPct !== null ? [s.threadPct] : [])),
  ];
  // The uncapped rate every thread cap is a share of: the same client, alone, outside MPS.
  let full: { sms: number; tflops: number } | NotMeasured | null = null;
  if (caps.length > 0)
    full = await withoutMps(node, (roles) => smcap(roles, {})).catch((e: unknown) => {
      if (e instanceof NotMeasured) return new NotMeasured(`the uncapped client: ${e.message}`);
      throw e;
    });
  const uncapped = () => {
    if (full instanceof NotMeasured) throw full;
    if (full === null) throw new NotMeasured('no uncapped rate');
    return full;
  };
  for (const p of declared.plugin.filter((x) => x.strategy === 'mps'))
    rows.push(await pluginRow(p, declared, node, uncapped));
  if (mps) {
    const limitMib = mps.pinnedMemLimit !== null ? sizeMib(mps.pinnedMemLimit) : null;
    const daemonRows = await withMps(node, 'scripts', scriptDefaults(mps), async (daemon, roles) => {
      const env = daemon.env;
      const out: Row[] = [];
      out.push(
        await measured('mps.attach', `clients use pipe directory ${mps.pipeDirectory}`, 'exact', async () => {
          const c = await context(roles, env);
          const judged = attachVerdict({ clientPid: c.pid, clientPids: await clientsOf(daemon) });
          if (limitMib !== null)
            out.push(
              row(
                'mps.meminfo',
                `cudaMemGetInfo under the ${mps.pinnedMemLimit} limit`,
                memInfoVerdict(limitMib, { freeMib: c.freeMib, totalMib: c.totalMib }),
              ),
            );
          await c.role.stop(10_000);
          return judged;
        }),
      );
      if (mps.threadPct !== null) {
        const pct = mps.threadPct;
        out.push(
          await measured('mps.thread-pct', `set_default_active_thread_percentage ${pct}`, '', async () =>
            threadCapVerdict(pct, { capped: await smcap(roles, env), full: uncapped() }),
          ),
        );
      }
      if (limitMib !== null) {
        const bound = limitMib + OVER_LIMIT_MIB;
        out.push(
          await measured(
            'mps.pinned-mem',
            `set_default_device_pinned_mem_limit ${mps.pinnedMemLimit}`,
            '',
            async () => {
              const h = await hog(roles, bound, env);
              await h.role.stop(10_000);
              return memoryLimitVerdict(limitMib, { heldMib: h.heldMib, boundMib: bound, error: h.error });
            },
          ),
        );
      }
      for (const c of declared.clients)
        out.push(
          await measured(
            `client.${c.role}.thread-pct`,
            `gpushare-mix-client.sh ${c.role}: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=${c.threadPct}`,
            '',
            async () =>
              threadCapVerdict(c.threadPct, {
                capped: await smcap(roles, { ...env, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(c.threadPct) }),
                full: uncapped(),
              }),
          ),
        );
      out.push(...(await fleetRows(declared, roles, env, uncapped)));
      return out;
    }).catch((e: unknown) => {
      if (!(e instanceof NotMeasured)) throw e;
      // A fleet's limits too: each one the launcher declares is "not measured", never missing from the table.
      const fleet = declared.servers ?? [];
      const ids = [
        'mps.attach',
        ...(mps.threadPct !== null ? ['mps.thread-pct'] : []),
        ...distinctLimits(fleet, (s) => s.threadPct).map((l) => `fleet.thread-pct.${l.value}`),
        ...distinctLimits(fleet, (s) => s.memLimitMiB).map((l) => `fleet.pinned-mem.${l.value}`),
      ];
      return ids.map<Row>((id) => ({
        id,
        declared: 'the start script',
        measured: e.message,
        verdict: 'not measured',
        tolerance: '',
        change: null,
      }));
    });
    rows.push(...daemonRows);
  }
  return rows;
}

/**
 * A fleet's servers, each a client with its own limits in its environment (gpushare-fleet-server.sh): one
 * probe per distinct limit, as a client of the scripts' daemon with that limit set, naming its servers.
 */
async function fleetRows(
  declared: Declared,
  roles: Roles,
  env: Record<string, string>,
  uncapped: () => { sms: number; tflops: number },
): Promise<Row[]> {
  const servers = declared.servers ?? [];
  const names = (list: string[]) =>
    list.length > 4 ? `${list.slice(0, 4).join(', ')} and ${list.length - 4} more` : list.join(', ');
  const rows: Row[] = [];
  for (const l of distinctLimits(servers, (s) => s.threadPct))
    rows.push(
      await measured(
        `fleet.thread-pct.${l.value}`,
        `${FLEET_LAUNCHER} ${names(l.servers)}: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=${l.value}`,
        '',
        async () =>
          threadCapVerdict(l.value, {
            capped: await smcap(roles, { ...env, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(l.value) }),
            full: uncapped(),
          }),
      ),
    );
  for (const l of distinctLimits(servers, (s) => s.memLimitMiB))
    rows.push(
      await measured(
        `fleet.pinned-mem.${l.value}`,
        `${FLEET_LAUNCHER} ${names(l.servers)}: CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=${l.value}M`,
        '',
        async () => {
          const bound = l.value + OVER_LIMIT_MIB;
          const h = await hog(roles, bound, { ...env, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: `0=${l.value}M` });
          await h.role.stop(10_000);
          return memoryLimitVerdict(l.value, { heldMib: h.heldMib, boundMib: bound, error: h.error });
        },
      ),
    );
  return rows;
}

const WORSE: Record<Judged['verdict'], number> = { enforced: 0, partly: 1, 'not enforced': 2 };

/**
 * The device plugin's MPS sharing: its own daemon gives each of `replicas` clients 100 ÷ replicas % of
 * the threads and the GPU's memory ÷ replicas (pluginMpsLimits). Measured on a private daemon set up
 * as the plugin sets its; the host scripts' caps, where they differ, are named in what to change.
 */
async function pluginRow(
  p: DeclaredPlugin,
  declared: Declared,
  node: VerifyNode,
  uncapped: () => { sms: number; tflops: number },
): Promise<Row> {
  const memMiB = node.gpu.memoryTotalMiB;
  const id = `plugin.${p.key}`;
  if (memMiB === null)
    return {
      id,
      declared: `device plugin ${p.key}: ${p.replicas} MPS replicas per GPU`,
      measured: 'nvidia-smi gave no memory total for the GPU',
      verdict: 'not measured',
      tolerance: '',
      change: null,
    };
  const implied = pluginMpsLimits(p.replicas, memMiB);
  const declaredText = `device plugin ${p.key}: ${p.replicas} MPS replicas per GPU, so ${implied.threadPct}% and ${implied.memLimitMiB} MiB per client`;
  const row = await measured(id, declaredText, '', () =>
    withMps(
      node,
      p.key,
      [
        `set_default_active_thread_percentage ${implied.threadPct}`,
        `set_default_device_pinned_mem_limit 0 ${implied.memLimitMiB}M`,
      ],
      async (daemon, roles) => {
        const thread = threadCapVerdict(implied.threadPct, {
          capped: await smcap(roles, daemon.env),
          full: uncapped(),
        });
        const bound = implied.memLimitMiB + OVER_LIMIT_MIB;
        const h = await hog(roles, bound, daemon.env);
        await h.role.stop(10_000);
        const memory = memoryLimitVerdict(implied.memLimitMiB, { heldMib: h.heldMib, boundMib: bound, error: h.error });
        const worst = WORSE[thread.verdict] >= WORSE[memory.verdict] ? thread : memory;
        return {
          verdict: worst.verdict,
          measured: `${thread.measured}; ${memory.measured}`,
          tolerance: `${thread.tolerance}; memory ${memory.tolerance}`,
          change: worst.change,
        };
      },
    ),
  );
  // The host scripts declare their own caps: where they differ, a pod of this config gets other limits.
  const mps = declared.mps;
  if (mps && row.verdict !== 'not measured') {
    const scripts = {
      threadPct: mps.threadPct,
      memLimitMib: mps.pinnedMemLimit !== null ? sizeMib(mps.pinnedMemLimit) : null,
    };
    const consistency = replicasVerdict(p.replicas, implied, scripts);
    if (consistency.verdict !== 'enforced')
      row.change = [row.change, `the host scripts differ: ${consistency.measured}; ${consistency.change}`]
        .filter(Boolean)
        .join('; ');
  }
  return row;
}
