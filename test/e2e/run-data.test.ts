/**
 * Run data stays out of the code: `npx gpushare demo` run in a checkout writes only under the
 * git-ignored runs/, so `npm test` after it sees the tree it would see without it (issue 37: demo's
 * simulated run under results/ used to make the fleet report test fail). Every test that reads runs
 * reads the committed ones (results/, evidence/) through test/helpers.ts, never runs/; the store's index
 * is current; and a clone's run data stays within the budget CONTRIBUTING.md states.
 */
import { copyFileSync, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { evidenceIndex } from '../../harness/cli/evidence-index.js';
import { CLI, ROOT, tempDir } from '../helpers.js';

/** This machine's PATH as it is: demo needs no fake on it. */
const PLAIN_PATH = process.env.PATH ?? '';

const git = (cwd: string, args: string[]) => execa('git', args, { cwd, reject: false });

/** Every file under `dir`, relative to it. */
function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)));
}

describe('gpushare demo in a checkout', () => {
  it('writes its run and report under the git-ignored runs/: git status stays clean, results/ and reports/ untouched', async () => {
    // A checkout with this repository's .gitignore and a committed reference run, as a clone has them.
    const repo = tempDir('gpushare-checkout-');
    copyFileSync(path.join(ROOT, '.gitignore'), path.join(repo, '.gitignore'));
    await git(repo, ['init', '-q']);
    await git(repo, ['add', '.gitignore']);
    const commit = await git(repo, ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'checkout']);
    expect(commit.exitCode, commit.stderr).toBe(0);

    const demo = await execa(process.execPath, [CLI, 'demo', '--quiet'], {
      cwd: repo,
      reject: false,
      env: { PATH: PLAIN_PATH },
      timeout: 150_000,
    });
    expect(demo.exitCode, demo.stderr).toBe(0);
    const [run, ...more] = readdirSync(path.join(repo, 'runs', 'results'));
    expect(more).toEqual([]);
    expect(run).toMatch(/^\d{4}-\d{2}-\d{2}-simulated-h200-[0-9a-f]{6}$/);
    expect(existsSync(path.join(repo, 'runs', 'results', run as string, 'run.json'))).toBe(true);
    expect(existsSync(path.join(repo, 'runs', 'reports', `${run}.md`))).toBe(true);
    // It says where they went: the absolute path, so a user can find them from anywhere.
    expect(demo.stdout).toContain(`results: ${path.join(repo, 'runs', 'results', run as string)}\n`);
    expect(demo.stdout).toContain(`report: ${path.join(repo, 'runs', 'reports', `${run}.md`)}`);
    expect(readdirSync(repo).sort()).toEqual(['.git', '.gitignore', 'runs']);
    const status = await git(repo, ['status', '--porcelain', '--untracked-files=all']);
    expect([status.exitCode, status.stdout]).toEqual([0, '']);
  }, 180_000);
});

describe('the tests that read runs', () => {
  /** Test files that name a directory under the repository's root where runs are: results/, reports/ or runs/. */
  const readers = files(path.join(ROOT, 'test'))
    .filter((f) => f.endsWith('.ts') && !f.startsWith('fixtures'))
    .flatMap((f) => {
      const text = readFileSync(path.join(ROOT, 'test', f), 'utf8');
      const named = /(?:ROOT, |\$\{ROOT\}\/)'?(results|reports|runs)\b/g;
      return [...text.matchAll(named)].map((m) => `${f}: ${m[1]}`);
    });

  it('read the committed runs through test/helpers.ts, never runs/ where default output goes', () => {
    expect([...new Set(readers)].sort()).toEqual(
      [
        // Every committed report regenerates from its run.
        'e2e/committed-reports.test.ts: reports',
        'e2e/committed-reports.test.ts: results',
        // This file: the reference runs, and their size.
        'e2e/run-data.test.ts: reports',
        'e2e/run-data.test.ts: results',
        // The committed Kubernetes Job manifest (reports/fleet/), not a run.
        'cli/fleet-job.test.ts: reports',
        'e2e/smoke.test.ts: reports',
        // The committed capacity report, regenerated from its run.
        'unit/capacity.test.ts: reports',
        // Every reference run is in the store too.
        'unit/evidence.test.ts: results',
        // The committed runs tests read, by id: results/ first, else the store.
        'helpers.ts: results',
        // The docs' run ids resolve; their tables' figures recompute from the runs they cite.
        'e2e/citations.test.ts: results',
        'e2e/doc-figures.ts: results',
      ].sort(),
    );
  });
});

/** The budget CONTRIBUTING.md states for run data in a clone. */
const BUDGET_MIB = 32;

describe('the committed run data', () => {
  const committed = readdirSync(path.join(ROOT, 'results')).sort();
  const contributing = readFileSync(path.join(ROOT, 'CONTRIBUTING.md'), 'utf8');

  it('is in the store; a reference run has its report and a summary beside it, and no CSV', () => {
    const stored = readdirSync(path.join(ROOT, 'evidence'));
    for (const id of committed) {
      expect([id, stored.includes(`${id}.tar.br`)]).toEqual([id, true]);
      expect([id, existsSync(path.join(ROOT, 'reports', `${id}.md`))]).toEqual([id, true]);
      const dir = path.join(ROOT, 'results', id);
      expect([id, ['console.txt', 'summary.txt'].some((f) => existsSync(path.join(dir, f)))]).toEqual([id, true]);
      // The CSVs are written from run.json: a reference run leaves them out.
      expect(files(dir).filter((f) => f.endsWith('.csv'))).toEqual([]);
    }
  });

  it('is indexed by evidence/README.md as npm run evidence:index writes it', async () => {
    const stale = 'evidence/README.md is stale: npm run evidence:index writes it again';
    expect(readFileSync(path.join(ROOT, 'evidence', 'README.md'), 'utf8'), stale).toBe(await evidenceIndex(ROOT));
  });

  it(`totals at most the ${BUDGET_MIB} MiB CONTRIBUTING.md states: evidence/, results/, reports/ and test/fixtures/`, () => {
    expect(contributing).toContain(`**${BUDGET_MIB} MiB**`);
    const bytes = ['evidence', 'results', 'reports', path.join('test', 'fixtures')]
      .flatMap((dir) => files(path.join(ROOT, dir)).map((f) => statSync(path.join(ROOT, dir, f)).size))
      .reduce((a, b) => a + b, 0);
    console.log(`run data: ${(bytes / 2 ** 20).toFixed(2)} MiB of ${BUDGET_MIB} MiB`);
    expect(bytes).toBeLessThanOrEqual(BUDGET_MIB * 2 ** 20);
  });
});
