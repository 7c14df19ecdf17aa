/**
 * The kinds of directory gpushare writes, each known by the one record file it holds. Which product
 * reads which kind is the product's business; this is only how a directory says what it is.
 */
import { lstat } from 'node:fs/promises';
import path from 'node:path';

/** A bench run: run.json. */
export const RUN_FILE = 'run.json';
/** A probe run: probe.json. */
export const PROBE_FILE = 'probe.json';
/** A capacity run: capacity.json. */
export const CAPACITY_FILE = 'capacity.json';
/** A mix run (unlike tenants): mix.json. */
export const MIX_FILE = 'mix.json';
/** A verify run (declared vs enforced): verify.json. */
export const VERIFY_FILE = 'verify.json';
/** A server run (bench --serve, capacity --serve): serve.json. */
export const SERVE_FILE = 'serve.json';
/** A server run's requests, one JSON line each, gzip-compressed, beside its serve.json (serve/requests-log.ts). */
export const REQUESTS_FILE = 'requests.jsonl.gz';
/** A multi-GPU host run (bench --gpus): host.json beside one bench run per GPU. */
export const HOST_FILE = 'host.json';

/**
 * Each kind: its record file, what to call it, the command that makes it (and continues it with
 * --resume), and the unit of work its record keeps as it goes.
 */
export const RECORD_KINDS = {
  bench: { file: RUN_FILE, noun: 'bench run', command: 'gpushare bench', unit: 'trial' },
  probe: { file: PROBE_FILE, noun: 'probe run', command: 'gpushare probe', unit: 'probe' },
  capacity: { file: CAPACITY_FILE, noun: 'capacity run', command: 'gpushare capacity', unit: 'point' },
  mix: { file: MIX_FILE, noun: 'mix run', command: 'gpushare mix', unit: 'window' },
  verify: { file: VERIFY_FILE, noun: 'verify run', command: 'gpushare verify', unit: 'check' },
  serve: { file: SERVE_FILE, noun: 'server run', command: 'gpushare bench', unit: 'group' },
  host: { file: HOST_FILE, noun: 'multi-GPU run', command: 'gpushare bench', unit: 'GPU run' },
} as const;
export type RecordKind = keyof typeof RECORD_KINDS;

/** The kind of run `dir` holds, by the record file there (of any file type), or null when it holds none. */
export async function recordKindIn(dir: string): Promise<RecordKind | null> {
  for (const [kind, { file }] of Object.entries(RECORD_KINDS))
    if ((await lstat(path.join(dir, file)).catch(() => null)) !== null) return kind as RecordKind;
  return null;
}

/** "a probe run (probe.json)": a kind as a refusal names it. */
export function kindText(kind: RecordKind): string {
  return `a ${RECORD_KINDS[kind].noun} (${RECORD_KINDS[kind].file})`;
}
