/**
 * The layers of ARCHITECTURE.md, enforced: every relative import of every harness file points down a
 * layer or within its own folder; products import no product but what the rules allow; inside bench
 * the stages point one way. A planted violation of each kind is caught (the checker is a pure function).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers.js';

const HARNESS = path.join(ROOT, 'harness');

interface Import {
  /** The importing file, relative to harness/. */
  file: string;
  /** The imported file, relative to harness/, without extension. */
  target: string;
}

/** Every relative import (static, dynamic, type-only, re-export) of every harness file. */
function harnessImports(): Import[] {
  const files = readdirSync(HARNESS, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  return files.flatMap((file) => {
    const text = readFileSync(path.join(HARNESS, file), 'utf8');
    return [...text.matchAll(/(?:from |import\()'(\.{1,2}\/[^']+)\.js'/g)].map((m) => ({
      file,
      target: path.join(path.dirname(file), m[1] as string),
    }));
  });
}

/** The shared layers, lowest first: each may import itself and the layers it lists. */
const SHARED: Record<string, string[]> = {
  core: [],
  stats: ['core'],
  system: ['core'],
  workload: ['core', 'system', 'stats'],
  load: ['core', 'workload'],
  record: ['core', 'system'],
  session: ['core', 'system', 'workload', 'record', 'stats'],
  experiment: ['core', 'workload'],
};
/** The products: each may import every shared layer, itself, and the products it lists. */
const PRODUCTS: Record<string, string[]> = {
  bench: [],
  probe: [],
  capacity: [],
  mix: [],
  doctor: [],
  check: [],
  serve: [],
  fleet: ['bench'],
  deploy: ['bench', 'mix', 'serve'],
  verify: ['deploy'],
};
/** Above the products: the command line (which registers and dispatches them), and main. */
const TOP: Record<string, string[]> = {
  cli: [...Object.keys(SHARED), ...Object.keys(PRODUCTS)],
  'main.ts': ['cli', 'system', 'core'],
};

/** Inside bench, the stages point one way: paths (prefixes of harness/) a stage's files may not import. */
const BENCH_STAGES: Record<string, string[]> = {
  // The analysis is computed from the run alone.
  'bench/analysis/': [
    'bench/command',
    'bench/show',
    'bench/scheduler',
    'bench/policy',
    'bench/progress',
    'bench/outputs/',
    'bench/gate/gate',
    'bench/gate/outputs',
    'bench/gate/command',
    'bench/record/store',
    'system/mps/',
    'system/proc/',
    'workload/client',
  ],
  // The stop policy reads only the analysis and the record.
  'bench/policy': ['bench/outputs/', 'bench/command', 'bench/scheduler', 'system/', 'workload/client'],
  // The record knows nothing of what reads or writes it but the file system.
  'bench/record/': [
    'bench/analysis/',
    'bench/outputs/',
    'bench/gate/',
    'bench/command',
    'bench/scheduler',
    'bench/comparisons',
  ],
  // Outputs are pure functions of the analysis: they never reach into execution.
  'bench/outputs/': [
    'bench/command',
    'bench/scheduler',
    'bench/policy',
    'system/mps/',
    'system/proc/',
    'workload/client',
  ],
  'bench/gate/': ['bench/command', 'bench/scheduler', 'bench/policy', 'system/mps/', 'system/proc/', 'workload/client'],
};

const folderOf = (p: string) => (p.includes('/') ? (p.split('/')[0] as string) : p.endsWith('.ts') ? p : `${p}.ts`);

/** What breaks the rules in `imports`, one line each. */
function violations(imports: readonly Import[]): string[] {
  const allowed = (from: string): string[] | null => {
    if (from in SHARED) return SHARED[from] ?? [];
    if (from in PRODUCTS) return [...Object.keys(SHARED), ...(PRODUCTS[from] ?? [])];
    return TOP[from] ?? null;
  };
  const found: string[] = [];
  for (const { file, target } of imports) {
    const from = folderOf(file);
    const to = folderOf(target);
    const rule = allowed(from);
    if (rule === null) found.push(`${file}: harness/${from} is in no layer of ARCHITECTURE.md`);
    else if (from !== to && !rule.includes(to))
      found.push(`${file} imports ${target}: ${from} may import ${rule.join(', ') || 'nothing outside itself'}`);
    for (const [stage, forbidden] of Object.entries(BENCH_STAGES)) {
      if (!file.startsWith(stage)) continue;
      const bad = forbidden.find((f) => target === f || target.startsWith(f));
      if (bad) found.push(`${file} imports ${target}: ${stage} may not import ${bad}`);
    }
  }
  return found;
}

describe('the layers of ARCHITECTURE.md', () => {
  const all = harnessImports();

  it('every harness import follows them', () => {
    expect(violations(all)).toEqual([]);
  });

  it('harness/ holds no loose source file but main.ts, and every folder is in a layer', () => {
    const entries = readdirSync(HARNESS, { withFileTypes: true });
    expect(entries.filter((e) => e.isFile()).map((e) => e.name)).toEqual(['main.ts']);
    const folders = entries.filter((e) => e.isDirectory()).map((e) => e.name);
    expect(folders.filter((f) => !(f in SHARED) && !(f in PRODUCTS) && !(f in TOP))).toEqual([]);
  });

  it('ARCHITECTURE.md names every layer and product', () => {
    const doc = readFileSync(path.join(ROOT, 'ARCHITECTURE.md'), 'utf8');
    for (const name of [...Object.keys(SHARED), ...Object.keys(PRODUCTS), 'cli']) expect(doc).toContain(`\`${name}/\``);
  });

  it.each([
    [
      'a shared layer importing a product',
      { file: 'record/store.ts', target: 'bench/outputs/csv' },
      'record may import core, system',
    ],
    [
      'a lower layer importing a higher one',
      { file: 'core/errors.ts', target: 'system/proc/runner' },
      'core may import nothing outside itself',
    ],
    ['a product importing another', { file: 'probe/command.ts', target: 'capacity/record' }, 'probe may import'],
    [
      'the experiment layer importing a product',
      { file: 'experiment/rounds.ts', target: 'mix/arms' },
      'experiment may import core, workload',
    ],
    [
      'bench importing a product that reads it',
      { file: 'bench/outputs/markdown.ts', target: 'deploy/bundle' },
      'bench may import',
    ],
    [
      'a product importing the command line',
      { file: 'capacity/command.ts', target: 'cli/parse' },
      'capacity may import',
    ],
    [
      'the analysis reaching into execution',
      { file: 'bench/analysis/metrics.ts', target: 'bench/scheduler' },
      'bench/analysis/ may not import bench/scheduler',
    ],
    [
      'an output reaching into a process',
      { file: 'bench/outputs/markdown.ts', target: 'system/proc/runner' },
      'bench/outputs/ may not import system/proc/',
    ],
    ['a loose file in harness/', { file: 'helpers.ts', target: 'core/errors' }, 'is in no layer'],
  ])('catches %s', (_name, planted, message) => {
    expect(violations([...all, planted]).join('\n')).toContain(message);
  });
});

describe('one source of truth', () => {
  it('only bench/analysis/rounds.ts groups trials into rounds (the one grouping)', () => {
    const grouping = readdirSync(HARNESS, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .filter((f) =>
        /\.trials\.(filter|find|flatMap|map|some|reduce)\(/.test(readFileSync(path.join(HARNESS, f), 'utf8')),
      );
    // Outside the analysis, trials are touched only to run, record, export row by row or resume them.
    expect(
      grouping.filter(
        (f) =>
          f.startsWith('bench/analysis/') ||
          f.startsWith('bench/outputs/markdown') ||
          f.startsWith('bench/outputs/charts') ||
          f.startsWith('deploy/') ||
          f.startsWith('bench/outputs/metrics') ||
          f.startsWith('bench/gate/'),
      ),
    ).toEqual([]);
  });

  it('no command module imports another', () => {
    const commands = harnessImports().filter(
      (i) => /(^|\/)command\.ts$/.test(i.file) && /(^|\/)command$/.test(i.target) && !i.target.startsWith('core/'),
    );
    expect(commands).toEqual([]);
  });
});
