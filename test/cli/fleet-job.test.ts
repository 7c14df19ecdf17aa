/**
 * `gpushare fleet job`, in process: every manifest it can write is a Job the Kubernetes API schema
 * accepts (kubernetes-models validates against the OpenAPI schema, and is shown to reject a broken
 * one), the builder is pure, and each bad flag is one line and exit 2. The committed manifest is
 * checked against the built CLI in test/e2e/smoke.test.ts; the pod's script in test/e2e/fleet-pod.test.ts.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Job } from 'kubernetes-models/batch/v1';
import type { Job as JobType } from 'kubernetes-types/batch/v1.js';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { fleetJob } from '../../harness/fleet/job/manifest.js';
import { resolveFleetJobOptions } from '../../harness/fleet/job/options.js';
import { expectOneLineError, ROOT, runCli, tempDir } from '../helpers.js';

const POOL = [
  '--nodes',
  'nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3',
  '--count',
  '3',
  '--image',
  'ghcr.io/gpushare/gpushare:0.1.0',
];
const COMMITTED = path.join(ROOT, 'reports', 'fleet', 'job-3-node-h100-pool.yaml');

/** The manifest the CLI prints for these flags, parsed. */
async function manifest(args: string[]): Promise<{ text: string; job: JobType }> {
  const result = await runCli(['fleet', 'job', ...args]);
  expect(result.stderr).toBe('');
  expect(result.exitCode).toBe(0);
  return { text: result.stdout, job: parse(result.stdout) as JobType };
}

/** kubernetes-models' schema check: throws a ValidationError naming the bad path. */
function validate(job: unknown): void {
  new Job(job as ConstructorParameters<typeof Job>[0]).validate();
}

const container = (job: JobType) => job.spec?.template.spec?.containers[0];
/** A parsed manifest to break on purpose. */
// biome-ignore lint/suspicious/noExplicitAny: a parsed manifest is walked by path; the schema validation is the type check.
type Loose = Record<string, any>;

describe.concurrent('every manifest fleet job writes validates against the Kubernetes API schema', () => {
  const per = [[], ['--gpus-per-node', '8'], ['--per', 'gpu', '--gpus-per-node', '4']];
  const results = [[], ['--results', 'pvc', '--pvc', 'bench-results']];
  const extras = [
    [],
    [
      '--allow-shared-pool',
      '--namespace',
      'gpu-bench',
      '--runtime-class',
      'nvidia',
      '--name',
      'h100-nightly',
      '--backoff-limit',
      '0',
      '--active-deadline-s',
      '600',
      '--modes',
      'streams,timeslice,mps,mig',
    ],
  ];
  const variants = per.flatMap((p) => results.flatMap((r) => extras.map((e) => [...p, ...r, ...e])));

  it.each(variants.map((flags) => [flags.join(' ') || 'the defaults', flags] as const))('%s', async (_, flags) => {
    const { job } = await manifest([...POOL, ...flags]);
    expect(() => validate(job)).not.toThrow();
    const pods = flags.includes('gpu') ? 12 : 3;
    const gpus = flags.includes('gpu') ? '1' : flags.includes('8') ? '8' : '1';
    expect(job.spec).toMatchObject({ completionMode: 'Indexed', completions: pods, parallelism: pods });
    expect(container(job)?.resources).toMatchObject({
      requests: { 'nvidia.com/gpu': gpus },
      limits: { 'nvidia.com/gpu': gpus },
    });
    const pod = job.spec?.template.spec;
    expect(pod?.nodeSelector).toEqual({ 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' });
    expect(pod?.affinity?.nodeAffinity === undefined).toBe(flags.includes('--allow-shared-pool'));
    expect(pod?.affinity?.podAntiAffinity === undefined).toBe(flags.includes('gpu'));
    expect(pod?.topologySpreadConstraints === undefined).toBe(!flags.includes('gpu'));
    expect(pod?.volumes?.[0]).toEqual(
      flags.includes('pvc')
        ? { name: 'results', persistentVolumeClaim: { claimName: 'bench-results' } }
        : { name: 'results', emptyDir: {} },
    );
    expect(pod?.hostIPC).toBe(false);
    expect(container(job)?.securityContext?.privileged).toBe(false);
  });

  it('keeps pods off nodes whose device plugin shares GPUs: strategy none, or no strategy label and at most one replica', async () => {
    const { job, text } = await manifest(POOL);
    expect(
      job.spec?.template.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
        ?.nodeSelectorTerms,
    ).toEqual([
      { matchExpressions: [{ key: 'nvidia.com/gpu.sharing-strategy', operator: 'In', values: ['none'] }] },
      {
        matchExpressions: [
          { key: 'nvidia.com/gpu.sharing-strategy', operator: 'DoesNotExist' },
          { key: 'nvidia.com/gpu.replicas', operator: 'Lt', values: ['2'] },
        ],
      },
      {
        matchExpressions: [
          { key: 'nvidia.com/gpu.sharing-strategy', operator: 'DoesNotExist' },
          { key: 'nvidia.com/gpu.replicas', operator: 'DoesNotExist' },
        ],
      },
    ]);
    // The header says why, and where the label names come from; the YAML has no anchors.
    // The header's prose, its wrapped comment lines joined.
    const prose = text
      .split('\n')
      .filter((l) => l.startsWith('#'))
      .map((l) => l.replace(/^# ?/, ''))
      .join(' ');
    expect(prose).toContain('cannot give a pod a whole GPU through nvidia.com/gpu');
    expect(prose).toContain('NVIDIA/k8s-device-plugin writes them (internal/lm/resource.go, api/config/v1/sharing.go)');
    expect(text).not.toMatch(/[&*]a\d/);
    expect(
      text
        .split('\n')
        .filter((l) => l.startsWith('#') && !l.startsWith('#   ') && !l.startsWith('# Made by'))
        .every((l) => l.length <= 110),
    ).toBe(true);
  });

  it('passes the node name from the downward API and benches every GPU of the pod with bench --gpus all', async () => {
    const { job } = await manifest([...POOL, '--gpus-per-node', '2']);
    expect(container(job)?.env).toEqual([
      { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
    ]);
    expect(container(job)?.command?.slice(0, 2)).toEqual(['/bin/sh', '-c']);
    expect(container(job)?.command?.[2]).toContain(
      'gpushare bench --modes timeslice,mps --gpus all --out "/results/$run"',
    );
  });
});

describe('the schema check is real: kubernetes-models rejects a broken Job', () => {
  const base = () => parse(readFileSync(COMMITTED, 'utf8')) as Loose;

  it.each<[string, (job: Loose) => void, string]>([
    ['a count as a string', (j) => (j.spec.completions = '3'), 'spec/completions must be integer'],
    [
      'an unknown completion mode',
      (j) => (j.spec.completionMode = 'indexed'),
      'spec/completionMode must be equal to one of the allowed values',
    ],
    ['no pod template', (j) => delete j.spec.template, 'must have required property template'],
    [
      'a container without a name',
      (j) => delete j.spec.template.spec.containers[0].name,
      'must have required property name',
    ],
    [
      'an anti-affinity term without a topology key',
      (j) =>
        delete j.spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]
          .topologyKey,
      'must have required property topologyKey',
    ],
    [
      'a node-affinity operator Kubernetes lacks',
      (j) =>
        (j.spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator =
          'Equals'),
      'operator must be equal to one of the allowed values',
    ],
    [
      'a GPU quantity that is not a quantity',
      (j) => (j.spec.template.spec.containers[0].resources.limits['nvidia.com/gpu'] = 'one'),
      'nvidia.com~1gpu',
    ],
    [
      'a command as one string',
      (j) => (j.spec.template.spec.containers[0].command = 'gpushare bench'),
      'command must be array',
    ],
    [
      'a restart policy Kubernetes lacks',
      (j) => (j.spec.template.spec.restartPolicy = 'Sometimes'),
      'restartPolicy must be equal to one of the allowed values',
    ],
    ['another kind', (j) => (j.kind = 'CronJob'), 'kind must be equal to one of the allowed values'],
  ])('%s', (_, breakIt, message) => {
    const job = base();
    expect(() => validate(job)).not.toThrow();
    breakIt(job);
    expect(() => validate(job)).toThrow(message);
  });

  it("an unknown field passes the OpenAPI schema (it sets no additionalProperties), so the builder's types refuse it at compile time", () => {
    const job = base();
    job.spec.completionsMode = 'Indexed';
    expect(() => validate(job)).not.toThrow();
    const typed: JobType = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      spec: {
        template: { spec: { containers: [] } },
        // @ts-expect-error kubernetes-types has no completionsMode: tsc -p tsconfig.test.json fails without this line's expectation
        completionsMode: 'Indexed',
      },
    };
    expect(typed.kind).toBe('Job');
  });
});

describe('the manifest builder is pure and typed', () => {
  it('builds the same Job object the CLI prints', async () => {
    const { job } = await manifest(POOL);
    expect(
      fleetJob(resolveFleetJobOptions({ nodes: POOL[1] as string, count: '3', image: POOL[5] as string }).spec),
    ).toEqual(job);
  });
});

describe.concurrent('bad flags: one line naming the flag, the value and the fix; exit 2; nothing written', () => {
  it.each([
    [
      ['--nodes', 'pool!=a', '--count', '3', '--image', 'x/y:1'],
      `--nodes 'pool!=a': "pool!=a" is not label=value; a nodeSelector takes only equalities`,
    ],
    [['--nodes', 'pool', '--count', '3', '--image', 'x/y:1'], '--nodes pool: "pool" is not label=value'],
    [['--nodes', 'a=b,,c=d', '--count', '3', '--image', 'x/y:1'], '--nodes a=b,,c=d: an empty item'],
    [
      ['--nodes', 'Bad Key=x', '--count', '3', '--image', 'x/y:1'],
      `--nodes 'Bad Key=x': "Bad Key=x" is not label=value`,
    ],
    [
      ['--nodes', 'example.com/-bad=x', '--count', '3', '--image', 'x/y:1'],
      '--nodes example.com/-bad=x: "example.com/-bad" is not a label key',
    ],
    [['--nodes', 'a=b,a=c', '--count', '3', '--image', 'x/y:1'], '--nodes a=b,a=c: a given twice (b, c)'],
    [
      ['--nodes', 'nvidia.com/gpu.sharing-strategy=mps', '--count', '3', '--image', 'x/y:1'],
      'selects nodes whose device plugin shares each GPU (nvidia.com/gpu.sharing-strategy=mps)',
    ],
    [
      ['--nodes', 'nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3-SHARED', '--count', '3', '--image', 'x/y:1'],
      'add --allow-shared-pool',
    ],
    [[...POOL, '--per', 'gpu'], '--per gpu: give the GPUs of each node with --gpus-per-node N'],
    [
      [...POOL, '--per', 'rack'],
      "--per rack: choose node (one pod holds all of a node's GPUs) or gpu (one pod per GPU)",
    ],
    [
      [...POOL, '--results', 'pvc'],
      '--results pvc: name the claim with --pvc <claim>, a ReadWriteMany PersistentVolumeClaim',
    ],
    [[...POOL, '--results', 's3'], '--results s3: choose logs'],
    [
      [...POOL, '--results', 'logs', '--pvc', 'runs'],
      '--pvc runs: --results logs writes no claim; drop --pvc, or use --results pvc',
    ],
    [[...POOL, '--pvc', 'Runs_1'], '--pvc Runs_1: needs a PersistentVolumeClaim name'],
    [['--nodes', 'a=b', '--count', '0', '--image', 'x/y:1'], '--count 0: needs a whole number from 1 to 10000'],
    [['--nodes', 'a=b', '--count', '3.0', '--image', 'x/y:1'], '--count 3.0: needs a whole number from 1 to 10000'],
    [[...POOL, '--gpus-per-node', '0x8'], '--gpus-per-node 0x8: needs a whole number from 1 to 64'],
    [[...POOL, '--backoff-limit', '-1'], '--backoff-limit -1: needs a whole number from 0 to 100000'],
    [[...POOL, '--active-deadline-s', '10'], '--active-deadline-s 10: needs a whole number from 60 to 2592000'],
    [
      ['--nodes', 'a=b', '--count', '10000', '--image', 'x/y:1', '--per', 'gpu', '--gpus-per-node', '64'],
      "pods, more than an Indexed Job's 100000; split the pool into several Jobs",
    ],
    [[...POOL, '--name', 'Bench_1'], '--name Bench_1: needs a Kubernetes name of at most 61 characters here'],
    [[...POOL, '--name', 'a'.repeat(62)], 'at most 61 characters here'],
    [[...POOL, '--namespace', 'GPU'], '--namespace GPU: needs a Kubernetes name'],
    [[...POOL, '--runtime-class', 'Nvidia!'], `--runtime-class 'Nvidia!': needs a RuntimeClass name`],
    [
      ['--nodes', 'a=b', '--count', '3', '--image', 'Org/gpushare:1'],
      '--image Org/gpushare:1: needs an image reference such as ghcr.io/org/gpushare:0.1.0',
    ],
    [
      ['--nodes', 'a=b', '--count', '3', '--image', 'gpushare:1 --privileged'],
      `--image 'gpushare:1 --privileged': needs an image reference`,
    ],
    [
      [...POOL, '--modes', 'timeslice,vgpu'],
      'unknown mode "vgpu" in --modes: choose from streams, green, timeslice, mps, mig',
    ],
    [[...POOL, '--modes', ','], '--modes ,: give at least one mode'],
    [['--nodes', 'a=b', '--image', 'x/y:1'], 'fleet job needs --count (see gpushare fleet job --help)'],
    [[...POOL, '--count', '4'], '--count given twice (3, 4): give it once'],
    [[...POOL, '--out', ''], "--out '': needs a value, not an empty one"],
  ])('%j', async (args, message) => {
    const cwd = tempDir();
    const out = path.join(cwd, 'job.yaml');
    const result = await runCli(
      ['fleet', 'job', ...args, ...(args.includes('--out') ? [] : ['--out', out])],
      {},
      { cwd },
    );
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, message);
    expect(result.stdout).toBe('');
    expect(existsSync(out)).toBe(false);
  });

  it('--help shows the defaults and why the logs are the default', async () => {
    const help = await runCli(['fleet', 'job', '--help']);
    expect(help.exitCode).toBe(0);
    const text = help.stdout.replace(/\s+/g, ' ');
    for (const flag of [
      '--count',
      '--per',
      '--gpus-per-node',
      '--results',
      '--pvc',
      '--name',
      '--namespace',
      '--backoff-limit',
      '--active-deadline-s',
      '--allow-shared-pool',
      '--runtime-class',
    ])
      expect(text).toContain(flag);
    expect(text).toContain('no storage needed, hence the default');
    expect(text).toContain('must be ReadWriteMany');
  });
});
