/**
 * A server run's requests file (serve/requests-log.ts): one line per request, each window one gzip
 * member appended, read back through its schema; a window cut by a kill loses only its broken line;
 * --resume's filter; an old run without the file still loads and reports; the evidence store carries it.
 */
import { appendFileSync, cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../harness/core/random.js';
import type { RequestRecord } from '../../harness/load/request.js';
import { type LoadResult, summarize } from '../../harness/load/run.js';
import { openRun, runHolds, storeRun } from '../../harness/record/evidence.js';
import { REQUESTS_FILE } from '../../harness/record/kinds.js';
import { analyzeServe } from '../../harness/serve/analysis.js';
import { serveMarkdown } from '../../harness/serve/markdown.js';
import { loadServeRun } from '../../harness/serve/record.js';
import {
  loadRequests,
  type RequestLine,
  RequestsLog,
  requestLine,
  type WindowTag,
  windowLines,
} from '../../harness/serve/requests-log.js';
import { ROOT, tempDir } from '../helpers.js';

const record = (i: number, over: Partial<RequestRecord> = {}): RequestRecord => ({
  outcome: 'ok',
  detail: null,
  status: 200,
  scheduledMs: 1000 + i,
  sentMs: 1000.25 + i,
  ttftMs: 20.123456,
  itlMs: [5, 7, 3, 9],
  e2eMs: 45.5,
  outputTokens: 5,
  textChunks: 5,
  usageTokens: 5,
  requestedTokens: 16,
  ...over,
});

const result = (records: RequestRecord[]): LoadResult => ({
  ...summarize({ kind: 'closed', concurrency: 2 }, 1000, 1100, records),
  startMs: 1000,
});

const tag = (over: Partial<WindowTag> = {}): WindowTag => ({
  mode: 'mps',
  copies: 2,
  kind: 'round',
  arm: 'shared',
  index: 0,
  ratePerS: null,
  windowAtMs: 1_765_000_000_000,
  ...over,
});

describe('requestLine', () => {
  it("keeps the request's times from its copy's load start, its ITL summary, tokens and outcome", () => {
    expect(requestLine(tag(), 1, 1000, record(2))).toEqual({
      ...tag(),
      copy: 1,
      scheduledMs: 2,
      sentMs: 2.25,
      ttftMs: 20.123,
      // Gaps 5, 7, 3, 9: the lower median 5, the longest 9.
      itl: { count: 4, p50Ms: 5, maxMs: 9 },
      e2eMs: 45.5,
      outputTokens: 5,
      usageTokens: 5,
      textChunks: 5,
      requestedTokens: 16,
      outcome: 'ok',
      detail: null,
      status: 200,
    });
  });

  it('divides a multi-token chunk gap as the window does (load/tokens.ts); no gap: no summary', () => {
    expect(requestLine(tag(), 0, 0, record(0, { usageTokens: 10 })).itl).toEqual({ count: 4, p50Ms: 2.5, maxMs: 4.5 });
    const failed = requestLine(tag(), 0, 0, record(0, { outcome: 'cut', detail: 'gone', ttftMs: null, itlMs: [] }));
    expect(failed).toMatchObject({ itl: null, ttftMs: null, outcome: 'cut', detail: 'gone' });
  });

  it("windowLines: every copy's requests, each naming its copy", () => {
    const lines = windowLines(tag(), [result([record(0), record(1)]), result([record(2)])]);
    expect(lines.map((l) => l.copy)).toEqual([0, 0, 1]);
  });
});

describe('RequestsLog and loadRequests', () => {
  const lines = (n: number, over: Partial<WindowTag> = {}): RequestLine[] =>
    windowLines(tag(over), [result(Array.from({ length: n }, (_, i) => record(i)))]);

  it('reads back every window appended, in order; a run without the file has none', async () => {
    const dir = tempDir();
    expect(await loadRequests(dir)).toBeNull();
    const log = new RequestsLog(dir);
    await log.append(lines(3, { index: 0 }));
    await log.append([]);
    await log.append(lines(2, { index: 1 }));
    const read = await loadRequests(dir);
    expect(read?.cut).toBe(false);
    expect(read?.lines.map((l) => l.index)).toEqual([0, 0, 0, 1, 1]);
    expect(read?.lines[0]).toEqual(lines(1)[0]);
  });

  it('a window cut by a kill loses its broken line, not the windows before it; retain rewrites it whole', async () => {
    const dir = tempDir();
    const log = new RequestsLog(dir);
    await log.append(lines(3));
    const whole = gzipSync(
      lines(4, { index: 1 })
        .map((l) => `${JSON.stringify(l)}\n`)
        .join(''),
    );
    // Cut inside the member's data: the last line comes part-way.
    appendFileSync(log.file, whole.subarray(0, whole.length - 30));
    const read = await loadRequests(dir);
    expect(read?.cut).toBe(true);
    expect(read?.lines.length).toBeGreaterThanOrEqual(3);
    expect(read?.lines.length).toBeLessThan(7);
    expect(await log.retain(() => true)).toBe(read?.lines.length);
    expect((await loadRequests(dir))?.cut).toBe(false);
  });

  it("retain drops what --resume measures again (a group's lines)", async () => {
    const dir = tempDir();
    const log = new RequestsLog(dir);
    await log.append(lines(3, { mode: 'timeslice', copies: 1 }));
    await log.append(lines(2, { mode: 'mps', copies: 2 }));
    expect(await log.retain((l) => l.mode !== 'mps' || l.copies !== 2)).toBe(3);
    expect((await loadRequests(dir))?.lines.map((l) => l.mode)).toEqual(['timeslice', 'timeslice', 'timeslice']);
  });

  it('refuses a line off its schema, and a file that is not gzip, in one line naming it', async () => {
    const dir = tempDir();
    const bad = { ...lines(1)[0], outcome: 'great' };
    writeFileSync(path.join(dir, REQUESTS_FILE), gzipSync(`${JSON.stringify(bad)}\n`));
    await expect(loadRequests(dir)).rejects.toThrow(/line 1 does not match the request line schema at outcome/);
    writeFileSync(path.join(dir, REQUESTS_FILE), 'plain text\n');
    await expect(loadRequests(dir)).rejects.toThrow(/is not gzip/);
  });

  it('under 80 bytes per request compressed (27 with random times and gaps): 100k requests take a few MB', async () => {
    const dir = tempDir();
    const log = new RequestsLog(dir);
    // Varied as real ones are: every time a draw of its own (mulberry32, seeded).
    const draw = mulberry32(7);
    const varied = (i: number) =>
      record(i, {
        scheduledMs: 1000 + i * 13.71 + draw() * 5,
        sentMs: 1000.031 + i * 13.71 + draw() * 5,
        ttftMs: 60 + draw() * 30,
        itlMs: Array.from({ length: 63 }, () => 9 + draw() * 4),
        e2eMs: 700 + draw() * 100,
        outputTokens: 64,
        textChunks: 64,
        usageTokens: 64,
        requestedTokens: 64,
      });
    for (let w = 0; w < 10; w++)
      await log.append(windowLines(tag({ index: w }), [result(Array.from({ length: 300 }, (_, i) => varied(i)))]));
    const perRequest = readFileSync(log.file).length / 3000;
    expect(perRequest).toBeLessThan(80);
  });
});

describe('a run recorded before requests were kept, and the evidence store', () => {
  const OLD = path.join(ROOT, 'evidence', '2026-11-27-h100-80gb-hbm3-serve-501b6b.tar.br');

  it('an old run loads and reports without a requests file', async () => {
    const dir = await openRun(OLD);
    const run = await loadServeRun(dir);
    expect(run?.requests).toBeUndefined();
    expect(await loadRequests(dir)).toBeNull();
    const text = serveMarkdown(run as never, analyzeServe(run as never), 'test');
    expect(text).toMatch(/## Shared ÷ dedicated/);
  });

  it('gpushare evidence add packs the requests file, and a stored run opened exposes it', async () => {
    const dir = path.join(tempDir(), 'run');
    cpSync(await openRun(OLD), dir, { recursive: true });
    const log = new RequestsLog(dir);
    await log.append(windowLines(tag(), [result([record(0), record(1)])]));
    const { file } = await storeRun(dir, tempDir());
    // Stored as plain lines (brotli compresses them across the file), opened as the run wrote them.
    expect([runHolds(file, 'requests.jsonl'), runHolds(file, REQUESTS_FILE)]).toEqual([true, false]);
    const opened = await openRun(file);
    expect(readdirSync(opened).filter((f) => f.startsWith('requests'))).toEqual([REQUESTS_FILE]);
    expect((await loadRequests(opened))?.lines).toEqual((await loadRequests(dir))?.lines);
    // The run directory itself is left as it was.
    expect(readdirSync(dir).filter((f) => f.startsWith('requests'))).toEqual([REQUESTS_FILE]);
  });

  it('a requests file that is not gzip is refused in one line, nothing stored', async () => {
    const dir = path.join(tempDir(), 'run');
    cpSync(await openRun(OLD), dir, { recursive: true });
    writeFileSync(path.join(dir, REQUESTS_FILE), 'not gzip');
    const store = tempDir();
    await expect(storeRun(dir, store)).rejects.toThrow(
      /requests\.jsonl\.gz is not gzip \(.*\): the store keeps only runs as written$/,
    );
    expect(readdirSync(store)).toEqual([]);
  });
});
