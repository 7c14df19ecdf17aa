/** verify reads what deploy/ writes: the generators' own output, parsed back into the limits it declares. */
import { describe, expect, it } from 'vitest';
import { artifactBundle, sharingConfigs } from '../../harness/deploy/bundle.js';
import { standardGeometries } from '../../harness/deploy/mig-parted.js';
import { builtinMigGpu, type MigGpu } from '../../harness/deploy/mig-profiles.js';
import { mixClientFiles } from '../../harness/deploy/mix-clients.js';
import { parseDeclared, sizeMib } from '../../harness/verify/declared.js';

const h100 = builtinMigGpu('H100-80GB') as MigGpu;
const MPS_DIRS = { pipeDirectory: '/tmp/nvidia-mps', logDirectory: '/var/log/nvidia-mps' };

function files(list: Array<{ name: string; content: string }>): Record<string, string> {
  return Object.fromEntries(list.map((f) => [f.name, f.content]));
}

describe('parseDeclared', () => {
  it('reads the MPS defaults, GPUs, pipe directory, plugin replicas and MIG geometries of a bundle', () => {
    const bundle = artifactBundle({
      source: 'gpushare plan (4 models) for H100-80GB',
      mps: { gpus: [0, 2], threadPct: 25, pinnedMemLimit: '20377M', ...MPS_DIRS },
      sharing: sharingConfigs(4),
      defaultSharing: null,
      mig: { gpu: h100, geometries: standardGeometries(h100) },
    });
    const d = parseDeclared(files(bundle));
    expect(d.mps).toEqual({
      threadPct: 25,
      pinnedMemLimit: '20377M',
      pipeDirectory: '/tmp/nvidia-mps',
      logDirectory: '/var/log/nvidia-mps',
      gpus: [0, 2],
    });
    expect(d.plugin).toEqual([
      { key: 'timeslicing-4', strategy: 'timeSlicing', replicas: 4 },
      { key: 'mps-4', strategy: 'mps', replicas: 4 },
    ]);
    expect(d.mig['all-3g']).toEqual({ '3g.40gb': 2 });
    expect(Object.keys(d.mig)).not.toContain('all-disabled');
    expect(d.source).toBe('gpushare plan (4 models) for H100-80GB');
  });

  it('reads no limit where the scripts set none, and every GPU for --gpus all', () => {
    const bundle = artifactBundle({
      source: 'run x',
      mps: { gpus: 'all', threadPct: null, pinnedMemLimit: null, ...MPS_DIRS },
      sharing: sharingConfigs(2),
      defaultSharing: null,
      mig: null,
    });
    const d = parseDeclared(files(bundle));
    expect(d.mps?.threadPct).toBeNull();
    expect(d.mps?.pinnedMemLimit).toBeNull();
    expect(d.mps?.gpus).toBe('all');
    expect(d.mig).toEqual({});
  });

  it("reads each mix client's thread cap from the launcher", () => {
    const mix = mixClientFiles(
      [
        { aggressor: 'batch', threadPct: 30, upToLoad: 0.8, failedAtLoad: null },
        { aggressor: 'train', threadPct: null, upToLoad: null, failedAtLoad: 0.5 },
      ],
      'mix run m',
    );
    expect(parseDeclared(files(mix)).clients).toEqual([{ role: 'batch', threadPct: 30 }]);
  });

  it.each([
    ['4G', 4096],
    ['20377M', 20377],
    ['1024K', 1],
    ['4g', null],
    ['4', null],
  ] as const)('sizeMib(%s) = %s', (text, expected) => {
    expect(sizeMib(text)).toBe(expected);
  });
});
