/**
 * Every request of a server run, kept beside serve.json (REQUESTS_FILE): one JSON line per request,
 * gzip-compressed, one gzip member appended per window, so a run cut short keeps every window it
 * measured (gzip readers take concatenated members as one stream; `zcat` reads it). A line says which
 * window it was of (group, kind, arm, index, copy) and what the request did (its times, an ITL summary,
 * its token counts, its outcome). --resume drops the lines of what it measures again.
 */
import { appendFile, readFile, rename, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { constants, gunzipSync, gzipSync } from 'node:zlib';
import { z } from 'zod';
import { UserError } from '../core/errors.js';
import { REQUEST_OUTCOMES, type RequestRecord } from '../load/request.js';
import type { LoadResult } from '../load/run.js';
import { tokenGapsMs } from '../load/tokens.js';
import { REQUESTS_FILE } from '../record/kinds.js';
import { IN_PROCESS, SERVE_MODES } from './options.js';

const ms = z.number().min(-1e12).max(1e12);
const count = z.number().int().nonnegative().max(1e12);

/** Which window a request was of. */
export const WindowTagSchema = z.object({
  /** The group (null: the generator's ceiling, against the null server). */
  mode: z.enum([...SERVE_MODES, 'dedicated', IN_PROCESS]).nullable(),
  copies: z.number().int().positive().nullable(),
  /** warm-up: not kept; round: a bench round; step: a capacity step; ceiling: a rate of the ceiling's sweep. */
  kind: z.enum(['warm-up', 'round', 'step', 'ceiling']),
  /** bench: the arm; null for a step or the ceiling. */
  arm: z.enum(['dedicated', 'shared']).nullable(),
  /** The round, step, ceiling rate or warm-up window, from 0 (the ceiling's unkept first step: warm-up 0). */
  index: count,
  /** Open loop: the total rate, requests/s; null for a closed loop. */
  ratePerS: z.number().nonnegative().max(1e12).nullable(),
  /** When the window was released, ms since the Unix epoch. */
  windowAtMs: z.number().int().nonnegative().max(1e14),
});
export type WindowTag = z.infer<typeof WindowTagSchema>;

/** One request: a line of REQUESTS_FILE. */
export const RequestLineSchema = WindowTagSchema.extend({
  /** Which copy of the window's group drove it, from 0. */
  copy: count,
  /** A fleet's server (its index, fleet-record.ts) that copy was; absent outside fleets and from runs before it was kept. */
  server: z.number().int().positive().optional(),
  /** When it was scheduled and sent, ms from its copy's load start (µs precision). */
  scheduledMs: ms,
  sentMs: ms,
  /** From scheduled to the first text chunk, ms; null: no token came. */
  ttftMs: ms.nullable(),
  /** Its per-token gaps (load/tokens.ts): how many, their median and the longest, ms; null: fewer than two tokens. */
  itl: z.object({ count, p50Ms: ms, maxMs: ms }).nullable(),
  /** From scheduled to the end of the response or the failure, ms. */
  e2eMs: ms,
  outputTokens: count,
  usageTokens: count.nullable(),
  textChunks: count,
  requestedTokens: count,
  /** The prompt's length in words; absent from runs before it was kept. */
  inputTokens: count.optional(),
  outcome: z.enum(REQUEST_OUTCOMES as [RequestRecord['outcome'], ...RequestRecord['outcome'][]]),
  detail: z.string().max(10_000).nullable(),
  status: z.number().int().nullable(),
});
export type RequestLine = z.infer<typeof RequestLineSchema>;

const round3 = (v: number) => Math.round(v * 1000) / 1000;

/** A request's line: `startMs` is its copy's load start, on the clock of its record. */
export function requestLine(tag: WindowTag, copy: number, startMs: number, r: RequestRecord): RequestLine {
  const gaps = tokenGapsMs(r);
  const sorted = [...gaps].sort((a, b) => a - b);
  return {
    ...tag,
    copy,
    scheduledMs: round3(r.scheduledMs - startMs),
    sentMs: round3(r.sentMs - startMs),
    ttftMs: r.ttftMs === null ? null : round3(r.ttftMs),
    // The lower median: one of the gaps, not a mean of two.
    itl:
      sorted.length === 0
        ? null
        : {
            count: sorted.length,
            p50Ms: round3(sorted[Math.floor((sorted.length - 1) / 2)] as number),
            maxMs: round3(sorted.at(-1) as number),
          },
    e2eMs: round3(r.e2eMs),
    outputTokens: r.outputTokens,
    usageTokens: r.usageTokens,
    textChunks: r.textChunks,
    requestedTokens: r.requestedTokens,
    ...(r.inputTokens === undefined ? {} : { inputTokens: r.inputTokens }),
    outcome: r.outcome,
    detail: r.detail,
    status: r.status,
  };
}

/**
 * The lines of one window: each copy's load run (its index is the copy's), each request in it; with
 * `servers`, a fleet's window, copy k is server servers[k].
 */
export function windowLines(
  tag: WindowTag,
  results: readonly LoadResult[],
  servers?: readonly number[],
): RequestLine[] {
  return results.flatMap((result, copy) => {
    const server = servers?.[copy];
    return result.records.map((r) => ({
      ...requestLine(tag, copy, result.startMs, r),
      ...(server === undefined ? {} : { server }),
    }));
  });
}

const encode = (lines: readonly RequestLine[]) =>
  gzipSync(lines.map((l) => `${JSON.stringify(l)}\n`).join(''), { level: 9 });

/** The largest requests file read: 100k requests take about 6 MB. */
export const MAX_REQUESTS_BYTES = 1024 * 1024 * 1024;

/**
 * The requests of the run in `dir`, each line checked against its schema; null where the run has no
 * requests file (one recorded before they were kept). A window whose append was cut by a kill ends the
 * file part-way: what was whole is read, the broken last line left out (`cut`).
 */
export async function loadRequests(dir: string): Promise<{ lines: RequestLine[]; cut: boolean } | null> {
  const file = path.join(dir, REQUESTS_FILE);
  const size = (await stat(file).catch(() => null))?.size;
  if (size === undefined) return null;
  if (size > MAX_REQUESTS_BYTES)
    throw new UserError(`${file} is ${size} bytes, more than a server run writes (${MAX_REQUESTS_BYTES})`);
  let text: string;
  try {
    // A sync flush at the end: a member cut short gives what it holds instead of an error.
    text = gunzipSync(await readFile(file), { finishFlush: constants.Z_SYNC_FLUSH }).toString('utf8');
  } catch (error) {
    throw new UserError(`${file} is not gzip (${(error as Error).message}): it was damaged; measure the run again`);
  }
  const rows = text.split('\n');
  const last = rows.pop() as string;
  const lines = rows.map((row, i) => {
    let json: unknown;
    try {
      json = JSON.parse(row);
    } catch {
      throw new UserError(`${file}: line ${i + 1} is not JSON: it was edited; measure the run again`);
    }
    const parsed = RequestLineSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new UserError(
        `${file}: line ${i + 1} does not match the request line schema at ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
      );
    }
    return parsed.data;
  });
  return { lines, cut: last !== '' };
}

/** REQUESTS_FILE of a run being measured: appended to per window, filtered where --resume measures again. */
export class RequestsLog {
  constructor(readonly dir: string) {}

  get file(): string {
    return path.join(this.dir, REQUESTS_FILE);
  }

  /** Appends one window's lines as one gzip member (nothing for a window without requests). */
  async append(lines: readonly RequestLine[]): Promise<void> {
    if (lines.length > 0) await appendFile(this.file, encode(lines));
  }

  /**
   * Keeps only the lines `keep` accepts (and drops a line a kill cut short), rewriting the file
   * atomically where any goes; returns the lines left.
   */
  async retain(keep: (line: RequestLine) => boolean): Promise<number> {
    const read = await loadRequests(this.dir);
    if (read === null) return 0;
    const kept = read.lines.filter(keep);
    if (kept.length < read.lines.length || read.cut) {
      const temp = `${this.file}.${process.pid}`;
      await writeFile(temp, encode(kept));
      await rename(temp, this.file);
    }
    return kept.length;
  }
}

/** A run's record of its requests file: its name and how many lines it holds. */
interface KeepsRequests {
  requests?: { file: string; lines: number };
}

/** Appends a window's lines to the run's requests file and counts them in its record (nothing where none is kept). */
export async function appendRequests(
  run: KeepsRequests,
  log: RequestsLog | undefined,
  lines: readonly RequestLine[],
): Promise<void> {
  if (log === undefined) return;
  await log.append(lines);
  run.requests = { file: REQUESTS_FILE, lines: (run.requests?.lines ?? 0) + lines.length };
}

/** Keeps only the requests `keep` accepts (what --resume measures again goes), and the record's count of them. */
export async function retainRequests(
  run: KeepsRequests,
  log: RequestsLog | undefined,
  keep: (line: RequestLine) => boolean,
): Promise<void> {
  if (log !== undefined) run.requests = { file: REQUESTS_FILE, lines: await log.retain(keep) };
}
