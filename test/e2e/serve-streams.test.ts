/**
 * bench --serve against the simulated server ending its streams as other engines do (the built CLI):
 * no [DONE] after a finish chunk with usage and a role-only first chunk (transformers serve), usage in a
 * chunk of its own before [DONE] (llama.cpp) are measured, usage counted; usage below the chunks fails
 * the group in one line naming the counts; a stream with no finish, or cut inside an event, is cut.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ServeRun } from '../../harness/serve/record.js';
import { cli, ROOT, tempDir, unfolded } from '../helpers.js';

const SERVER = path.join(ROOT, 'simulator', 'openai-server.cjs');
const FAST = [
  '--window-s',
  '0.2',
  '--ceiling-step-s',
  '0.05',
  '--output-tokens',
  '8',
  '--input-tokens',
  '8',
  '--warmup-s',
  '0',
];
/** The time the server holds back the first text chunk (the role-only chunk goes at once), ms. */
const TTFT_MS = 30;

async function bench(mode: string, out: string) {
  return cli([
    'bench',
    '--serve',
    `node ${SERVER} --port {port} --mode ${mode} --ttft-ms ${TTFT_MS} --itl-ms 1`,
    '--endpoint',
    'chat',
    '--modes',
    'timeslice',
    '--copies',
    '1',
    ...FAST,
    '--rounds',
    '1',
    '--request-timeout-s',
    '2',
    '--out',
    out,
  ]);
}
const served = (out: string): ServeRun => JSON.parse(readFileSync(path.join(out, 'serve.json'), 'utf8')) as ServeRun;

describe('bench --serve on streams as other engines end them', () => {
  it.each([
    ['no-done', 'a finish chunk carrying usage, no [DONE]'],
    ['usage-end', 'a finish chunk, a usage chunk with empty choices, then [DONE]'],
  ])('mode %s (%s): every request ok, usage counted, TTFT from the first text chunk', async (mode) => {
    const out = path.join(tempDir(), 'run');
    const result = await bench(mode, out);
    expect(result.exitCode, result.stderr).toBe(0);
    const group = served(out).groups[0];
    expect(group?.status).toBe('measured');
    for (const w of [group?.rounds[0]?.dedicated, group?.rounds[0]?.shared]) {
      expect(w?.failures).toEqual([]);
      expect(w?.ok).toBeGreaterThan(0);
      expect(w?.tokens).toEqual({ withUsage: w?.ok, multiToken: 0, miscounted: 0, short: 0, fromLength: 0 });
      // The role-only chunk came at once; the first text chunk TTFT_MS later: TTFT is that one's.
      expect(w?.ttft.p50Ms).toBeGreaterThanOrEqual(TTFT_MS);
    }
    expect(unfolded(result.stdout)).toMatch(/^timeslice ×1: \d+% /m);
  });

  it('mode koboldcpp (4 tokens a chunk, finish_reason "null" then "length", no usage, an unended [DONE]): ok, max_tokens counted, gaps divided', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await bench('koboldcpp', out);
    expect(result.exitCode, result.stderr).toBe(0);
    const group = served(out).groups[0];
    expect(group?.status).toBe('measured');
    for (const w of [group?.rounds[0]?.dedicated, group?.rounds[0]?.shared]) {
      expect(w?.failures).toEqual([]);
      expect(w?.ok).toBeGreaterThan(0);
      expect(w?.tokens).toEqual({ withUsage: 0, multiToken: 0, miscounted: 0, short: 0, fromLength: w?.ok });
    }
  });

  it('mode usage-mismatch (usage one below the chunks): the group fails in one line naming the counts, exit 3', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await bench('usage-mismatch', out);
    expect(result.exitCode, result.stderr).toBe(3);
    const round = served(out).groups[0]?.rounds[0];
    const ok = (round?.dedicated.ok ?? 0) + (round?.shared.ok ?? 0);
    expect(ok).toBeGreaterThan(0);
    expect(round?.shared.tokens).toMatchObject({ miscounted: round?.shared.ok, multiToken: 0 });
    expect(unfolded(result.stdout)).toMatch(
      new RegExp(
        `^timeslice ×1: failed: the server's usage counted fewer tokens than the text chunks it streamed in ${ok} of ${ok} requests that ended ok \\(over the 1% allowed\\)`,
        'm',
      ),
    );
    const plan = await cli(['plan', '--run', out]);
    expect(plan.exitCode).toBe(3);
  });

  it.each([
    ['no-finish', 'the stream ended with neither a finish_reason nor data: \\[DONE\\] after 8 text chunks'],
    ['cut-mid-event', 'the stream ended inside an event \\(no blank line after its last data\\) after 8 text chunks'],
  ])('mode %s: every request cut, the group failed naming why', async (mode, why) => {
    const out = path.join(tempDir(), 'run');
    const result = await bench(mode, out);
    expect(result.exitCode, result.stderr).toBe(3);
    expect(served(out).groups[0]?.reason).toMatch(
      new RegExp(`^warm-up, the dedicated window measured nothing: none of \\d+ requests ended ok \\(cut: ${why}\\)`),
    );
  });
});
