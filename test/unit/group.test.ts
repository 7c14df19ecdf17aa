/**
 * The workload group (workload/group.ts) over real processes of the simulator's python3: start, ready
 * within a deadline, a release at one time, typed outcomes for a member that never says ready, one
 * that dies after its release, and one whose window is not at the release time.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../harness/core/clock.js';
import { Reaper } from '../../harness/system/proc/reaper.js';
import { execaRunner } from '../../harness/system/proc/runner.js';
import { openLoopCheck, WorkloadGroup } from '../../harness/workload/group.js';
import {
  type ReadyMessage,
  type ResultMessage,
  type RunCommand,
  runCommandOf,
} from '../../harness/workload/protocol.js';
import { ProtocolMember } from '../../harness/workload/protocol-member.js';
import { FAKES, ROOT } from '../helpers.js';

type Group = WorkloadGroup<RunCommand, ResultMessage, ReadyMessage>;

const SPIN = [path.join(FAKES, 'python3'), path.join(ROOT, 'workloads', 'spin.py')];
/** Long enough for a fake python3 to start on a busy 2-core machine; the never-ready case waits it out. */
const READY_MS = 4000;
const WINDOW_MS = 50;

const groups: Group[] = [];
const reaper = new Reaper();

afterEach(async () => {
  await Promise.all(groups.splice(0).map((g) => g.stop(1000)));
  reaper.killAll();
});

/** `count` spin clients of the simulator; `fake` (FAKE_WORKLOAD, FAKE_WORKLOAD_CLIENT) makes one misbehave. */
function spinGroup(count: number, fake: Record<string, string> = {}): Group {
  const members = Array.from({ length: count }, (_, i) =>
    ProtocolMember.process(execaRunner, i, `spin client ${i}`, SPIN, { ...fake, GPUSHARE_CLIENT_INDEX: String(i) }),
  );
  const group = WorkloadGroup.start(members, systemClock, reaper);
  groups.push(group);
  return group;
}

/** A timed window of every member (or those `only` names), checked as capacity and mix check theirs. */
function openLoopWindow(group: Group, trial: string, only: readonly number[] | null = null) {
  const members = only ?? group.members.map((_, i) => i);
  const work = { kind: 'fixed-duration' as const, durationMs: WINDOW_MS };
  return group.window(
    {
      leadMs: 10,
      releases: (startAtUs) =>
        members.map((member) => ({
          member,
          command: runCommandOf(trial, startAtUs, work, { streams: 1 }, members.length, { kind: 'constant', qps: 200 }),
        })),
      timeoutMs: 10_000,
      check: openLoopCheck(WINDOW_MS),
    },
    new AbortController().signal,
  );
}

describe('WorkloadGroup', () => {
  it('starts, says ready, releases every member at one time and collects a checked window from each', async () => {
    const group = spinGroup(2);
    const ready = await group.ready(READY_MS, new AbortController().signal);
    expect(ready.status).toBe('ready');
    expect(ready.status === 'ready' && ready.messages.map((m) => m.workload)).toEqual(['spin', 'spin']);
    const window = await openLoopWindow(group, 'both');
    expect(window.status).toBe('collected');
    if (window.status !== 'collected') return;
    expect(window.results.map((r) => r.trial)).toEqual(['both', 'both']);
    expect(window.invalid).toBeNull();
    for (const r of window.results) expect(r.windowStartUs).toBeGreaterThanOrEqual(window.startAtUs - 1000);
    // A window of member 1 alone: one answer, in release order.
    const alone = await openLoopWindow(group, 'one', [1]);
    expect(alone.status === 'collected' && alone.results.map((r) => r.trial)).toEqual(['one']);
    expect(await group.stop(5000)).toEqual(['exited', 'exited']);
    groups.length = 0;
  });

  it('a member that never says ready is a typed outcome naming it, after the deadline; stop kills it', async () => {
    const group = spinGroup(2, { FAKE_WORKLOAD: 'never-ready', FAKE_WORKLOAD_CLIENT: '1' });
    const ready = await group.ready(READY_MS, new AbortController().signal);
    expect(ready).toEqual({ status: 'not-ready', member: 1, label: 'spin client 1', reply: { kind: 'timeout' } });
    expect(await group.stop(500)).toEqual(['exited', 'killed']);
    groups.length = 0;
  });

  it('a member that dies after its release is a typed outcome with its exit and stderr, not an exception', async () => {
    // The fake crashes on its second run command (exit 3, a CUDA error on stderr).
    const group = spinGroup(2, { FAKE_WORKLOAD: 'crash', FAKE_WORKLOAD_CLIENT: '1' });
    expect((await group.ready(READY_MS, new AbortController().signal)).status).toBe('ready');
    expect((await openLoopWindow(group, 'first')).status).toBe('collected');
    const window = await openLoopWindow(group, 'second');
    expect(window).toMatchObject({ status: 'lost', member: 1, label: 'spin client 1' });
    if (window.status !== 'lost' || window.reply.kind !== 'failed')
      throw new Error(`not a failure: ${JSON.stringify(window)}`);
    expect(window.reply.exitCode).toBe(3);
    expect(window.reply.reason).toMatch(
      /^spin client 1 exited with code 3 before sending "result" \(stderr: .*illegal memory access/,
    );
  });

  it('a window that misses the release time is collected, and the check says which client and by how much', async () => {
    // Client 1 reports its window on the wall clock (time.time()), not CLOCK_MONOTONIC.
    const group = spinGroup(2, { FAKE_WORKLOAD: 'wall-clock', FAKE_WORKLOAD_CLIENT: '1' });
    expect((await group.ready(READY_MS, new AbortController().signal)).status).toBe('ready');
    const window = await openLoopWindow(group, 'clock');
    expect(window.status).toBe('collected');
    expect(window.status === 'collected' && window.invalid).toMatch(
      /^client 1 reported a window starting at \d+ µs, \d+ µs from the release time \d+ µs \(CLOCK_MONOTONIC µs expected\)$/,
    );
  });
});
