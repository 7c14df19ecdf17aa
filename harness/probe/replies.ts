/**
 * Asking a role of workloads/isolation.py and reading what it printed: a reply that is not what the
 * probe needs (an error, an exit, silence, a value of the wrong shape) is a ProbeFailure naming it.
 */
import type { AllocReply, LatencySeries } from './record.js';
import type { RoleMessage, RoleProcess } from './role.js';
import { PROBE_SETTINGS } from './settings.js';

/** A role did not do what the probe needs: the probe is `failed` with this reason. */
export class ProbeFailure extends Error {}

/** The next `events` message of a role, or a ProbeFailure saying why it did not come. */
export async function expect(
  role: RoleProcess,
  events: readonly string[],
  timeoutMs: number = PROBE_SETTINGS.stepTimeoutMs,
): Promise<RoleMessage> {
  const reply = await role.next([...events, 'failed'], timeoutMs);
  if (reply.kind === 'message' && events.includes(reply.message.event)) return reply.message;
  if (reply.kind === 'message') throw new ProbeFailure(`${role.label} failed: ${text(reply.message.error)}`);
  if (reply.kind === 'exited')
    throw new ProbeFailure(
      `${role.label} exited (${reply.exit.spawnError ?? `code ${reply.exit.exitCode ?? reply.exit.signal}`}) before ${events.join('/')}: ${lastLine(reply.stderr)}`,
    );
  throw new ProbeFailure(`${role.label} printed no ${events.join('/')} within ${timeoutMs / 1000} s`);
}

export async function ready(...roles: RoleProcess[]): Promise<RoleMessage[]> {
  return Promise.all(roles.map((r) => expect(r, ['ready'], PROBE_SETTINGS.readyTimeoutMs)));
}

export async function alloc(role: RoleProcess, mib: number): Promise<AllocReply> {
  role.send({ cmd: 'alloc', mib });
  const m = await expect(role, ['alloc']);
  return { mib, ok: m.ok === true, error: m.error === null || m.error === undefined ? null : text(m.error) };
}

export async function kernels(role: RoleProcess): Promise<{ kernels: number; atUs: number }> {
  role.send({ cmd: 'status' });
  const m = await expect(role, ['status']);
  return { kernels: num(m.kernels), atUs: num(m.atUs) };
}

export function series(m: Record<string, unknown>, parent?: Record<string, unknown>): LatencySeries {
  return {
    latenciesMs: list(m.latenciesMs).map(num),
    lateRequests: num(m.lateRequests),
    periodMs: num(m.periodMs ?? parent?.periodMs),
  };
}

export function num(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new ProbeFailure(`a role printed ${JSON.stringify(value)} where a number belongs`);
  return value;
}

export function list(value: unknown): unknown[] {
  if (!Array.isArray(value)) throw new ProbeFailure(`a role printed ${JSON.stringify(value)} where a list belongs`);
  return value;
}

export function records(value: unknown): Array<Record<string, unknown>> {
  return list(value).map((v) => {
    if (typeof v !== 'object' || v === null)
      throw new ProbeFailure(`a role printed ${JSON.stringify(v)} where an object belongs`);
    return v as Record<string, unknown>;
  });
}

export function text(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export function lastLine(stderr: string): string {
  return stderr.trim().split('\n').filter(Boolean).slice(-1)[0]?.slice(0, 300) ?? '';
}
