/** A workload process speaking the protocol as a member of a WorkloadGroup: WorkloadClient behind GroupMember. */
import type { ProcessRunner } from '../core/process.js';
import { WorkloadClient } from './client.js';
import type { CollectReply, GroupMember, MemberReply } from './group.js';
import { encodeRunCommand, type ReadyMessage, type ResultMessage, type RunCommand } from './protocol.js';

/** A protocol workload in a group: released by a run command, answering a result. */
export class ProtocolMember implements GroupMember<RunCommand, ResultMessage, ReadyMessage> {
  private started: WorkloadClient | null;
  /** The tenants the command last released named (null: a process of one): its result must answer for each. */
  private named: readonly number[] | null = null;

  private constructor(
    private readonly spawn: (() => WorkloadClient) | null,
    client: WorkloadClient | null,
    private readonly peekReady: boolean,
    private readonly fallbackLabel: string,
  ) {
    this.started = client;
  }

  /** A process started (by the group) with `argv` and `env`, as client `index`; `label` names it in failures. */
  static process(
    runner: ProcessRunner,
    index: number,
    label: string,
    argv: readonly string[],
    env: Record<string, string>,
  ): ProtocolMember {
    return new ProtocolMember(() => WorkloadClient.start(runner, index, label, argv, env), null, false, label);
  }

  /**
   * A client already started (bench's pool, a run's own client). peekReady: its ready line is left
   * for the next awaitReady (the check of a run's own client, before the run takes it).
   */
  static over(client: WorkloadClient, options: { peekReady?: boolean } = {}): ProtocolMember {
    return new ProtocolMember(null, client, options.peekReady ?? false, client.label);
  }

  /** The process; only after start. */
  get client(): WorkloadClient {
    if (this.started === null) throw new Error(`${this.fallbackLabel}: used before it was started`);
    return this.started;
  }

  get label(): string {
    return this.started?.label ?? this.fallbackLabel;
  }

  start(): void {
    if (this.started === null && this.spawn !== null) this.started = this.spawn();
  }

  ready(timeoutMs: number, signal: AbortSignal): Promise<MemberReply<ReadyMessage>> {
    return this.peekReady ? this.client.peekReady(timeoutMs, signal) : this.client.awaitReady(timeoutMs, signal);
  }

  release(command: RunCommand): void {
    this.named = command.tenants ?? null;
    this.client.release(encodeRunCommand(command), command.trial);
  }

  async collect(timeoutMs: number, signal: AbortSignal): Promise<CollectReply<ResultMessage>> {
    const reply = await this.client.collect(timeoutMs, signal);
    const named = this.named;
    if (reply.kind !== 'message' || named === null) return reply;
    const answered = (reply.message.tenants ?? []).map((t) => t.tenant);
    const distinct = [...new Set(answered)];
    if (
      answered.length !== named.length ||
      distinct.length !== named.length ||
      named.some((k) => !distinct.includes(k))
    )
      return {
        kind: 'malformed',
        problem: `answered for tenants [${distinct.join(', ')}] instead of [${named.join(', ')}]`,
      };
    return reply;
  }

  stop(timeoutMs: number): Promise<'exited' | 'killed'> {
    return this.client.close(timeoutMs);
  }

  kill(): void {
    this.started?.kill();
  }

  stderrTail(): string {
    return this.started?.stderrTail() ?? '';
  }
}
