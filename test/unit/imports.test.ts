/**
 * The allowed imports between harness folders, written down and enforced: the analysis is computed
 * from the run alone, the stop policy reads only the analysis, outputs never reach into execution,
 * and no command imports another.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers.js';

const HARNESS = path.join(ROOT, 'harness');

/** Every relative import of every harness file, as paths relative to harness/ without extension. */
function imports(): Array<{ file: string; target: string }> {
  const files = readdirSync(HARNESS, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  return files.flatMap((file) => {
    const text = readFileSync(path.join(HARNESS, file), 'utf8');
    return [...text.matchAll(/from '(\.{1,2}\/[^']+)\.js'/g)].map((m) => ({ file, target: path.join(path.dirname(file), m[1] as string) }));
  });
}

/** folder → the harness paths (folders or files, no extension) its files may not import. */
const FORBIDDEN: Record<string, string[]> = {
  'analysis/': ['execute/', 'export/', 'report/', 'artifacts/', 'commands/', 'mps/', 'proc/', 'workload/', 'scheduler', 'gate'],
  'execute/': ['export/', 'report/', 'artifacts/', 'commands/', 'mps/', 'proc/', 'workload/', 'nvidia/', 'scheduler'],
  'run/': ['analysis/', 'execute/', 'report/', 'artifacts/', 'commands/', 'scheduler', 'gate'],
  'export/': ['commands/', 'execute/', 'mps/', 'proc/', 'workload/', 'scheduler'],
  'report/': ['commands/', 'execute/', 'mps/', 'proc/', 'workload/', 'scheduler'],
  'probe/': ['commands/', 'execute/', 'analysis/', 'report/', 'export/', 'artifacts/', 'workload/', 'scheduler'],
  'artifacts/': ['commands/', 'execute/', 'mps/', 'proc/', 'workload/', 'scheduler', 'report/', 'export/'],
};

describe('imports between folders', () => {
  const all = imports();

  it.each(Object.entries(FORBIDDEN))('%s imports none of %j', (folder, forbidden) => {
    const bad = all.filter((i) => i.file.startsWith(folder) && forbidden.some((f) => i.target === f || i.target.startsWith(f)));
    expect(bad).toEqual([]);
  });

  it('no command imports another command', () => {
    expect(all.filter((i) => i.file.startsWith('commands/') && i.target.startsWith('commands/'))).toEqual([]);
  });

  it('only analysis/rounds.ts groups trials into rounds (the one grouping)', () => {
    const grouping = readdirSync(HARNESS, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .filter((f) => /\.trials\.(filter|find|flatMap|map|some|reduce)\(/.test(readFileSync(path.join(HARNESS, f), 'utf8')));
    // Outside the analysis, trials are touched only to run, record, export row by row or resume them.
    expect(grouping.filter((f) => f.startsWith('analysis/') || f.startsWith('report/') || f.startsWith('artifacts/') || f.startsWith('export/metrics') || f === 'gate.ts')).toEqual([]);
  });
});
