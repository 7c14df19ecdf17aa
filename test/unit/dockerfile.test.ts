/**
 * What can be checked of the Dockerfile without building it (no Docker daemon or registry in CI): every
 * COPY source exists and reaches the build context past .dockerignore, the package builds from what is
 * copied, the Node.js it gets satisfies package.json's engines, the base images are pinned, the driver
 * capabilities that mount nvidia-smi and nvidia-cuda-mps-control are set, and the entrypoint is gpushare.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers.js';

interface Instruction {
  keyword: string;
  args: string;
  /** Index of the build stage (FROM) it belongs to. */
  stage: number;
}

/** The Dockerfile's instructions: comments dropped, `\` continuations joined. */
function instructions(text: string): Instruction[] {
  const joined = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ');
  let stage = -1;
  return joined
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
      if (keyword.toUpperCase() === 'FROM') stage += 1;
      return { keyword: keyword.toUpperCase(), args, stage };
    });
}

/** COPY's flags, sources and destination, in shell or JSON form. */
function copyParts(args: string): { flags: string[]; sources: string[]; dest: string } {
  const words = args.startsWith('[') ? (JSON.parse(args) as string[]) : args.split(/\s+/);
  const flags = words.filter((w) => w.startsWith('--'));
  const rest = words.filter((w) => !w.startsWith('--'));
  return { flags, sources: rest.slice(0, -1), dest: rest[rest.length - 1] ?? '' };
}

/** A .dockerignore pattern as Docker's patternmatcher reads it: ** any depth, * and ? within one path element. */
function patternRegex(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i += 1) {
    const c = pattern[i] as string;
    if (c === '*' && pattern[i + 1] === '*') {
      i += 1;
      if (pattern[i + 1] === '/') {
        i += 1;
        re += '(?:.*/)?';
      } else re += '.*';
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** Whether .dockerignore keeps `file` (relative, with /) out of the build context: the last pattern that matches it or a parent wins. */
function ignoredBy(dockerignore: string): (file: string) => boolean {
  const patterns = dockerignore
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const exclusion = line.startsWith('!');
      const body = path.posix.normalize((exclusion ? line.slice(1) : line).trim()).replace(/^\/+/, '');
      return { exclusion, regex: patternRegex(body) };
    });
  return (file) => {
    const parts = file.split('/');
    const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
    let ignored = false;
    for (const p of patterns) if (candidates.some((c) => p.regex.test(c))) ignored = !p.exclusion;
    return ignored;
  };
}

const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
const all = instructions(dockerfile);
const ignored = ignoredBy(readFileSync(path.join(ROOT, '.dockerignore'), 'utf8'));
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  dependencies?: Record<string, string>;
  files: string[];
};
const stages = all.filter((i) => i.keyword === 'FROM').map((i) => i.args);
const finalStage = stages.length - 1;
/** Every file under a directory of the repository, relative to its root. */
const filesUnder = (dir: string) =>
  readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .map((f) => path.posix.join(dir, f.split(path.sep).join('/')))
    .filter((f) => statSync(path.join(ROOT, f)).isFile());

describe('the Dockerfile, checked without building it', () => {
  const contextCopies = all.filter(
    (i) => i.keyword === 'COPY' && !copyParts(i.args).flags.some((f) => f.startsWith('--from')),
  );

  it('copies only paths that exist in the repository and that .dockerignore lets into the build context', () => {
    expect(contextCopies.length).toBeGreaterThan(0);
    for (const copy of contextCopies) {
      for (const source of copyParts(copy.args).sources) {
        const relative = path.posix.normalize(source).replace(/\/$/, '');
        expect(existsSync(path.join(ROOT, relative)), `${source} exists`).toBe(true);
        expect(ignored(relative), `${source} reaches the build context`).toBe(false);
        // A directory: every file in it reaches the context, bytecode caches aside.
        if (statSync(path.join(ROOT, relative)).isDirectory()) {
          const files = filesUnder(relative).filter((f) => !f.includes('__pycache__'));
          expect(files.length, `${source} holds files`).toBeGreaterThan(0);
          expect(files.filter(ignored), `${source}: files left out of the context`).toEqual([]);
        }
      }
    }
  });

  it('keeps run directories, node_modules, dist and bytecode out of the build context', () => {
    for (const file of [
      'node_modules/yaml/package.json',
      'dist/harness/main.js',
      'results/x/run.json',
      'reports/x.md',
      'runs/results/x/run.json',
      'test/helpers.ts',
      'workloads/__pycache__/gemm.cpython-311.pyc',
      '.git/HEAD',
    ]) {
      expect(ignored(file), file).toBe(true);
    }
  });

  it('copies what npm ci, npm run build and npm pack need: the lockfile, the build script, tsconfig.json and its sources, and every entry of package.json files', () => {
    const copied = contextCopies.flatMap((c) =>
      copyParts(c.args).sources.map((s) => path.posix.normalize(s).replace(/\/$/, '')),
    );
    const tsconfig = JSON.parse(readFileSync(path.join(ROOT, 'tsconfig.json'), 'utf8')) as { include: string[] };
    const needed = [
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'build.mjs', // what npm run build runs
      ...tsconfig.include.map((g) => g.split('/')[0] as string),
      ...pkg.files.filter((f) => !f.startsWith('!') && f !== 'dist'),
    ];
    for (const file of needed) expect(copied, file).toContain(file);
    const build = all
      .filter((i) => i.keyword === 'RUN')
      .map((i) => i.args)
      .join(' ');
    expect(build).toMatch(/npm ci\b/);
    expect(build).toContain('npm run build');
    expect(build).toContain('npm pack');
    // What the package runs is bundled into dist/ (build.mjs): the unpacked tarball needs no npm install.
    expect(pkg.dependencies ?? {}).toEqual({});
  });

  it('gets a Node.js that satisfies package.json engines, from a pinned node image', () => {
    const nodeStage = stages.findIndex((s) => s.startsWith('node:'));
    const match = /^node:(\d+)\.(\d+)\.(\d+)-\S+ AS (\S+)$/.exec(stages[nodeStage] ?? '');
    expect(match, `a node stage pinned to x.y.z: ${stages.join(' | ')}`).not.toBeNull();
    const [, major, minor, patch, name] = match as RegExpExecArray;
    const engines = /^>=\s*(\d+)\.(\d+)(?:\.(\d+))?$/.exec(pkg.engines.node);
    expect(engines, pkg.engines.node).not.toBeNull();
    const have = [Number(major), Number(minor), Number(patch)];
    const need = [Number(engines?.[1]), Number(engines?.[2]), Number(engines?.[3] ?? 0)];
    const cmp = have.map((v, i) => v - (need[i] as number)).find((d) => d !== 0) ?? 0;
    expect(cmp, `node ${have.join('.')} >= ${need.join('.')}`).toBeGreaterThanOrEqual(0);
    // The final image runs that node binary, copied from the node stage.
    expect(
      all.some(
        (i) =>
          i.stage === finalStage &&
          i.keyword === 'COPY' &&
          i.args === `--from=${name} /usr/local/bin/node /usr/local/bin/node`,
      ),
    ).toBe(true);
  });

  it('runs on a pinned CUDA PyTorch runtime image with the driver capabilities that mount nvidia-smi (utility) and the MPS binaries (compute)', () => {
    expect(stages[finalStage]).toMatch(/^pytorch\/pytorch:\d+\.\d+\.\d+-cuda\d+\.\d+-cudnn\d+-runtime$/);
    const env = all.filter((i) => i.stage === finalStage && i.keyword === 'ENV').map((i) => i.args);
    const capabilities = env.map((e) => /NVIDIA_DRIVER_CAPABILITIES=(\S+)/.exec(e)?.[1]).find(Boolean) ?? '';
    expect(capabilities.split(',').sort()).toEqual(expect.arrayContaining(['compute', 'utility']));
  });

  it('has gpushare as its entrypoint, linked to the built CLI', () => {
    const entrypoints = all.filter((i) => i.keyword === 'ENTRYPOINT');
    expect(entrypoints.map((e) => e.stage)).toEqual([finalStage]);
    expect(JSON.parse(entrypoints[0]?.args ?? 'null')).toEqual(['gpushare']);
    const bin = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> })
      .bin.gpushare;
    expect(
      all.some(
        (i) =>
          i.stage === finalStage &&
          i.keyword === 'RUN' &&
          i.args.includes(`ln -s /opt/gpushare/${bin} /usr/local/bin/gpushare`),
      ),
    ).toBe(true);
  });

  it('documents how to build it and run it in a GPU pod, and that it is untested', () => {
    const header = dockerfile
      .split('\n')
      .filter((l) => l.startsWith('#'))
      .join('\n');
    expect(header).toContain('docker build -t');
    expect(header).toContain('gpushare fleet job');
    expect(header).toContain('nvidia.com/gpu');
    expect(header).toContain('untested');
  });
});

describe('the .dockerignore matcher used above reads patterns as Docker does', () => {
  it.each([
    ['*\n!harness', 'harness/cli.ts', false],
    ['*\n!harness', 'node_modules/x', true],
    ['*\n!workloads\n**/__pycache__', 'workloads/__pycache__/a.pyc', true],
    ['*\n!workloads\n**/*.pyc', 'workloads/a.pyc', true],
    ['*\n!workloads\n**/*.pyc', 'workloads/a.py', false],
    ['dist', 'dist/harness/main.js', true],
    ['/dist', 'dist', true],
    ['docs/*.md', 'docs/a.md', true],
    ['docs/*.md', 'docs/sub/a.md', false],
    ['a?c', 'abc', true],
  ])('%j, %s: ignored %s', (patterns, file, expected) => {
    expect(ignoredBy(patterns)(file)).toBe(expected);
  });
});
