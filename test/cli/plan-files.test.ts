/**
 * `plan --out` writes deployable files for every option it can recommend, each checked against its
 * format: Kubernetes objects by kubernetes-models (the API's OpenAPI schema), Triton's config.pbtxt by
 * model_config.proto's fields (test/triton-model-config.ts), the device plugin's config and
 * mig-parted's by schemas of their Go structs (harness/deploy/k8s.ts, mig-parted.ts), shell by
 * `bash -n` and shellcheck, the systemd unit by its sections, and the README's links by the files.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { Deployment } from 'kubernetes-models/apps/v1';
import { ConfigMap, Pod } from 'kubernetes-models/v1';
import { describe, expect, it, type TestContext } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import type { Run } from '../../harness/bench/record/schema.js';
import { DevicePluginConfigSchema } from '../../harness/deploy/k8s.js';
import { MigPartedSpecSchema } from '../../harness/deploy/mig-parted.js';
import { MANIFEST } from '../../harness/deploy/out-dir.js';
import { editedCopy, expectShellcheckClean, H100_RUN, H100_SWEEP_RUN, runCli, tempDir } from '../helpers.js';
import { checkMessage, checkTritonRules, parseTextFormat } from '../triton-model-config.js';

/** Every file under `dir`, relative, sorted. */
function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(dir)
    .flatMap((name) =>
      statSync(path.join(dir, name)).isDirectory()
        ? filesUnder(path.join(dir, name), `${prefix}${name}/`)
        : [`${prefix}${name}`],
    )
    .sort();
}

/** Checks one YAML document by what it is; returns what it was checked as. */
function checkYamlDocument(doc: Record<string, unknown>): string {
  if (doc.kind === 'Deployment') {
    new Deployment(doc as ConstructorParameters<typeof Deployment>[0]).validate();
    return 'Deployment';
  }
  if (doc.kind === 'Pod') {
    new Pod(doc as ConstructorParameters<typeof Pod>[0]).validate();
    return 'Pod';
  }
  if (doc.kind === 'ConfigMap') {
    new ConfigMap(doc as ConstructorParameters<typeof ConfigMap>[0]).validate();
    for (const config of Object.values((doc as { data: Record<string, string> }).data))
      DevicePluginConfigSchema.parse(parse(config));
    return 'ConfigMap';
  }
  if ('mig-configs' in doc) {
    MigPartedSpecSchema.parse(doc);
    return 'mig-parted';
  }
  // The ClusterPolicy merge patch: the one field it sets, naming the ConfigMap.
  const spec = doc.spec as { devicePlugin?: { config?: { name?: unknown } } } | undefined;
  if (spec?.devicePlugin?.config?.name === 'gpushare-device-plugin-config') return 'ClusterPolicy patch';
  // The node label: a metadata fragment for `kubectl label`/`patch`.
  if (Object.keys(doc).join() === 'metadata' && typeof (doc.metadata as { labels?: unknown }).labels === 'object')
    return 'node label patch';
  throw new Error(`a YAML document of no known format: ${JSON.stringify(doc).slice(0, 120)}`);
}

/** Checks every file `plan --out` wrote; returns each file's format. */
async function checkFiles(context: TestContext, out: string): Promise<Record<string, string>> {
  const checked: Record<string, string> = {};
  for (const name of filesUnder(out)) {
    const file = path.join(out, name);
    const text = readFileSync(file, 'utf8');
    if (name.endsWith('config.pbtxt')) {
      const message = parseTextFormat(text);
      expect([name, ...checkMessage(message), ...checkTritonRules(message)]).toEqual([name]);
      checked[name] = 'Triton ModelConfig';
    } else if (name.endsWith('.yaml')) {
      const docs = parseAllDocuments(text).map((d) => d.toJS() as Record<string, unknown>);
      checked[name] = docs.map(checkYamlDocument).join(', ');
    } else if (name.endsWith('.sh')) {
      expect((await execa('bash', ['-n', file], { reject: false })).exitCode).toBe(0);
      await expectShellcheckClean(context, file);
      checked[name] = 'shell';
    } else if (name.endsWith('.service')) {
      const sections = text.match(/^\[\w+\]$/gm);
      expect(sections).toEqual(['[Unit]', '[Service]', '[Install]']);
      for (const line of text.split('\n').filter((l) => l && !l.startsWith('#') && !l.startsWith('[')))
        expect(line).toMatch(/^[A-Za-z]+=\S/);
      checked[name] = 'systemd unit';
    } else if (name.endsWith('.env')) {
      for (const line of text.split('\n').filter((l) => l && !l.startsWith('#'))) expect(line).toMatch(/^[A-Z_]+=\S+$/);
      checked[name] = 'env';
    } else if (name === MANIFEST) {
      // gpushare's record of what it wrote: every other file, each with the hash of what it holds.
      const listed = (JSON.parse(text) as { files: Record<string, string> }).files;
      const others = filesUnder(out).filter((n) => n !== MANIFEST);
      expect(Object.keys(listed).sort()).toEqual(others.sort());
      for (const other of others)
        expect(listed[other]).toBe(
          createHash('sha256')
            .update(readFileSync(path.join(out, other)))
            .digest('hex'),
        );
    } else if (name === 'README.md') {
      for (const [, target] of text.matchAll(/\]\(([^)]+)\)/g))
        expect(existsSync(path.join(out, target as string)), target).toBe(true);
      checked[name] = 'index';
    } else throw new Error(`plan wrote ${name}, which no check covers`);
  }
  return checked;
}

const plan = async (args: string[]) => {
  const out = path.join(tempDir(), 'plan');
  const result = await runCli(['plan', ...args, '--out', out]);
  expect(result.exitCode, result.stderr).toBe(0);
  return { out, stdout: result.stdout };
};

const SHARING = {
  'README.md': 'index',
  'gpushare-clusterpolicy-patch.yaml': 'ClusterPolicy patch',
  'gpushare-device-plugin-configmap.yaml': 'ConfigMap',
  'gpushare-node-label.yaml': 'node label patch',
  'gpushare-shared-gpu-pod.yaml': 'Pod',
};
const MPS = {
  'gpushare-mps-start.sh': 'shell',
  'gpushare-mps-stop.sh': 'shell',
  'gpushare-mps.service': 'systemd unit',
};

describe('plan --out: deployable files for every option it can recommend, each checked against its format', () => {
  it('in-process streams (40 models, the H100 sweep): a Triton repository of 40 models on GPU 0 and the Deployment of its one pod', async (context) => {
    const { out, stdout } = await plan([
      '--models',
      '40',
      '--mem-gib',
      '1.5',
      '--sm-pct',
      '10',
      '--run',
      H100_SWEEP_RUN,
    ]);
    expect(stdout).toMatch(/^use: in-process streams$/m);
    const checked = await checkFiles(context, out);
    const models = Array.from({ length: 40 }, (_, i) => `triton/model-${String(i + 1).padStart(2, '0')}/config.pbtxt`);
    expect(checked).toEqual({
      'README.md': 'index',
      'gpushare-in-process.env': 'env',
      'gpushare-triton-deployment.yaml': 'Deployment',
      ...Object.fromEntries(models.map((m) => [m, 'Triton ModelConfig'])),
    });
    const config = parseTextFormat(readFileSync(path.join(out, 'triton/model-07/config.pbtxt'), 'utf8'));
    expect(config.find((f) => f.field === 'name')?.value).toEqual({ kind: 'string', value: 'model-07' });
    expect(config.find((f) => f.field === 'backend')?.value).toEqual({ kind: 'string', value: 'pytorch' });
    expect(config.filter((f) => f.field === 'instance_group')).toEqual([
      {
        field: 'instance_group',
        value: {
          kind: 'message',
          value: [
            { field: 'count', value: { kind: 'number', value: 1 } },
            { field: 'kind', value: { kind: 'ident', value: 'KIND_GPU' } },
            { field: 'gpus', value: { kind: 'number', value: 0 } },
          ],
        },
      },
    ]);
    // What gpushare cannot know is said where it is needed: the tensors in each config, the claim and image in the
    // Deployment's header, all three in the README.
    for (const model of models)
      expect(readFileSync(path.join(out, model), 'utf8')).toMatch(
        /^# FILL IN: the input and output below are placeholders/m,
      );
    const header = readFileSync(path.join(out, 'gpushare-triton-deployment.yaml'), 'utf8');
    expect(header).toContain(
      '# Before applying: create the PersistentVolumeClaim gpushare-model-repository holding triton/',
    );
    expect(header).toContain('# choose the image: nvcr.io/nvidia/tritonserver:24.08-py3 is a placeholder release;');
    const readme = readFileSync(path.join(out, 'README.md'), 'utf8');
    expect(readme).toContain('\n## Before you deploy: what gpushare cannot know\n');
    expect(readme).toContain('marked FILL IN (`INPUT__0`, `OUTPUT__0`, `TYPE_FP16`, `dims: [ -1 ]`)');
    expect(readme).toContain('a PersistentVolumeClaim named `gpushare-model-repository` holding `triton/`');
    expect(readme).toContain('`nvcr.io/nvidia/tritonserver:24.08-py3` is a placeholder release');
    const deployment = parse(readFileSync(path.join(out, 'gpushare-triton-deployment.yaml'), 'utf8'));
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.template.spec.containers[0].resources.limits).toEqual({ 'nvidia.com/gpu': '1' });
    // The run's numbers: the models, the memory the plan counted, and the measured slowdown with its interval.
    expect(deployment.metadata.annotations).toEqual({
      'gpushare.dev/models': '40',
      'gpushare.dev/gpu-memory-gib': '60.74',
      'gpushare.dev/sm-pct-per-model': '10',
      'gpushare.dev/run': '2026-11-27-h100-80gb-hbm3-01535a',
      'gpushare.dev/measured':
        '8 infer tenants in one process each slowed 6.45× [6.408, 6.528] (fewer than the 40 planned: more cost more)',
    });
  });

  it('green contexts (27 models on an A100-80GB): the same server files, and the README says Triton cannot split SMs', async (context) => {
    const { out, stdout } = await plan([
      '--models',
      '27',
      '--mem-gib',
      '2.5',
      '--sm-pct',
      '3.7',
      '--gpu-model',
      'A100-80GB',
    ]);
    expect(stdout).toMatch(/^use: green contexts$/m);
    const checked = await checkFiles(context, out);
    expect(Object.keys(checked).filter((f) => f.startsWith('triton/'))).toHaveLength(27);
    expect(checked['gpushare-triton-deployment.yaml']).toBe('Deployment');
    expect(readFileSync(path.join(out, 'README.md'), 'utf8')).toContain('Triton has no setting for green contexts');
    expect(readFileSync(path.join(out, 'gpushare-in-process.env'), 'utf8')).toContain('GPUSHARE_GREEN_SM_PCT=3.7');
  });

  it('time-slicing (60 models, past the MPS client limit): the device-plugin files, no MPS scripts', async (context) => {
    const { out, stdout } = await plan([
      '--models',
      '60',
      '--mem-gib',
      '0.5',
      '--sm-pct',
      '1',
      '--gpu-model',
      'H100-80GB',
    ]);
    expect(stdout).toMatch(/^use: time-slicing$/m);
    expect(await checkFiles(context, out)).toEqual(SHARING);
    const configMap = parse(readFileSync(path.join(out, 'gpushare-device-plugin-configmap.yaml'), 'utf8'));
    expect(parse(configMap.data['timeslicing-60']).sharing.timeSlicing.resources).toEqual([
      { name: 'nvidia.com/gpu', replicas: 60 },
    ]);
  });

  it('MPS (36 models on an A100-80GB, costs from an H100 run): the host scripts and unit beside the device-plugin files', async (context) => {
    const { out, stdout } = await plan([
      '--models',
      '36',
      '--mem-gib',
      '1.5',
      '--sm-pct',
      '10',
      '--gpu-model',
      'A100-80GB',
      '--run',
      H100_RUN,
    ]);
    expect(stdout).toMatch(/^use: MPS$/m);
    expect(await checkFiles(context, out)).toEqual({ ...SHARING, ...MPS });
  });

  it('MIG (3 models × 12 GiB on an H100-80GB): the mig-parted geometry beside the device-plugin files', async (context) => {
    const { out, stdout } = await plan([
      '--models',
      '3',
      '--mem-gib',
      '12',
      '--sm-pct',
      '20',
      '--gpu-model',
      'H100-80GB',
    ]);
    expect(stdout).toMatch(/^use: MIG$/m);
    expect(await checkFiles(context, out)).toEqual({ ...SHARING, 'gpushare-mig-parted.yaml': 'mig-parted' });
  });
});

describe('run text in the server files', () => {
  it('a GPU name holding lines of config and YAML stays inside its comments: every file still checks, nothing added', async (context) => {
    const forged = 'H100\nname: "evil"\ninstance_group [ { count: 99 } ]\n---\nkind: Pod';
    const copy = editedCopy(H100_SWEEP_RUN, (run: Run) => {
      const gpu = run.fingerprint.gpus[run.config.gpuIndex] as Run['fingerprint']['gpus'][number];
      gpu.name = forged;
    });
    const { out } = await plan(['--models', '40', '--mem-gib', '1.5', '--sm-pct', '10', '--run', copy]);
    const checked = await checkFiles(context, out);
    expect(checked['gpushare-triton-deployment.yaml']).toBe('Deployment');
    const config = parseTextFormat(readFileSync(path.join(out, 'triton/model-01/config.pbtxt'), 'utf8'));
    expect(config.map((f) => f.field)).toEqual([
      'name',
      'backend',
      'max_batch_size',
      'input',
      'output',
      'instance_group',
    ]);
  });
});

describe('the checks are real', () => {
  const good = `name: "m"\nbackend: "pytorch"\ninstance_group [ { count: 1, kind: KIND_GPU, gpus: [ 0 ] } ]\ninput [ { name: "I" data_type: TYPE_FP16 dims: [ -1 ] } ]\n`;
  it.each<[string, string, string]>([
    ['an unknown field', good.replace('backend', 'backends'), 'ModelConfig.backends: no such field in ModelConfig'],
    [
      'an enum value the proto lacks',
      good.replace('KIND_GPU', 'KIND_TPU'),
      'ModelConfig.instance_group.kind: KIND_TPU is not one of',
    ],
    ['a count as a string', good.replace('count: 1', 'count: "1"'), 'ModelConfig.instance_group.count: needs an int32'],
    ['a singular field twice', `${good}name: "n"\n`, 'ModelConfig.name: a singular field given twice'],
    ['no instance', good.replace('count: 1', 'count: 0'), 'instance_group.count: must be at least 1'],
    ['a zero dimension', good.replace('dims: [ -1 ]', 'dims: [ 0 ]'), 'input/output.dims: 0 is neither -1 nor a size'],
  ])('config.pbtxt with %s is refused', (_, text, error) => {
    const message = parseTextFormat(text);
    expect([...checkMessage(message), ...checkTritonRules(message)].join('\n')).toContain(error);
  });

  it('a good config.pbtxt passes, and text that is not protobuf text format throws', () => {
    const message = parseTextFormat(good);
    expect([...checkMessage(message), ...checkTritonRules(message)]).toEqual([]);
    expect(() => parseTextFormat('name "m"')).toThrow('a scalar needs ":"');
  });

  it('kubernetes-models refuses a Deployment with a replica count as a string', () => {
    expect(() =>
      checkYamlDocument({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'x' },
        spec: { replicas: '1' },
      }),
    ).toThrow(/spec\/replicas must be integer|must have required property/);
  });
});
