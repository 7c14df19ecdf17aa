/**
 * Run data stays out of the code: `npx gpushare demo` run in a checkout writes only under the
 * git-ignored runs/, so `npm test` after it sees the tree it would see without it (issue 37: demo's
 * simulated run under results/ used to make the fleet report test fail). Every test that reads runs
 * reads test/fixtures/runs or the curated reference runs (results/, reports/), never runs/; the
 * reference runs are those docs/evidence.md lists; and a clone's run data stays small.
 */
import { copyFileSync, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
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

  it('read test/fixtures/runs or the reference runs, never runs/ where default output goes', () => {
    expect([...new Set(readers)].sort()).toEqual(
      [
        // Every committed report regenerates from its reference run.
        'e2e/committed-reports.test.ts: reports',
        'e2e/committed-reports.test.ts: results',
        // This file: the reference runs against docs/evidence.md, and their size.
        'e2e/run-data.test.ts: reports',
        'e2e/run-data.test.ts: results',
        // The committed Kubernetes Job manifest (reports/fleet/), not a run.
        'cli/fleet-job.test.ts: reports',
        'e2e/smoke.test.ts: reports',
      ].sort(),
    );
    expect(readFileSync(path.join(ROOT, 'test', 'helpers.ts'), 'utf8')).toContain(
      "export const FIXTURE_RUNS = path.join(ROOT, 'test', 'fixtures', 'runs');",
    );
  });
});

describe('the committed run data', () => {
  const committed = readdirSync(path.join(ROOT, 'results')).sort();
  const index = readFileSync(path.join(ROOT, 'docs', 'evidence.md'), 'utf8');

  it('is the reference runs docs/evidence.md lists on main, each with its report and a summary beside it', () => {
    const listed = /## Reference runs on main\n([\s\S]*?)\n## /.exec(index)?.[1] ?? '';
    const ids = [...listed.matchAll(/^\| \[`(\d{4}-\d{2}-\d{2}-[a-z0-9-]+)`\]/gm)].map((m) => m[1]).sort();
    expect(ids).toEqual(committed);
    for (const id of committed) {
      expect([id, existsSync(path.join(ROOT, 'reports', `${id}.md`))]).toEqual([id, true]);
      const dir = path.join(ROOT, 'results', id);
      expect([id, ['console.txt', 'summary.txt'].some((f) => existsSync(path.join(dir, f)))]).toEqual([id, true]);
      // The CSVs are written from run.json: a reference run leaves them out.
      expect(files(dir).filter((f) => f.endsWith('.csv'))).toEqual([]);
    }
  });

  it('totals at most 15 MB: results/, reports/ and test/fixtures/runs', () => {
    const bytes = ['results', 'reports', path.join('test', 'fixtures', 'runs')]
      .flatMap((dir) => files(path.join(ROOT, dir)).map((f) => statSync(path.join(ROOT, dir, f)).size))
      .reduce((a, b) => a + b, 0);
    expect(bytes).toBeLessThanOrEqual(15 * 1024 * 1024);
  });
});
