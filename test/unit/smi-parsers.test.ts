import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  GPU_FIELDS,
  parseCsvRow,
  parseCsvRows,
  SAMPLE_FIELDS,
  throttleReasons,
} from '../../harness/system/nvidia/smi-csv.js';
import {
  parseGpuList,
  parseMigPlacements,
  parseMigProfiles,
  parseVersions,
} from '../../harness/system/nvidia/smi-text.js';
import { fixture } from '../helpers.js';

/** The recorded sampler output has a header and more fields: pick ours by name, in our order. */
function sampleLinesFromFixture(): string[] {
  const [head = '', ...rows] = fixture('query-gpu-loaded.csv').trim().split('\n');
  const names = head.split(', ').map((h) => h.replace(/ \[.*\]$/, ''));
  return rows.map((row) => {
    const cells = row.split(', ');
    return SAMPLE_FIELDS.map((f) => cells[names.indexOf(f.query)]).join(', ');
  });
}

describe('nvidia-smi query CSV', () => {
  it('parses every recorded sampler row of a loaded H200 into typed samples', () => {
    const lines = sampleLinesFromFixture();
    expect(lines).toHaveLength(70);
    const parsed = lines.map((l) => parseCsvRow(l, SAMPLE_FIELDS));
    expect(parsed.every((p) => p.ok)).toBe(true);
    const first = parsed[0];
    if (!first?.ok) throw new Error('unreachable');
    expect(first.row).toEqual({
      smiTimestamp: '2026/11/21 07:13:38.063',
      gpuIndex: 0,
      utilGpuPct: 0,
      utilMemPct: 0,
      memoryUsedMiB: 0,
      powerW: 79.67,
      smClockMHz: 345,
      memClockMHz: 3201,
      temperatureC: 31,
      pstate: 'P0',
      clocksEventReasons: '0x0000000000000001',
    });
    const busy = parsed.filter((p) => p.ok && (p.row.utilGpuPct ?? 0) === 100);
    expect(busy.length).toBeGreaterThan(0);
  });

  it('turns [N/A] and [Not Supported] into null', () => {
    const line = '2026/11/21 07:13:38.063, 0, [N/A], [Not Supported], 10, [N/A], 1980, 3201, 40, P0, [N/A]';
    const parsed = parseCsvRow(line, SAMPLE_FIELDS);
    expect(parsed).toMatchObject({
      ok: true,
      row: { utilGpuPct: null, utilMemPct: null, powerW: null, clocksEventReasons: null, smClockMHz: 1980 },
    });
  });

  it('rejects a row with the wrong number of fields, naming the row', () => {
    const parsed = parseCsvRow('%%garbage%%, 1', SAMPLE_FIELDS);
    expect(parsed).toEqual({ ok: false, error: expect.stringContaining('expected 11 fields, got 2: %%garbage%%, 1') });
  });

  it('rejects a number field that is not a number, naming the field', () => {
    const line = '2026/11/21 07:13:38.063, 0, lots, 0, 10, 80, 1980, 3201, 40, P0, 0x0';
    const parsed = parseCsvRow(line, SAMPLE_FIELDS);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.error).toContain('utilization.gpu is not a number ("lots")');
  });

  it('parses the fingerprint query and stops at the first bad line', () => {
    const good =
      '0, GPU-7335e5d7-1513-c22d-a95a-e679698f16b8, NVIDIA H200, 00000000:00:06.0, 580.159.04, 143771, 0, 0, Default, Enabled, Disabled, Disabled';
    const rows = parseCsvRows(`${good}\n`, GPU_FIELDS);
    expect(rows).toMatchObject({
      ok: true,
      rows: [
        { index: 0, name: 'NVIDIA H200', memoryTotalMiB: 143771, computeMode: 'Default', migModeCurrent: 'Disabled' },
      ],
    });
    expect(parseCsvRows(`${good}\nnot, enough\n`, GPU_FIELDS).ok).toBe(false);
  });

  it('decodes throttle reasons from clocks_event_reasons, ignoring idle', () => {
    expect(throttleReasons('0x0000000000000001')).toEqual([]);
    expect(throttleReasons('0x0000000000000004')).toEqual(['sw_power_cap']);
    expect(throttleReasons('0x0000000000000048')).toEqual(['hw_slowdown', 'hw_thermal_slowdown']);
    expect(throttleReasons(null)).toEqual([]);
    expect(throttleReasons('garbage')).toEqual([]);
  });
});

describe('nvidia-smi text outputs', () => {
  it('reads GPUs from -L', () => {
    expect(parseGpuList(fixture('nvidia-smi-L.txt'))).toEqual([
      { index: 0, name: 'NVIDIA H200', uuid: 'GPU-7335e5d7-1513-c22d-a95a-e679698f16b8', migDevices: [] },
    ]);
  });

  it('reads MIG devices from -L of a MIG-enabled GPU (constructed fixture)', () => {
    const [gpu] = parseGpuList(fixture('nvidia-smi-L-mig.txt'));
    expect(gpu?.migDevices).toEqual([
      { gpuIndex: 0, profile: '3g.71gb', deviceIndex: 0, uuid: 'MIG-1c6e8e3a-5b7e-5f0a-9a77-3f0b1e0c2d11' },
      { gpuIndex: 0, profile: '3g.71gb', deviceIndex: 1, uuid: 'MIG-9d2f4b61-7a3c-5e29-8c14-62d0a5f3b7e2' },
    ]);
  });

  it('reads driver and CUDA versions from -q', () => {
    expect(parseVersions(fixture('nvidia-smi-q.txt'))).toEqual({ driverVersion: '580.159.04', cudaVersion: '13.0' });
  });

  it('reads the H200 MIG profile table from mig -lgip', () => {
    const profiles = parseMigProfiles(fixture('mig-lgip.txt'));
    expect(profiles.map((p) => p.name)).toEqual([
      '1g.18gb',
      '1g.18gb+me',
      '1g.35gb',
      '2g.35gb',
      '3g.71gb',
      '4g.71gb',
      '7g.141gb',
    ]);
    expect(profiles[0]).toEqual({
      gpuIndex: 0,
      name: '1g.18gb',
      profileId: 19,
      instancesFree: 7,
      instancesTotal: 7,
      memoryGiB: 16,
      smCount: 16,
      copyEngines: 1,
      decoders: 1,
      encoders: 0,
      jpegs: 1,
      ofas: 0,
    });
    expect(profiles.at(-1)).toMatchObject({
      name: '7g.141gb',
      profileId: 0,
      smCount: 132,
      memoryGiB: 140,
      copyEngines: 8,
      ofas: 1,
    });
  });

  it('reads placements from mig -lgipp, singular and plural', () => {
    const placements = parseMigPlacements(fixture('mig-lgipp.txt'));
    expect(placements).toHaveLength(7);
    expect(placements.find((p) => p.profileId === 14)).toEqual({
      gpuIndex: 0,
      profileId: 14,
      starts: [0, 2, 4],
      size: 2,
    });
    expect(placements.find((p) => p.profileId === 0)).toEqual({ gpuIndex: 0, profileId: 0, starts: [0], size: 8 });
  });

  it('finds no profiles in the one-line answer of a GPU without MIG', () => {
    expect(parseMigProfiles(fixture('mig-lgi-disabled.txt'))).toEqual([]);
  });
});

describe('nvidia-smi parser properties', () => {
  const cell = fc.oneof(
    fc.constantFrom('[N/A]', '[Not Supported]', 'N/A'),
    fc.double({ min: -1e6, max: 1e6, noNaN: true }).map((x) => String(x)),
    fc.stringMatching(/^[A-Za-z0-9:./ -]{0,20}$/),
  );

  it('never throws, whatever the line (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (line) => {
        expect(typeof parseCsvRow(line, SAMPLE_FIELDS).ok).toBe('boolean');
      }),
    );
  });

  it('a row of the right width parses iff every number field is a number or missing (property)', () => {
    fc.assert(
      fc.property(fc.array(cell, { minLength: SAMPLE_FIELDS.length, maxLength: SAMPLE_FIELDS.length }), (cells) => {
        const parsed = parseCsvRow(cells.join(', '), SAMPLE_FIELDS);
        const numbersOk = SAMPLE_FIELDS.every((f, i) => {
          const c = (cells[i] ?? '').trim();
          return (
            f.kind !== 'number' || ['[N/A]', '[Not Supported]', 'N/A', ''].includes(c) || Number.isFinite(Number(c))
          );
        });
        expect(parsed.ok).toBe(numbersOk);
        if (parsed.ok) {
          for (const [i, f] of SAMPLE_FIELDS.entries()) {
            const value = (parsed.row as Record<string, unknown>)[f.key];
            const c = (cells[i] ?? '').trim();
            if (['[N/A]', '[Not Supported]', 'N/A', ''].includes(c)) expect(value).toBeNull();
            else expect(value).toBe(f.kind === 'number' ? Number(c) : c);
          }
        }
      }),
    );
  });
});
