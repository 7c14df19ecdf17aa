/**
 * What a fleet plan's files declare, read back by verify (harness/verify/declared-fleet.ts) from the
 * generator's own output (harness/deploy/fleet/files.ts): each server's own limits in the launcher, one
 * probe per distinct limit, and a launcher that declares what no limit can be refused in one line.
 */
import { describe, expect, it } from 'vitest';
import { FLEET_DEPLOYMENTS, FLEET_LAUNCHER, type FleetFiles, fleetBundle } from '../../harness/deploy/fleet/files.js';
import { DEFAULT_OPERATOR } from '../../harness/deploy/k8s.js';
import { MPS_START, PLUGIN_CONFIGMAP, parseDeclared } from '../../harness/verify/declared.js';
import { distinctLimits, serversFromLauncher } from '../../harness/verify/declared-fleet.js';
import { userErrorOf } from '../helpers.js';

const server = (label: string, memLimitMiB: number | null, threadPct: number | null) => ({
  label,
  kind: label.replace(/-\d+$/, ''),
  model: 'm',
  command: 'serve --port {port}',
  memFraction: 0.1,
  memGiB: 8,
  memLimitMiB,
  threadPct,
});

const facts = (mode: 'timeslice' | 'mps' | 'mps-threads', servers: ReturnType<typeof server>[]): FleetFiles => ({
  run: { id: 'r1' },
  gpu: { name: 'NVIDIA H100 80GB HBM3', memoryMiB: 81_559 },
  choice: { mode, tiedWith: [] },
  servers,
});

const files = (f: FleetFiles) => {
  const bundle = fleetBundle(f, { gpus: 'all', operator: DEFAULT_OPERATOR }, 'plan text');
  if (bundle === null) throw new Error('no bundle');
  return Object.fromEntries(bundle.files.map((x) => [x.name, x.content]));
};

describe("a fleet plan's files, read back", () => {
  it("under mps-threads: each server's memory limit and thread cap, a daemon with no default limits", () => {
    const written = files(
      facts('mps-threads', [server('large-1', 25_600, 40), server('large-2', 25_600, 40), server('small', 3878, 5)]),
    );
    const declared = parseDeclared(written);
    expect(declared.files).toEqual([MPS_START, PLUGIN_CONFIGMAP, FLEET_LAUNCHER]);
    expect(declared.servers).toEqual([
      { server: 'large-1', memLimitMiB: 25_600, threadPct: 40 },
      { server: 'large-2', memLimitMiB: 25_600, threadPct: 40 },
      { server: 'small', memLimitMiB: 3878, threadPct: 5 },
    ]);
    expect(declared.mps).toMatchObject({ threadPct: null, pinnedMemLimit: null });
    expect(written[MPS_START]).toContain(`# No default limits: each client's own are set by ${FLEET_LAUNCHER}.`);
    // The Deployments carry the same settings in each container's environment.
    expect(written[FLEET_DEPLOYMENTS]).toContain('value: 0=25600M');
    expect(written[FLEET_DEPLOYMENTS]?.match(/kind: Deployment/g)).toHaveLength(3);
    expect(written[FLEET_DEPLOYMENTS]).not.toMatch(/[&*]a\d/);
    expect(distinctLimits(declared.servers ?? [], (s) => s.memLimitMiB)).toEqual([
      { value: 3878, servers: ['small'] },
      { value: 25_600, servers: ['large-1', 'large-2'] },
    ]);
    expect(distinctLimits(declared.servers ?? [], (s) => s.threadPct)).toEqual([
      { value: 5, servers: ['small'] },
      { value: 40, servers: ['large-1', 'large-2'] },
    ]);
  });

  it('under mps: memory limits only; under time-slicing no launcher and no MPS scripts', () => {
    const mps = parseDeclared(files(facts('mps', [server('a', 1024, null), server('b', 2048, null)])));
    expect(mps.servers).toEqual([
      { server: 'a', memLimitMiB: 1024, threadPct: null },
      { server: 'b', memLimitMiB: 2048, threadPct: null },
    ]);
    const ts = files(facts('timeslice', [server('a', null, null), server('b', null, null)]));
    expect(Object.keys(ts).filter((n) => n.startsWith('gpushare-mps') || n === FLEET_LAUNCHER)).toEqual([]);
    expect(parseDeclared(ts).plugin).toEqual([{ key: 'timeslicing-2', strategy: 'timeSlicing', replicas: 2 }]);
  });

  it('none advised: no files', () => {
    expect(
      fleetBundle({ ...facts('mps', []), choice: null }, { gpus: 'all', operator: DEFAULT_OPERATOR }, ''),
    ).toBeNull();
  });

  it('refuses a launcher that declares no server or a limit of another shape, naming it', () => {
    expect(userErrorOf(() => serversFromLauncher('#!/usr/bin/env bash\nexec "$@"\n'))).toMatch(
      /^gpushare-fleet-server\.sh: it declares no server: /,
    );
    expect(userErrorOf(() => serversFromLauncher('  a) export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=4G ;;\n'))).toContain(
      'server a has a memory limit of 4G, not 0=<MiB>M',
    );
    expect(userErrorOf(() => serversFromLauncher('  a) export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=101 ;;\n'))).toContain(
      'server a has a thread percentage of 101',
    );
  });

  it('refuses to write a server label or limit of another shape into the files', () => {
    expect(userErrorOf(() => files(facts('mps', [server('a) rm -rf /', 1024, null)])))).toMatch(
      /refusing to write the server label/,
    );
    expect(userErrorOf(() => files(facts('mps-threads', [server('a', 1024, 0)])))).toMatch(
      /the MPS thread percentage 0/,
    );
  });
});
