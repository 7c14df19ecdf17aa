/**
 * Every report committed under reports/ regenerates byte for byte from the reference runs committed
 * under results/ — each run's report and charts, and the comparison — and every chart is valid XML
 * without scripts that renders to PNG. (Every run, these among them, is in the evidence store too:
 * docs/evidence.md.)
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Resvg } from '@resvg/resvg-js';
import { XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli, tempDir } from '../helpers.js';

const RESULTS = path.join(ROOT, 'results');
const REPORTS = path.join(ROOT, 'reports');

/** Every file under `dir`, relative to it, sorted. */
function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort();
}

/**
 * Every file `args` writes into a fresh --out directory equals the same file under reports/, byte for
 * byte, and `expected` (files under reports/) are among them. Returns the files written.
 */
async function expectRegenerated(args: string[], expected: string[]): Promise<string[]> {
  const out = tempDir();
  const result = await runCli([...args, '--out', out]);
  expect([args.join(' '), result.stderr]).toEqual([args.join(' '), '']);
  const written = files(out);
  expect(written).toEqual(expect.arrayContaining(expected));
  for (const file of written)
    expect([file, readFileSync(path.join(out, file), 'utf8')]).toEqual([
      file,
      readFileSync(path.join(REPORTS, file), 'utf8'),
    ]);
  return written.map((file) => path.join(out, file));
}

const runs = readdirSync(RESULTS).filter((id) => existsSync(path.join(REPORTS, `${id}.md`)));
const comparisons = readdirSync(REPORTS).flatMap((name) => {
  const ids = /^compare-(.+)-vs-(.+)\.md$/.exec(name);
  return ids ? [[name, ids[1] as string, ids[2] as string] as const] : [];
});

describe('the committed reports regenerate byte for byte', () => {
  it('covers every committed run', () => {
    expect(readdirSync(RESULTS).filter((id) => !runs.includes(id))).toEqual([]);
    // The reference runs docs/evidence.md lists (test/e2e/run-data.test.ts checks the list).
    expect(runs.length).toBeGreaterThanOrEqual(16);
    expect(comparisons.length).toBeGreaterThanOrEqual(1);
  });

  it.each(runs)('%s: its report and charts; every chart valid XML without scripts that renders to PNG', async (id) => {
    const charts = existsSync(path.join(REPORTS, id)) ? files(path.join(REPORTS, id)).map((f) => path.join(id, f)) : [];
    // A multi-GPU run writes its GPUs' reports too.
    const written = await expectRegenerated(['report', path.join(RESULTS, id)], [`${id}.md`, ...charts]);
    for (const file of written.filter((f) => f.endsWith('.svg'))) {
      const svg = readFileSync(file, 'utf8');
      expect([file, XMLValidator.validate(svg)]).toEqual([file, true]);
      expect(svg).not.toMatch(/<script|javascript:/i);
      const png = new Resvg(svg).render();
      expect(png.width).toBeGreaterThan(300);
      expect(png.asPng().length).toBeGreaterThan(1000);
    }
  });

  it.each(comparisons)('%s', async (name, a, b) => {
    await expectRegenerated(['report', path.join(RESULTS, a), path.join(RESULTS, b)], [name]);
  });
});
