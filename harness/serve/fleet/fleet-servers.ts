/**
 * A mode's running servers across the steps of a fleet search: between steps, the servers the next size
 * needs and lacks are started, those it no longer has (or whose environment changed: a thread cap from a
 * share that moved) are stopped, and the rest keep running, so a step restarts only what changed.
 */
import { WorkloadGroup } from '../../workload/group.js';
import { type Copies, type CopyGroup, type CopySet, fillCommand, type MemberPlan, startMembers } from '../copies.js';
import type { FleetServer } from './fleet-file.js';

/** {mem_fraction}'s decimals for a fleet's servers (as fleet-measure.ts's). */
const MEM_DIGITS = 4;

interface Running {
  copies: Copies;
  env: string;
}

/** What a resize did: servers started, stopped and kept; the group of the step's servers in its order, or why not. */
export type Resized =
  | { group: CopyGroup; started: number; stopped: number; kept: number; problem: null }
  | { group: null; started: number; stopped: number; kept: number; problem: string };

/** A server's identity across sizes: its kind and its place among the kind's servers. */
const keyOf = (s: FleetServer, place: number) => `${s.kind}\u0000${place}`;

export class FleetServers {
  private readonly running = new Map<string, Running>();
  /** {index} of the next server started: never reused while the mode runs, so two running servers never share one. */
  private nextIndex = 1;
  readonly warnings: string[] = [];

  constructor(
    private readonly set: CopySet,
    private readonly label: string,
  ) {}

  /** Runs exactly `servers` (each with its environment): starts the missing, stops the extra, keeps the rest. */
  async resize(servers: readonly FleetServer[], envOf: (s: FleetServer) => Record<string, string>): Promise<Resized> {
    const places = new Map<string, number>();
    const wanted = servers.map((s) => {
      const place = (places.get(s.kind) ?? 0) + 1;
      places.set(s.kind, place);
      const env = envOf(s);
      return { key: keyOf(s, place), server: s, env, envText: JSON.stringify(env) };
    });
    const extra = [...this.running.entries()].filter(
      ([key, r]) => !wanted.some((w) => w.key === key && w.envText === r.env),
    );
    await this.stopKeys(extra.map(([key]) => key));
    // The missing servers start together: one after another, or at once under --start parallel (startMembers).
    const missing = wanted.filter((w) => !this.running.has(w.key));
    const plans = missing.map((w): MemberPlan => {
      const index = this.nextIndex++;
      return {
        index,
        label: `${this.label} ${w.server.label}`,
        command: (port) =>
          fillCommand(
            w.server.command,
            { port, index, gpuUuid: this.set.gpuUuid, memFraction: w.server.memFraction },
            MEM_DIGITS,
          ),
        env: w.env,
      };
    });
    const up = await startMembers(this.set, plans);
    if (up.copies === null) return { group: null, started: 0, stopped: extra.length, kept: 0, problem: up.problem };
    missing.forEach((w, k) => {
      this.running.set(w.key, { copies: up.each[k] as Copies, env: w.envText });
    });
    const started = missing.length;
    const members = wanted.flatMap((w) => this.running.get(w.key)?.copies.members ?? []);
    return {
      group: WorkloadGroup.of(members, this.set.clock),
      started,
      stopped: extra.length,
      kept: wanted.length - started,
      problem: null,
    };
  }

  /** Stops every server still running. */
  async stopAll(): Promise<void> {
    await this.stopKeys([...this.running.keys()]);
  }

  private async stopKeys(keys: readonly string[]): Promise<void> {
    const stopping = keys.flatMap((key) => {
      const r = this.running.get(key);
      this.running.delete(key);
      return r === undefined ? [] : [r.copies.stop()];
    });
    for (const left of await Promise.all(stopping)) this.warnings.push(...left);
  }
}
