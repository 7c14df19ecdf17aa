/**
 * A group of workloads driven together: started, awaited ready within a deadline, released at one
 * CLOCK_MONOTONIC time with a typed command each, their results collected, their windows checked,
 * stopped. A member that fails, says nothing in time or answers what was not asked is an outcome
 * (`not-ready`, `lost`), never an exception; only an interruption (the abort signal) throws.
 *
 * Used by bench (pool/processes.ts: a comparison's clients started, awaited ready, and each trial's
 * window), capacity (measure.ts: a point's clients), mix (measure.ts: the victim's capacity search, a
 * mode's processes, an in-process mode's processes) and gpushare check (check.ts: a group of one).
 *
 * A member is anything that starts, says ready, is released and answers, and stops (GroupMember): a
 * workload process speaking the protocol is one (ProtocolMember, protocol-member.ts); a copy of the
 * user's HTTP inference server is another (serve/server-member.ts: released with a load, answering
 * the load run).
 *
 * How bench's client pool uses it: the pool keeps deciding which processes live across comparisons
 * (prestarted, held, switched); it starts them as a group whose reaper entries it keeps, wraps the
 * clients it acquired with `ProtocolMember.over(client)` in `WorkloadGroup.of(members, clock)` (the
 * pool, not the group, owns their lifetime), awaits `ready`, and runs each trial as one `window`
 * (`leadMs` releaseLeadMs(config.releaseLeadMs, clients)); the trial checks the answers itself
 * (implausibleResult, overlap at --min-overlap), since an invalid trial records them. It then hands
 * the clients back to the pool instead of calling `stop`.
 */
import type { Clock } from '../core/clock.js';
import { invalidStep } from './open-loop.js';
import type { WindowClaim } from './result-validity.js';

/** What waiting on a member gave: the expected message, or why not (the shape of WorkloadClient's replies). */
export type MemberReply<T> =
  | { kind: 'message'; message: T }
  | { kind: 'failed'; reason: string; exitCode: number | null; unsupported?: true }
  | { kind: 'timeout' };

/** What collecting a member's result gave: a reply, or a result that is not an answer to what was released. */
export type CollectReply<T> = MemberReply<T> | { kind: 'malformed'; problem: string };

/** One workload of a group: `Command` is what a release sends it, `Result` what it answers, `Ready` what it says when ready. */
export interface GroupMember<Command, Result, Ready> {
  /** How failures name it. */
  readonly label: string;
  /** Starts it (a no-op for one already started). */
  start(): void;
  /** Its ready message, a failure, or a timeout after `timeoutMs`; throws Interrupted when `signal` aborts. */
  ready(timeoutMs: number, signal: AbortSignal): Promise<MemberReply<Ready>>;
  /** Sends `command`; its answer is awaited by collect (every member of a window is released before any is collected). */
  release(command: Command): void;
  /** The answer to the command last released, within `timeoutMs`; throws Interrupted when `signal` aborts. */
  collect(timeoutMs: number, signal: AbortSignal): Promise<CollectReply<Result>>;
  /** Asks it to stop; kills what is left after `timeoutMs`. */
  stop(timeoutMs: number): Promise<'exited' | 'killed'>;
  /** Kills it now (a forced exit). */
  kill(): void;
  /** The end of what it wrote on its error stream (a server's log): to say why it failed. */
  stderrTail(): string;
}

/** What a wait on a group gave that is not an answer: the first member (in member order) that failed or said nothing. */
export type Lost<Reply> = { member: number; label: string; reply: Reply };

/** How awaiting ready ended: every member ready (its message, in member order), or the first that was not. */
export type ReadyOutcome<Ready> =
  | { status: 'ready'; messages: Ready[]; readyUs: number }
  | ({ status: 'not-ready' } & Lost<Exclude<MemberReply<Ready>, { kind: 'message' }>>);

/** Why a window's answers (in release order) cannot be believed (result-validity.ts), or null. */
export type WindowCheck<Result> = (results: readonly Result[], startAtUs: number, receivedUs: number) => string | null;

/** A member released in a window, and the command it is released with. */
export interface Release<Command> {
  member: number;
  command: Command;
}

/** One window: who is released with what at which time, how long they have to answer, and how the windows are checked. */
export interface WindowPlan<Command, Result> {
  /** How far ahead of now the release time is set, ms (see release.ts). */
  leadMs: number;
  /** The members released at `startAtUs` and their commands, in the order they are sent and their answers read. */
  releases(startAtUs: number): ReadonlyArray<Release<Command>>;
  /** How long each member released has to answer, ms. */
  timeoutMs: number;
  /** Why the answers cannot be believed, or null; absent: not checked. */
  check?: WindowCheck<Result>;
}

/** How a window ended: every answer, in release order, and the check's verdict; or the first member (in release order) that gave none. */
export type WindowOutcome<Result> =
  | {
      status: 'collected';
      results: Result[];
      startAtUs: number;
      receivedUs: number;
      /** Why the check refused the windows, or null. */
      invalid: string | null;
    }
  | ({ status: 'lost' } & Lost<Exclude<CollectReply<Result>, { kind: 'message' }>>);

/** Registers a killer for a forced exit, and gives the function that forgets it (system/proc/reaper.ts). */
export interface KillRegistry {
  add(kill: () => void): () => void;
}

/** Workloads started, released and stopped together. */
export class WorkloadGroup<Command, Result, Ready> {
  private forget: Array<() => void> = [];

  private constructor(
    readonly members: ReadonlyArray<GroupMember<Command, Result, Ready>>,
    private readonly clock: Clock,
  ) {}

  /** Starts every member in order, each registered with `reaper` until the group stops. */
  static start<C, R, Y>(
    members: ReadonlyArray<GroupMember<C, R, Y>>,
    clock: Clock,
    reaper: KillRegistry,
  ): WorkloadGroup<C, R, Y> {
    const group = new WorkloadGroup(members, clock);
    for (const member of members) {
      member.start();
      group.forget.push(reaper.add(() => member.kill()));
    }
    return group;
  }

  /** A group of members already started, whose lifetime its caller owns (bench's pool). */
  static of<C, R, Y>(members: ReadonlyArray<GroupMember<C, R, Y>>, clock: Clock): WorkloadGroup<C, R, Y> {
    return new WorkloadGroup(members, clock);
  }

  /** Waits for every member's ready message, each within `timeoutMs`. */
  async ready(timeoutMs: number, signal: AbortSignal): Promise<ReadyOutcome<Ready>> {
    const replies = await Promise.all(this.members.map((m) => m.ready(timeoutMs, signal)));
    const messages: Ready[] = [];
    for (const [member, reply] of replies.entries()) {
      if (reply.kind !== 'message') return { status: 'not-ready', ...this.lost(member, reply) };
      messages.push(reply.message);
    }
    return { status: 'ready', messages, readyUs: this.clock.monotonicUs() };
  }

  /** Releases the members `plan` names at one time `leadMs` ahead, collects every answer, checks them. */
  async window(plan: WindowPlan<Command, Result>, signal: AbortSignal): Promise<WindowOutcome<Result>> {
    const startAtUs = this.clock.monotonicUs() + plan.leadMs * 1000;
    const released = plan.releases(startAtUs).map(({ member, command }) => {
      const m = this.members[member];
      if (m === undefined) throw new Error(`a window released member ${member} of a group of ${this.members.length}`);
      m.release(command);
      return { member, m };
    });
    const replies = await Promise.all(released.map(({ m }) => m.collect(plan.timeoutMs, signal)));
    const receivedUs = this.clock.monotonicUs();
    const results: Result[] = [];
    for (const [i, reply] of replies.entries()) {
      if (reply.kind !== 'message') return { status: 'lost', ...this.lost(released[i]?.member ?? -1, reply) };
      results.push(reply.message);
    }
    const invalid = plan.check?.(results, startAtUs, receivedUs) ?? null;
    return { status: 'collected', results, startAtUs, receivedUs, invalid };
  }

  /** Stops every member (each within `timeoutMs`) and forgets their reaper entries: how each ended, in member order. */
  async stop(timeoutMs: number): Promise<Array<'exited' | 'killed'>> {
    const ended = await Promise.all(this.members.map((m) => m.stop(timeoutMs)));
    for (const f of this.forget) f();
    this.forget = [];
    return ended;
  }

  private lost<R>(member: number, reply: R): Lost<R> {
    return { member, label: this.members[member]?.label ?? `member ${member}`, reply };
  }
}

/** One client's window as a result claims it (WindowClaim less its index, which is its place among the windows). */
export type ClaimedWindow = Omit<WindowClaim, 'client'>;

/**
 * The check of open-loop windows of `durationMs` (capacity's steps, mix's windows): each against the
 * release time and for plausibility, then the overlap of their arrivals (open-loop.ts's invalidStep).
 * `windows` gives the clients' windows from the answers, client k the k-th (a process of tenants
 * answers for each of them); by default each answer is one client's window.
 */
export function openLoopCheck<Result>(
  durationMs: number,
  windows: (results: readonly Result[]) => readonly ClaimedWindow[] = (results) =>
    results as unknown as readonly ClaimedWindow[],
): WindowCheck<Result> {
  return (results, startAtUs, receivedUs) =>
    invalidStep(
      windows(results).map((w, client) => ({ ...w, client })),
      startAtUs,
      receivedUs,
      durationMs,
    );
}
