/**
 * Memory per server of a fleet (#49 Build 3): nvidia-smi's listings parsed from the real output of an
 * H200 VM (test/fixtures), and each listed process given to the server whose process tree holds it,
 * through a fake /proc; null with the reason where it cannot be known.
 */
import { describe, expect, it } from 'vitest';
import { attributeMemory, sampleMemory } from '../../harness/serve/fleet/fleet-memory.js';
import { type GpuProcesses, parseComputeApps, parseProcessTable } from '../../harness/system/nvidia/gpu-processes.js';
import { fixture } from '../helpers.js';

const UUID = 'GPU-7335e5d7-1513-c22d-a95a-e679698f16b8';
const listing = (processes: Array<[number, string, number | null]>): GpuProcesses => ({
  ok: true,
  processes: processes.map(([pid, name, usedMemoryMiB]) => ({ pid, name, usedMemoryMiB })),
});

describe("nvidia-smi's processes, from the recorded output", () => {
  it('--query-compute-apps: the header-only files of the VM list nothing; rows of other GPUs are left out', () => {
    for (const file of ['compute-apps-mps.csv', 'compute-apps-two-procs.csv']) {
      // The recorded files were taken with a header; the harness asks for none.
      const body = fixture(file).split('\n').slice(1).join('\n');
      expect(parseComputeApps(body, UUID)).toEqual({ ok: true, processes: [] });
    }
    const rows = `576, python3, 712, ${UUID}\n577, python3, [N/A], ${UUID}\n9, other, 5, GPU-other\n`;
    expect(parseComputeApps(rows, UUID)).toEqual(
      listing([
        [576, 'python3', 712],
        [577, 'python3', null],
      ]),
    );
    expect(parseComputeApps('576, python3\n', UUID)).toMatchObject({ ok: false });
  });

  it("the process table: under MPS, each client ('M+C') and the server with their memory; none for plain processes", () => {
    expect({ ok: true, processes: parseProcessTable(fixture('nvidia-smi-mps.txt')) }).toEqual(
      listing([
        [576, 'python3', 712],
        [577, 'python3', 712],
        [640, 'nvidia-cuda-mps-server', 66],
      ]),
    );
    expect(parseProcessTable(fixture('nvidia-smi-two-procs.txt'))).toEqual([]);
    expect(parseProcessTable(fixture('nvidia-smi.txt'))).toEqual([]);
  });
});

describe('attributeMemory: each listed process to the server whose tree holds it', () => {
  const servers = [
    { server: 1, pid: 100 },
    { server: 2, pid: 200 },
    { server: 3, pid: 300 },
  ];
  // Server 1 is one process; server 2 an engine whose worker (201) holds the memory; server 3 is not listed.
  const trees = new Map([
    [100, [100]],
    [200, [200, 201, 202]],
    [300, [300]],
  ]);

  it("sums a server's processes, its descendants' included; one not listed says why", () => {
    const got = attributeMemory(
      'mps',
      servers,
      trees,
      listing([
        [100, 'node', 1200],
        [201, 'python3', 3000],
        [202, 'python3', 500],
        [999, 'someone-else', 7000],
      ]),
      false,
    );
    expect(got).toEqual([
      { mode: 'mps', server: 1, memoryMiB: 1200, reason: null },
      { mode: 'mps', server: 2, memoryMiB: 3500, reason: null },
      {
        mode: 'mps',
        server: 3,
        memoryMiB: null,
        reason: 'none of its 1 processes (300) is among the 4 nvidia-smi lists on this GPU (another PID namespace?)',
      },
    ]);
  });

  it('null with the reason: an empty list, only the MPS server, a process without a figure, a failed list, no pid', () => {
    const one = (l: GpuProcesses, mps = false, pid: number | null = 100) =>
      attributeMemory('timeslice', [{ server: 1, pid }], trees, l, mps)[0];
    expect(one(listing([]))?.reason).toBe(
      'nvidia-smi lists no process on this GPU (inside some VMs and containers it lists none)',
    );
    expect(one(listing([[640, 'nvidia-cuda-mps-server', 66]]), true)?.reason).toBe(
      "under MPS nvidia-smi lists the MPS server (pid 640, 66 MiB), not this server's processes",
    );
    // Time-sliced, an MPS server listed is another run's: the server's own processes are what is missing.
    expect(one(listing([[640, 'nvidia-cuda-mps-server', 66]]), false)?.reason).toMatch(/^none of its 1 processes/);
    expect(one(listing([[100, 'node', null]]))).toEqual({
      mode: 'timeslice',
      server: 1,
      memoryMiB: null,
      reason: 'nvidia-smi lists its process 100 without its memory',
    });
    expect(one({ ok: false, error: 'nvidia-smi exited with 9' })?.reason).toBe(
      "nvidia-smi could not list the GPU's processes: nvidia-smi exited with 9",
    );
    expect(one(listing([[100, 'node', 5]]), false, null)?.reason).toBe('its process had exited, or never started');
  });

  it('sampleMemory reads each tree through its seam, once per server', async () => {
    const asked: number[] = [];
    const got = await sampleMemory(
      'baseline',
      [{ server: 2, pid: 200 }],
      async () => listing([[202, 'python3', 64]]),
      false,
      async (pid) => {
        asked.push(pid);
        return trees.get(pid) ?? [];
      },
    );
    expect(asked).toEqual([200]);
    expect(got).toEqual([{ mode: 'baseline', server: 2, memoryMiB: 64, reason: null }]);
  });
});
