/**
 * Run directories are shared and committed: a hostile run.json must not become code in the root MPS
 * scripts, the systemd unit or the YAML that `gpushare artifacts` writes, nor a path outside --out.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { Run } from '../../harness/bench/record/schema.js';
import { checked, commentText } from '../../harness/core/embed.js';
import { mpsStartScript } from '../../harness/deploy/mps-scripts.js';
import {
  cli,
  DEFAULT_RUN,
  editedCopy,
  expectOneLineError,
  expectShellcheckClean,
  fakePath,
  tempDir,
  userErrorOf,
} from '../helpers.js';

const gpuOf = (run: Run) => run.fingerprint.gpus[run.config.gpuIndex] as Run['fingerprint']['gpus'][number];

describe('a hostile run.json', () => {
  it('a run id holding a newline and a command is refused by the schema: exit 2, one line, nothing written', async () => {
    const marker = path.join(tempDir(), 'pwned');
    const hostile = editedCopy(DEFAULT_RUN, (run) => void (run.id = `x\ntouch ${marker}`));
    const out = path.join(tempDir(), 'artifacts');
    const result = await cli(['artifacts', '--run', hostile, '--out', out]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, 'does not match the run schema at id: a run id of letters, digits');
    expect(existsSync(out)).toBe(false);
  });

  it('an MPS memory limit that would close the quotes and run a command is refused', async () => {
    const hostile = editedCopy(
      DEFAULT_RUN,
      (run) => void (run.config.mps.memLimit = '4G";touch /tmp/gpushare-pwned;"'),
    );
    const result = await cli(['artifacts', '--run', hostile, '--out', path.join(tempDir(), 'artifacts')]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(
      result.stderr,
      'does not match the run schema at config.mps.memLimit: a size such as 4G or 512M',
    );
  });

  it('a GPU name with line breaks and $( ) stays inside comments: scripts pass bash -n and shellcheck, and running one creates no file', async (context) => {
    const marker = path.join(tempDir(), 'pwned');
    const injected = `touch ${marker}`;
    const hostile = editedCopy(
      DEFAULT_RUN,
      (run) => void (gpuOf(run).name = `H100 $(${injected})\n${injected}\r\n${injected}\u2028${injected}`),
    );
    const out = path.join(tempDir(), 'artifacts');
    const result = await cli(['artifacts', '--run', hostile, '--out', out]);
    expect(result.exitCode).toBe(0);
    for (const file of readdirSync(out)) {
      const text = readFileSync(path.join(out, file), 'utf8');
      // The name appears only inside comment lines: no line of any file starts with the command.
      for (const line of text.split(/\r\n|\n|\r|\u2028|\u2029/))
        expect(line.trimStart().startsWith('touch')).toBe(false);
      if (file.endsWith('.yaml')) expect(() => parseYaml(text)).not.toThrow();
    }
    for (const script of ['gpushare-mps-start.sh', 'gpushare-mps-stop.sh']) {
      expect((await execa('bash', ['-n', path.join(out, script)], { reject: false })).exitCode).toBe(0);
    }
    // Run the start and stop scripts for real against the fake MPS daemon.
    const env = {
      PATH: fakePath(),
      CUDA_MPS_PIPE_DIRECTORY: path.join(tempDir(), 'pipe'),
      CUDA_MPS_LOG_DIRECTORY: path.join(tempDir(), 'log'),
    };
    expect(
      (await execa(path.join(out, 'gpushare-mps-start.sh'), ['--skip-compute-mode'], { env, reject: false })).exitCode,
    ).toBe(0);
    expect(
      (await execa(path.join(out, 'gpushare-mps-stop.sh'), ['--skip-compute-mode'], { env, reject: false })).exitCode,
    ).toBe(0);
    expect(existsSync(marker)).toBe(false);
    for (const script of ['gpushare-mps-start.sh', 'gpushare-mps-stop.sh'])
      await expectShellcheckClean(context, path.join(out, script));
  });

  it('a run id with ../ cannot make report write outside --out', async () => {
    const hostile = editedCopy(DEFAULT_RUN, (run) => void (run.id = '../../escape'));
    const parent = tempDir();
    const out = path.join(parent, 'a', 'b', 'reports');
    const result = await cli(['report', hostile, '--out', out]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, 'does not match the run schema at id');
    expect(readdirSync(parent)).toEqual([]);
  });
});

describe('what generated files embed', () => {
  it('comment text never holds a line break or a control character, whatever the input (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const safe = commentText(text);
        expect(safe).not.toMatch(/[\p{C}\u2028\u2029]/u);
        expect(safe.split('\n')).toHaveLength(1);
      }),
      { numRuns: 500 },
    );
  });

  it.each([
    [
      { pinnedMemLimit: '4G; reboot' },
      'refusing to write the MPS memory limit "4G; reboot" into a generated file: a size such as 4G, 512M or 1024K',
    ],
    [
      { threadPct: 101 },
      'refusing to write the MPS thread percentage 101 into a generated file: a whole number from 1 to 100',
    ],
    [{ gpus: [-1] }, 'refusing to write the GPU index -1 into a generated file: a whole number from 0'],
    [
      { pipeDirectory: '/tmp/$(reboot)' },
      'refusing to write the MPS pipe directory "/tmp/$(reboot)" into a generated file',
    ],
  ])('the script generator itself refuses %j (a second line of defence behind the schema)', (bad, message) => {
    const settings = {
      gpus: [0],
      threadPct: 10,
      pinnedMemLimit: '4G',
      pipeDirectory: '/tmp/nvidia-mps',
      logDirectory: '/var/log/nvidia-mps',
      source: 'test',
      ...bad,
    };
    expect(userErrorOf(() => mpsStartScript(settings))).toContain(message);
  });

  it('checked passes good values through unchanged', () => {
    expect(checked('4G', (x) => x === '4G', 'x', 'y')).toBe('4G');
  });
});
