/**
 * The Python side's linter, formatter and type checker: ruff (lint and format, configured in
 * workloads/pyproject.toml) over workloads/, examples/ and the Python tests, and mypy in strict mode over the helper
 * package. Skipped, saying what to install, where a tool is missing; under CI=true that fails instead
 * (.ci/run installs them). Each check is also shown failing on a planted fault, so a check that
 * stopped looking would fail here.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { ROOT, requireTool, tempDir } from '../helpers.js';

const WORKLOADS = path.join(ROOT, 'workloads');
const CONFIG = path.join(WORKLOADS, 'pyproject.toml');
const PACKAGE = path.join(WORKLOADS, 'gpushare_protocol');
const RUFF = 'install ruff (pip install ruff)';
const MYPY = 'install mypy (pip install mypy)';

/** ruff with the project's configuration, writing no cache into the tree. */
const ruff = (args: string[]) =>
  execa('ruff', [...args, '--no-cache', '--config', CONFIG], { cwd: ROOT, reject: false, all: true });

/** mypy over `dir` (a copy of the package, or the package itself) with the project's configuration, no cache written. */
const mypy = (dir: string) =>
  execa('mypy', ['--config-file', CONFIG, '--cache-dir', '/dev/null', dir], {
    cwd: path.dirname(dir),
    reject: false,
    all: true,
  });

/** A copy of the helper package in a temp directory, `file` in it edited by `edit`. */
function plantedPackage(file: string, edit: (text: string) => string): string {
  const copy = path.join(tempDir('gpushare-lint-'), 'gpushare_protocol');
  cpSync(PACKAGE, copy, { recursive: true });
  const target = path.join(copy, file);
  writeFileSync(target, edit(readFileSync(target, 'utf8')));
  return copy;
}

describe('Python lint, format and types', () => {
  it('ruff check passes over workloads/, examples/ and test/python/, and fails on a planted unused import', async (context) => {
    await requireTool(context, 'ruff', RUFF);
    const clean = await ruff(['check', 'workloads', 'examples', 'test/python']);
    expect([clean.exitCode, clean.all]).toEqual([0, 'All checks passed!']);
    const planted = plantedPackage('wire.py', (t) => t.replace('import json\n', 'import json\nimport shutil\n'));
    const bad = await ruff(['check', planted]);
    expect(bad.exitCode).toBe(1);
    expect(bad.all).toContain('F401');
  });

  it('ruff format --check passes over workloads/, examples/ and test/python/, and fails on a file it would reformat', async (context) => {
    await requireTool(context, 'ruff', RUFF);
    const clean = await ruff(['format', '--check', 'workloads', 'examples', 'test/python']);
    expect([clean.exitCode, clean.all]).toEqual([0, expect.stringMatching(/^\d+ files already formatted$/)]);
    const planted = plantedPackage('wire.py', (t) => t.replace('PROTOCOL = 3', 'PROTOCOL=3'));
    const bad = await ruff(['format', '--check', planted]);
    expect(bad.exitCode).toBe(1);
    expect(bad.all).toContain('wire.py');
  });

  it('mypy --strict passes over the helper package, and fails on a planted type error', async (context) => {
    await requireTool(context, 'mypy', MYPY);
    const clean = await mypy(PACKAGE);
    expect([clean.exitCode, clean.all]).toEqual([
      0,
      expect.stringMatching(/^Success: no issues found in \d+ source files$/),
    ]);
    const planted = plantedPackage('wire.py', (t) => t.replace('return time.monotonic_ns() / 1000.0', 'return "now"'));
    const bad = await mypy(planted);
    expect(bad.exitCode).toBe(1);
    expect(bad.all).toMatch(/wire\.py:\d+: error: Incompatible return value type \(got "str", expected "float"\)/);
  });
});
