/**
 * Which processes serve which comparisons: how many a comparison has, whether the next one's may start
 * while it measures, whether its own may switch or grow into the next one's, and which plain process
 * (see ALONE_ARM) a comparison shares with others. Pure functions of the plan, read by the pool's
 * policies and by --dry-run's estimate.
 */
import type { Comparison, Config } from '../record/schema.js';

/**
 * The environment of the plain process that measures `c`'s alone arm: client 0's CPU pin and nothing of
 * the mode (no MPS limits, no green context, no tenants).
 */
export function plainEnv(c: Pick<Comparison, 'clientEnv'>): Record<string, string> {
  const cpus = c.clientEnv[0]?.GPUSHARE_CPUS;
  return cpus !== undefined ? { GPUSHARE_CPUS: cpus } : {};
}

/** What makes two comparisons' plain processes one: the same command, parameters and CPU pin. */
export function plainKey(c: Pick<Comparison, 'workload' | 'clientEnv'>): string {
  return JSON.stringify([c.workload.argv, c.workload.params, plainEnv(c)]);
}

/** A comparison's workload processes: one for in-process tenancy, else one per client. */
export function processCount(c: Pick<Comparison, 'tenants' | 'clientEnv'>): number {
  return c.tenants !== undefined ? 1 : c.clientEnv.length;
}

/**
 * Whether `next`'s clients may start while `c` measures: not with --fresh-clients; only a workload
 * known to wait for start when held (a built-in, or a command whose ready line said `holds` earlier in the run:
 * a command that does not know GPUSHARE_HOLD would start CUDA at once); and only where c's processes and
 * the `starting` importers (all of next's, or those a grown comparison adds) fit on the cores beside the
 * harness's (`cpus`; null: unknown, taken as fitting), so that importing takes no core from a measuring
 * client. An MPS comparison of a later mode may be prestarted too: the scheduler starts its daemon first
 * (an MPS client's environment must name the daemon before it starts; no client of another mode uses it).
 */
export function prestartable(
  config: Pick<Config, 'freshClients'>,
  c: Pick<Comparison, 'tenants' | 'clientEnv'>,
  next: Pick<Comparison, 'workload' | 'tenants' | 'clientEnv'>,
  cpus: number | null,
  waitsForStart = next.workload.builtin,
  starting = processCount(next),
): boolean {
  if (config.freshClients === true || !waitsForStart) return false;
  return cpus === null || processCount(c) + starting <= cpus - 1;
}

/**
 * Whether `next` may be served by `c`'s processes, told to switch workloads (protocol `switch`) instead
 * of exiting: not with --fresh-clients; only processes that said they switch (`switches`; a built-in
 * does), and only into a built-in workload (a script `serve` runs as `python3 script.py …`: a custom
 * command may need interpreter options, its own directory or a fresh stdout); the same mode (an MPS
 * client is bound to its daemon), the same interpreter, and the same processes: one per client (no
 * tenancy), with the same environments.
 */
export function switchable(
  config: Pick<Config, 'freshClients'>,
  c: Pick<Comparison, 'mode' | 'workload' | 'tenants' | 'clientEnv'>,
  next: Pick<Comparison, 'mode' | 'workload' | 'tenants' | 'clientEnv'>,
  switches = c.workload.builtin,
): boolean {
  if (config.freshClients === true || !switches || !next.workload.builtin) return false;
  if (c.tenants !== undefined || next.tenants !== undefined || c.mode !== next.mode) return false;
  if (c.workload.argv[0] !== next.workload.argv[0]) return false;
  return JSON.stringify(c.clientEnv) === JSON.stringify(next.clientEnv);
}

/**
 * Whether `next` may keep `c`'s processes as its first clients and start only the ones it adds: the
 * same workload command in the same mode with more clients (a --clients sweep), whose first clients
 * have c's environments; not with --fresh-clients, nor for in-process tenancy. Nothing is switched:
 * the processes go on serving the same workload, told each trial how many clients run at once.
 */
export function growable(
  config: Pick<Config, 'freshClients'>,
  c: Pick<Comparison, 'mode' | 'workload' | 'tenants' | 'clientEnv'>,
  next: Pick<Comparison, 'mode' | 'workload' | 'tenants' | 'clientEnv'>,
): boolean {
  if (config.freshClients === true || c.tenants !== undefined || next.tenants !== undefined) return false;
  if (c.mode !== next.mode || next.clientEnv.length <= c.clientEnv.length) return false;
  if (JSON.stringify(c.workload.argv) !== JSON.stringify(next.workload.argv)) return false;
  return JSON.stringify(next.clientEnv.slice(0, c.clientEnv.length)) === JSON.stringify(c.clientEnv);
}
