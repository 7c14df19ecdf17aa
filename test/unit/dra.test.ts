/**
 * The DRA files for every recommendation kind, validated: the claims against a JSON schema written from
 * Kubernetes resource.k8s.io/v1 and NVIDIA's GpuConfig (test/fixtures/dra/resource-claim.schema.json
 * names its sources), the Job against kubernetes-models' batch/v1 schema. The schema is shown to refuse
 * broken claims, so a pass means something.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { Job } from 'kubernetes-models/batch/v1';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { type DraSpec, draFiles, quantity } from '../../harness/deploy/dra.js';
import { ROOT, userErrorOf } from '../helpers.js';

const schema = JSON.parse(
  readFileSync(path.join(ROOT, 'test', 'fixtures', 'dra', 'resource-claim.schema.json'), 'utf8'),
);
const validateClaim = new Ajv({ allErrors: true, strict: false }).compile(schema);

// biome-ignore lint/suspicious/noExplicitAny: parsed manifests are walked by path; the schemas are the type check.
type Loose = Record<string, any>;
const docs = (text: string): Loose[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as Loose | null)
    .filter((d): d is Loose => d !== null);

const SPECS: Record<string, DraSpec> = {
  mps: { source: 's', models: 4, kind: 'mps', threadPct: 25, pinnedMemLimit: '20377M' },
  'mps without limits': { source: 's', models: 2, kind: 'mps', threadPct: null, pinnedMemLimit: null },
  timeslice: { source: 's', models: 3, kind: 'timeslice', interval: 'Default' },
  mig: { source: 's', models: 3, kind: 'mig', profile: '2g.20gb' },
  'in-process (streams, green)': { source: 's', models: 4, kind: 'whole' },
};

describe('draFiles: every recommendation kind validates', () => {
  it.each(Object.entries(SPECS))('%s', (_name, spec) => {
    const files = Object.fromEntries(draFiles(spec).map((f) => [f.name, f.content]));
    const claims = [
      ...docs(files['gpushare-dra-claims.yaml'] ?? ''),
      ...docs(files['gpushare-dra-consumable-shares.yaml'] ?? ''),
    ];
    expect(claims.length).toBeGreaterThan(0);
    for (const claim of claims) expect(validateClaim(claim), JSON.stringify(validateClaim.errors)).toBe(true);
    const job = docs(files['gpushare-dra-job.yaml'] ?? '')[0] as Loose;
    new Job(job as ConstructorParameters<typeof Job>[0]).validate();
    // A claim, not the device plugin's resource.
    expect(files['gpushare-dra-job.yaml']).not.toContain('nvidia.com/gpu:');
    expect(job.spec.template.spec.containers[0].resources).toEqual({ claims: [{ name: 'gpu' }] });
    expect(files['gpushare-dra-job.yaml']).not.toMatch(/[&*]a\d/); // no YAML anchors
  });

  it('MPS: the shared claim carries the thread and memory limits, as a Kubernetes quantity', () => {
    const claims = docs(draFiles(SPECS.mps as DraSpec)[0]?.content ?? '');
    expect(claims.map((c) => c.kind)).toEqual(['ResourceClaim', 'ResourceClaimTemplate']);
    expect(claims[0]?.spec.devices.config[0].opaque.parameters.sharing).toEqual({
      strategy: 'MPS',
      mpsConfig: { defaultActiveThreadPercentage: 25, defaultPinnedDeviceMemoryLimit: '20377Mi' },
    });
    const job = docs(draFiles(SPECS.mps as DraSpec)[1]?.content ?? '')[0] as Loose;
    expect(job.spec.completions).toBe(4);
    expect(job.spec.template.spec.resourceClaims).toEqual([{ name: 'gpu', resourceClaimName: 'gpushare-shared-gpu' }]);
  });

  it('time-slicing: the interval, and the consumable-shares form with its gates; MPS has no such form', () => {
    const ts = draFiles(SPECS.timeslice as DraSpec);
    expect(ts.map((f) => f.name)).toEqual([
      'gpushare-dra-claims.yaml',
      'gpushare-dra-consumable-shares.yaml',
      'gpushare-dra-job.yaml',
    ]);
    expect(docs(ts[0]?.content ?? '')[0]?.spec.devices.config[0].opaque.parameters.sharing).toEqual({
      strategy: 'TimeSlicing',
      timeSlicingConfig: { interval: 'Default' },
    });
    expect(ts[1]?.content).toContain('featureGates.ConsumableShares=true');
    expect(ts[1]?.content).toContain('consumableShares=3');
    expect(ts[1]?.content).toContain('DRAConsumableCapacity');
    expect(draFiles(SPECS.mps as DraSpec).map((f) => f.name)).not.toContain('gpushare-dra-consumable-shares.yaml');
  });

  it('MIG: a claim template per pod, selecting the profile by CEL', () => {
    const [claims, job] = draFiles(SPECS.mig as DraSpec).map((f) => docs(f.content));
    expect(claims?.[0]?.spec.spec.devices.requests[0].exactly).toEqual({
      deviceClassName: 'mig.nvidia.com',
      selectors: [{ cel: { expression: "device.attributes['gpu.nvidia.com'].profile == '2g.20gb'" } }],
    });
    expect(job?.[0]?.spec.template.spec.resourceClaims).toEqual([
      { name: 'gpu', resourceClaimTemplateName: 'gpushare-gpu' },
    ]);
  });

  it('the schema refuses what the driver or the API would', () => {
    const good = docs(draFiles(SPECS.mps as DraSpec)[0]?.content ?? '')[0] as Loose;
    const broken = (edit: (c: Loose) => void) => {
      const c = structuredClone(good);
      edit(c);
      return validateClaim(c);
    };
    expect(validateClaim(good)).toBe(true);
    expect(broken((c) => (c.spec.devices.config[0].opaque.parameters.sharing.strategy = 'Mps'))).toBe(false);
    expect(
      broken((c) => (c.spec.devices.config[0].opaque.parameters.sharing.timeSlicingConfig = { interval: 'Short' })),
    ).toBe(false);
    expect(broken((c) => (c.apiVersion = 'resource.k8s.io/v1beta1'))).toBe(false);
    expect(broken((c) => (c.spec.devices.requests[0].deviceClassName = 'gpu.nvidia.com'))).toBe(false);
    expect(
      broken((c) => (c.spec.devices.config[0].opaque.parameters.sharing.mpsConfig.defaultActiveThreadPercentage = 0)),
    ).toBe(false);
  });

  it('quantities, and the refusal of a limit of the wrong shape', () => {
    expect(quantity('20377M')).toBe('20377Mi');
    expect(quantity('4G')).toBe('4Gi');
    expect(userErrorOf(() => quantity('4G";touch x;"'))).toContain('the MPS memory limit');
  });
});
