/**
 * `gpushare fleet report` through the built CLI where a process is what is tested: a run.json that is a FIFO is
 * listed as unreadable instead of blocking the process. The rest of fleet report runs in process
 * (test/cli/fleet-report.test.ts).
 */
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { FleetAnalysis } from '../../harness/fleet/report/analyze.js';
import { cli, H100_RUN as H100, placeRun, tempDir, unfolded } from '../helpers.js';

type FleetJson = FleetAnalysis & { exitCode: number };

describe('gpushare fleet report reads what it reads honestly', () => {
  it('a run.json that is a FIFO or a directory, and a broken link, are listed as unreadable (without blocking) and exit 1; a run.json linked to a run is read', async () => {
    const fleet = tempDir('gpushare-fleet-');
    for (const name of ['n1', 'n2']) placeRun(fleet, H100, name, `GPU-${name}`);
    mkdirSync(path.join(fleet, 'fifo'));
    await execa('mkfifo', [path.join(fleet, 'fifo', 'run.json')]);
    mkdirSync(path.join(fleet, 'dir', 'run.json'), { recursive: true });
    symlinkSync(path.join(fleet, 'gone'), path.join(fleet, 'broken'));
    mkdirSync(path.join(fleet, 'linked'));
    symlinkSync(path.join(fleet, 'n1', 'run.json'), path.join(fleet, 'linked', 'run.json'));
    const junit = path.join(tempDir(), 'fleet.xml');
    const result = await cli(['fleet', 'report', fleet, '--out', tempDir(), '--junit', junit]);
    expect(result.exitCode).toBe(1);
    expect(unfolded(result.stdout)).toMatch(/^unreadable: fifo: .*fifo\/run\.json is not a regular file/m);
    expect(unfolded(result.stdout)).toMatch(/^unreadable: dir: .*dir\/run\.json is not a regular file/m);
    expect(unfolded(result.stdout)).toMatch(
      /^unreadable: broken: a symbolic link that cannot be followed \(ENOENT\)$/m,
    );
    expect(result.stdout).toMatch(/^exit 1: 0 outlier node\(s\), \d+ failing node\(s\), unreadable runs$/m);
    const json = JSON.parse((await cli(['fleet', 'report', fleet, '--json'])).stdout) as FleetJson;
    expect(json.nodes.map((n) => n.name).sort()).toEqual(['linked', 'n1', 'n2']);
    expect(
      json.notCompared
        .filter((x) => x.fails)
        .map((x) => x.path)
        .sort(),
    ).toEqual(['broken', 'dir', 'fifo']);
    expect([...readFileSync(junit, 'utf8').matchAll(/<error type="unreadable"/g)]).toHaveLength(3);
  });
});
