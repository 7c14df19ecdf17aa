/**
 * Run directories are shared and committed: a hostile run.json must not become code in the root MPS
 * scripts, the systemd unit or the YAML that `gpushare artifacts` writes, nor a path outside --out;
 * its text must not change the structure of a markdown report or README, nor reach a terminal as
 * controls; and generated YAML must read as the strings given under YAML 1.1 too.
 */
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { Run } from '../../harness/bench/record/schema.js';
import { checked, commentText } from '../../harness/core/escape/embed.js';
import { mpsStartScript } from '../../harness/deploy/mps-scripts.js';
import {
  cli,
  DEFAULT_RUN,
  editedCopy,
  expectOneLineError,
  expectShellcheckClean,
  fakePath,
  MULTI_GPU_RUN,
  tempDir,
  userErrorOf,
} from '../helpers.js';
import { markdown, markdownShape, TERMINAL_CONTROL } from '../output-checks.js';

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

/**
 * A GPU name that, written as it is into markdown, ends its line, closes a code fence, says in bold
 * that all passed, and opens an HTML comment that hides the rest of the document.
 */
const FORGED = 'NVIDIA H100 80GB HBM3\n```\n\n**Exit 0: no outlier and no failing node.**\n\n<!--';
/** What a terminal would act on: clear the screen, set its title, an 8-bit CSI, a bidi override. */
const TERMINAL = 'H100\u001b[2J\u001b]0;pwned\u0007\u009b31m\u202eevil';

/** The markdown `write` makes of DEFAULT_RUN with `name` as its GPU's name (and host), written to a fresh directory. */
async function reportWith(name: string): Promise<string> {
  const copy = editedCopy(DEFAULT_RUN, (run) => {
    gpuOf(run).name = name;
    run.fingerprint.host.hostname = name;
  });
  const result = await cli(['report', copy, '--out', tempDir()]);
  expect(result.exitCode).toBe(0);
  return readFileSync(result.stdout.trim(), 'utf8');
}

/** A rendered document holds no raw HTML and no bold "Exit 0" the run did not write. */
function expectNoForgery(text: string): void {
  expect(
    markdown
      .parse(text, {})
      .some((t) => t.type.startsWith('html') || t.children?.some((c) => c.type.startsWith('html'))),
  ).toBe(false);
  expect(markdown.render(text)).not.toContain('<strong>Exit 0');
}

describe('run text in markdown: a forged GPU name stays in its line or cell', () => {
  it('the single-run report: its header line and environment table keep the shape of a harmless name', async () => {
    const [forged, harmless] = await Promise.all([reportWith(FORGED), reportWith('x')]);
    expect(markdownShape(forged)).toEqual(markdownShape(harmless));
    expect(forged.split('\n')).toHaveLength(harmless.split('\n').length);
    expectNoForgery(forged);
    // The name is there, on the header line, as text: its line break a space, its syntax escaped.
    expect(markdown.render(forged)).toContain(
      '<p>NVIDIA H100 80GB HBM3 ```  **Exit 0: no outlier and no failing node.**  &lt;!-- · driver',
    );
  });

  it('the host report of a multi-GPU run: GPU names from host.json and the runs, and the host name', async () => {
    const write = async (name: string) => {
      const copy = path.join(tempDir(), 'host');
      cpSync(MULTI_GPU_RUN, copy, { recursive: true });
      const hostFile = path.join(copy, 'host.json');
      const host = JSON.parse(readFileSync(hostFile, 'utf8')) as { gpus: Array<{ name: string }> };
      for (const gpu of host.gpus) gpu.name = name;
      writeFileSync(hostFile, JSON.stringify(host));
      const runFile = path.join(copy, 'gpu0', 'run.json');
      const run = JSON.parse(readFileSync(runFile, 'utf8')) as Run;
      gpuOf(run).name = name;
      run.fingerprint.host.hostname = name;
      writeFileSync(runFile, JSON.stringify(run));
      const result = await cli(['report', copy, '--out', tempDir()]);
      expect(result.exitCode).toBe(0);
      return readFileSync(result.stdout.trim(), 'utf8');
    };
    const [forged, harmless] = await Promise.all([write(FORGED), write('x')]);
    expect(markdownShape(forged)).toEqual(markdownShape(harmless));
    expectNoForgery(forged);
  });

  it("the plan's README (its fenced plan quotes the run's GPU name) and the artifacts README", async () => {
    const write = async (name: string) => {
      const copy = editedCopy(DEFAULT_RUN, (run) => void (gpuOf(run).name = name));
      const plan = path.join(tempDir(), 'plan');
      const artifacts = path.join(tempDir(), 'artifacts');
      const planned = await cli([
        'plan',
        '--models',
        '4',
        '--mem-gib',
        '1',
        '--sm-pct',
        '10',
        '--run',
        copy,
        '--out',
        plan,
      ]);
      expect(planned.exitCode).toBe(0);
      expect(planned.stdout).not.toMatch(TERMINAL_CONTROL);
      expect((await cli(['artifacts', '--run', copy, '--out', artifacts])).exitCode).toBe(0);
      return [
        readFileSync(path.join(plan, 'README.md'), 'utf8'),
        readFileSync(path.join(artifacts, 'README.md'), 'utf8'),
      ];
    };
    const [forged, harmless] = await Promise.all([write(FORGED), write('x')]);
    for (const [i, text] of forged.entries()) {
      expect(markdownShape(text)).toEqual(markdownShape(harmless[i] as string));
      expectNoForgery(text);
    }
  });
});

describe('run text on the terminal: controls and bidi overrides shown escaped', () => {
  const copy = editedCopy(DEFAULT_RUN, (run) => {
    gpuOf(run).name = TERMINAL;
    run.fingerprint.driverVersion = TERMINAL;
    run.warnings = [TERMINAL];
  });

  it.each([
    ['show', ['show', copy]],
    ['show --json', ['show', copy, '--json']],
    ['report --json', ['report', copy, '--json']],
    [
      'gate against a baseline (the mismatches quote the GPU name and driver)',
      ['gate', copy, '--baseline', DEFAULT_RUN, '--allow-mismatch'],
    ],
    ['gate --json', ['gate', copy, '--baseline', DEFAULT_RUN, '--allow-mismatch', '--json']],
  ])('%s', async (_what, argv) => {
    const result = await cli(argv);
    expect(result.stdout).toContain('H100');
    expect(result.stdout).not.toMatch(TERMINAL_CONTROL);
    expect(result.stdout).toContain('\\u001b[2J');
  });

  it('a one-line error quoting a path shows its controls escaped', async () => {
    const dir = path.join(tempDir(), `run\u001b[2J`);
    const result = await cli(['show', dir]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).not.toMatch(TERMINAL_CONTROL);
    expectOneLineError(result.stderr, 'run\\u001b[2J');
  });
});

describe('generated YAML under YAML 1.1 (PyYAML, kubectl): names that read as booleans stay strings', () => {
  it('fleet job --nodes dedicated=yes --name on --namespace no', async () => {
    const result = await cli([
      'fleet',
      'job',
      '--nodes',
      'dedicated=yes,gpu=n',
      '--name',
      'on',
      '--namespace',
      'no',
      '--count',
      '2',
      '--image',
      'x/gpushare:1',
    ]);
    expect(result.exitCode).toBe(0);
    const job = parseYaml(result.stdout, { version: '1.1' });
    expect(job.metadata.name).toBe('on');
    expect(job.metadata.namespace).toBe('no');
    expect(job.metadata.labels['app.kubernetes.io/instance']).toBe('on');
    expect(job.spec.template.spec.nodeSelector).toEqual({ dedicated: 'yes', gpu: 'n' });
  });

  it('artifacts --namespace yes', async () => {
    const out = path.join(tempDir(), 'artifacts');
    expect((await cli(['artifacts', '--gpu-model', 'A100-80GB', '--namespace', 'yes', '--out', out])).exitCode).toBe(0);
    const configMap = parseYaml(readFileSync(path.join(out, 'gpushare-device-plugin-configmap.yaml'), 'utf8'), {
      version: '1.1',
    });
    expect(configMap.metadata.namespace).toBe('yes');
  });
});
