/**
 * The index of every committed run (evidence/README.md): each run of the evidence store, which holds them
 * all, with its kind, GPU, date, what it measured, whether results/ holds it too, and the pages that cite it.
 * Written by `npm run evidence:index`; test/e2e/run-data.test.ts fails when it is stale.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { openRun, STORE_DIR, STORED_RUN_SUFFIX, storedRunId } from '../record/evidence.js';
import { RECORD_KINDS, type RecordKind, recordKindIn } from '../record/kinds.js';
import { type Fingerprint, gpuAt } from '../system/nvidia/schema.js';

/** The pages whose citations the index lists (every one of them is checked to resolve). */
export function citingPages(root: string): string[] {
  const docs = readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', 'CONTRIBUTING.md', 'ARCHITECTURE.md', ...docs];
}

/** One committed run as the index lists it. */
export interface IndexedRun {
  id: string;
  /** Its file in the store, relative to the repository: `evidence/<id>.tar.br`. */
  file: string;
  /** Whether results/ holds it too, uncompressed (a reference run). */
  reference: boolean;
  kind: RecordKind;
  gpu: string;
  date: string;
  status: string;
  what: string;
}

type Json = Record<string, unknown>;
const list = (x: unknown) => (Array.isArray(x) ? x.map(String).join(',') : String(x ?? '?'));

/** A few words on what a run measured, from its record. */
function whatOf(kind: RecordKind, record: Json): string {
  const settings = (record.settings ?? {}) as Json;
  switch (kind) {
    case 'bench': {
      const c = record.config as Json;
      const workloads = [
        ...new Set(
          [...((c.streamsWorkloads as Json[]) ?? []), ...((c.contentionWorkloads as Json[]) ?? [])].map((w) =>
            String(w.name),
          ),
        ),
      ];
      const counts = c.clientCounts ?? c.clients;
      return `${list(c.modes)}; ${workloads.join(',')}; clients ${list(counts)}`;
    }
    case 'serve': {
      const verb = settings.measure === 'capacity' ? 'capacity --serve' : 'bench --serve';
      // A fleet run's copies are its servers, not the copies setting (which it ignores).
      const servers = ((record.fleet as Json | undefined)?.servers as Json[] | undefined)?.length;
      return servers === undefined
        ? `${verb}; ${list(settings.modes)}; copies ${list(settings.copies)}`
        : `${verb} --fleet; ${list(settings.modes)}; ${servers} servers`;
    }
    case 'capacity':
      return `${list(settings.modes)}; clients ${list(settings.clientCounts)}; p99 ≤ ${settings.sloP99Ms} ms`;
    case 'mix':
      return `${list(settings.modes)}; caps ${list(settings.threadPcts)}%`;
    case 'probe':
      return `${((record.probes as Json[]) ?? []).length} probes`;
    case 'verify':
      return `${((record.rows as Json[]) ?? []).length} limits, ${((record.cases as Json[]) ?? []).length} cases`;
    case 'host':
      return `${((record.gpus as Json[]) ?? []).length} GPUs and their cross check`;
  }
}

/** The record a run directory holds, and the one its GPU is named in (a multi-GPU run's first GPU run). */
async function recordOf(dir: string): Promise<{ kind: RecordKind; record: Json; named: Json }> {
  const kind = await recordKindIn(dir);
  if (kind === null) throw new Error(`${dir} holds no gpushare record`);
  const record = JSON.parse(readFileSync(path.join(dir, RECORD_KINDS[kind].file), 'utf8')) as Json;
  if (kind !== 'host') return { kind, record, named: record };
  const first = ((record.gpus as Json[]) ?? [])[0];
  const named = JSON.parse(readFileSync(path.join(dir, String(first?.dir), 'run.json'), 'utf8')) as Json;
  return { kind, record, named };
}

function gpuName(record: Json): string {
  const fingerprint = record.fingerprint as Fingerprint;
  const index = Number(record.gpuIndex ?? (record.config as Json | undefined)?.gpuIndex ?? 0);
  return String((gpuAt(fingerprint, index) ?? fingerprint.gpus[0])?.name ?? '?').replace(/^NVIDIA /, '');
}

/** Every run of the store under `root`, by id. */
export async function committedRuns(root: string): Promise<IndexedRun[]> {
  const files = readdirSync(path.join(root, STORE_DIR))
    .filter((f) => f.endsWith(STORED_RUN_SUFFIX))
    .sort();
  const runs: IndexedRun[] = [];
  for (const name of files) {
    const id = storedRunId(name);
    const file = `${STORE_DIR}/${name}`;
    const { kind, record, named } = await recordOf(await openRun(path.join(root, file)));
    const gpus = kind === 'host' ? ` ×${((record.gpus as Json[]) ?? []).length}` : '';
    runs.push({
      id,
      file,
      reference: existsSync(path.join(root, 'results', id)),
      kind,
      gpu: `${gpuName(named)}${gpus}`,
      date: String(record.createdAt).slice(0, 10),
      status: String(record.status),
      what: whatOf(kind, record),
    });
  }
  return runs;
}

/** The pages that name run `id` (whole, or as its `…-<6 hex>` short form). */
function citedBy(id: string, pages: ReadonlyMap<string, string>): string[] {
  const short = id.slice(-6);
  const named = new RegExp(`${id.replace(/[.]/g, '\\.')}|…-(?:[a-z0-9-]*-)?${short}\\b`);
  return [...pages].filter(([, text]) => named.test(text)).map(([page]) => page);
}

/** evidence/README.md's text. */
export async function evidenceIndex(root: string): Promise<string> {
  const runs = await committedRuns(root);
  const pages = new Map(citingPages(root).map((p) => [p, readFileSync(path.join(root, p), 'utf8')]));
  const link = (page: string) => `[${path.basename(page)}](../${page})`;
  const reference = runs.filter((r) => r.reference).length;
  const rows = runs.map((r) => {
    const cited = citedBy(r.id, pages);
    const place = `[${r.id}](${path.basename(r.file)})${r.reference ? ` (also [results/](../results/${r.id}))` : ''}`;
    return `| ${place} | ${r.kind} | ${r.gpu} | ${r.date} | ${r.status === 'complete' ? '' : `${r.status}; `}${r.what} | ${cited.map(link).join(', ')} |`;
  });
  return [
    '# Every committed run',
    '',
    '<!-- Written by `npm run evidence:index` (harness/cli/evidence-index.ts); test/e2e/run-data.test.ts fails when it is stale. -->',
    '',
    `${runs.length} runs, each a file \`<run id>${STORED_RUN_SUFFIX}\` here (a brotli-compressed tar of the run's directory); the`,
    `${reference} reference runs are under \`results/\` too, uncompressed. Every command that reads a run takes a stored`,
    `one where it lies (\`gpushare show ${STORE_DIR}/<run id>${STORED_RUN_SUFFIX}\`); [docs/evidence.md](../docs/evidence.md) says how to`,
    'use them and how a new run is added.',
    '',
    '| run | kind | GPU | date | what it measured | cited by |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
