/**
 * The generator's ceiling against the rate sent (#48): a window or capacity step is checked by the
 * requests it sent per second, not those that completed inside it; exactly at the ceiling is not over;
 * a capacity whose passing step is over is unverified in the report and never the plan's answer; a
 * window's sent rate counts the sends within it.
 */
import { describe, expect, it } from 'vitest';
import type { RequestRecord } from '../../harness/load/request.js';
import { summarize } from '../../harness/load/run.js';
import { analyzeServe, serveAnswer } from '../../harness/serve/analysis.js';
import { serveMarkdown } from '../../harness/serve/markdown.js';
import type { RateStep, ServeGroup, ServeRun, ServeSettings, WindowStats } from '../../harness/serve/record.js';
import { ceilingCheck, NO_CEILING_TEXT, OVER_CEILING_TEXT, stepUnverified } from '../../harness/serve/verdicts.js';
import { sentWithin, windowStats } from '../../harness/serve/window.js';

const lat = (p50: number) => ({ count: 10, p50Ms: p50, p99Ms: p50 * 2, histogram: '' });

function win(over: Partial<WindowStats> = {}): WindowStats {
  return {
    copies: 1,
    concurrency: null,
    ratePerS: 100,
    windowMs: 1000,
    elapsedMs: 1000,
    requests: 500,
    ok: 500,
    good: 500,
    overTtft: 0,
    failures: [],
    outputTokens: 1000,
    outputTokensPerS: 1000,
    requestsPerS: 100,
    ttft: lat(50),
    itl: lat(5),
    e2e: lat(1000),
    lagP99Ms: 0,
    generatorCpuMs: 10,
    ...over,
  };
}

const SETTINGS = {
  measure: 'capacity',
  serve: 'srv --port {port}',
  api: 'completions',
  readyPath: '/v1/models',
  readyTimeoutMs: 1000,
  modes: ['mps'],
  copies: [2],
  concurrency: 8,
  inputTokens: 16,
  inputTokensMax: null,
  outputTokens: 16,
  windowMs: 1000,
  rounds: 6,
  threadPct: null,
  mpsMemCap: false,
  sloTtftP99Ms: 500,
  sloItlMaxMs: null,
  gpuHourUsd: null,
  serverCpus: null,
  generatorCpu: null,
  requestTimeoutMs: 1000,
  ceilingStepMs: 100,
  maxStepMs: 120_000,
} satisfies ServeSettings;

const step = (totalRatePerS: number, window: WindowStats, verdict: RateStep['verdict'] = 'pass'): RateStep => ({
  totalRatePerS,
  window,
  verdict,
  reason: '',
});

const capacityGroup = (mode: ServeGroup['mode'], copies: number, steps: RateStep[]): ServeGroup => ({
  mode,
  copies,
  status: 'measured',
  reason: null,
  rounds: [],
  steps,
  env: {},
});

/** A run whose generator's ceiling is 178 req/s (null-server e2e 1 ms, within 1% of the run's 1000 ms). */
function runOf(groups: ServeGroup[]): ServeRun {
  const nullStep = (ratePerS: number, e2e: number) => ({
    ratePerS,
    window: win({ requestsPerS: ratePerS, sentPerS: ratePerS, outputTokensPerS: 1e6, e2e: lat(e2e) }),
  });
  return {
    schema: 'gpushare.serve/1',
    id: 'r',
    status: 'complete',
    createdAt: '2026-12-06T00:00:00Z',
    finishedAt: null,
    fingerprint: { gpus: [], driverVersion: null } as unknown as ServeRun['fingerprint'],
    gpuIndex: 0,
    settings: SETTINGS,
    ceiling: [nullStep(178, 1), nullStep(356, 50)],
    groups,
    daemons: [],
    host: { cpus: 2, cpuModel: null },
    warnings: [],
  };
}

describe('a window against the ceiling by its sent rate', () => {
  const ceiling = { ratePerS: 178, tokensPerS: 1e6, atLeast: false };
  it('is over when it sent more than the ceiling, though fewer completed inside it; exactly at it is not over', () => {
    expect(ceilingCheck(win({ requestsPerS: 100, sentPerS: 190 }), ceiling)).toBe('over');
    expect(ceilingCheck(win({ requestsPerS: 100, sentPerS: 178 }), ceiling)).toBe('within');
    expect(ceilingCheck(win({ requestsPerS: 100, sentPerS: 178.001 }), ceiling)).toBe('over');
    // A record before the sent rate was kept is checked by its completions, as it was.
    expect(ceilingCheck(win({ requestsPerS: 178 }), ceiling)).toBe('within');
    expect(ceilingCheck(win({ requestsPerS: 179 }), ceiling)).toBe('over');
    expect(ceilingCheck(win({ sentPerS: 1 }), { ...ceiling, ratePerS: null })).toBe('unverified');
  });
  it('is over by output tokens/s alone; exactly at the token ceiling is not over', () => {
    expect(ceilingCheck(win({ sentPerS: 100, outputTokensPerS: 1e6 + 1 }), ceiling)).toBe('over');
    expect(ceilingCheck(win({ sentPerS: 100, outputTokensPerS: 1e6 }), ceiling)).toBe('within');
  });
  it('is within a ceiling the sweep never reached (at least its top rate), however much it sent', () => {
    const atLeast = { ...ceiling, atLeast: true };
    expect(ceilingCheck(win({ sentPerS: 1000, outputTokensPerS: 1e7 }), atLeast)).toBe('within');
    expect(stepUnverified(win({ sentPerS: 1000 }), atLeast)).toBe(false);
  });
  it('flags a capacity step whose sent rate is over, and only steps that kept their sent rate', () => {
    expect(stepUnverified(win({ sentPerS: 264, requestsPerS: 147 }), ceiling)).toBe(true);
    expect(stepUnverified(win({ sentPerS: 178 }), ceiling)).toBe(false);
    expect(stepUnverified(win({ requestsPerS: 300 }), ceiling)).toBe(false);
  });
  it('counts a bench window that sent over the ceiling in the analysis and the report', () => {
    const over = win({ concurrency: 8, ratePerS: null, requestsPerS: 150, sentPerS: 190 });
    const run = runOf([
      {
        ...capacityGroup('mps', 2, []),
        rounds: [{ dedicated: win({ sentPerS: 100 }), shared: over }],
      },
    ]);
    run.settings = { ...SETTINGS, measure: 'bench' };
    const analysis = analyzeServe(run);
    expect(analysis.ceiling.ratePerS).toBe(178);
    expect(analysis.groups[0]?.overCeiling).toBe(1);
    expect(serveMarkdown(run, analysis, 'x')).toContain("1 windows over the generator's ceiling or unverified");
    over.sentPerS = 178;
    expect(analyzeServe(run).groups[0]?.overCeiling).toBe(0);
  });
});

describe('a capacity over the ceiling by sent rate', () => {
  it('is unverified in the report, and the plan names the group measured within it instead', () => {
    const run = runOf([
      capacityGroup('dedicated', 1, [step(64, win({ sentPerS: 64 }))]),
      // Passed at 192 req/s while sending 190 (completions 147): over the 178 ceiling.
      capacityGroup('mps', 2, [step(192, win({ sentPerS: 190, requestsPerS: 147 }))]),
      capacityGroup('timeslice', 2, [step(176, win({ sentPerS: 176 }))]),
    ]);
    const analysis = analyzeServe(run);
    const mps = analysis.groups.find((g) => g.mode === 'mps');
    expect(mps?.capacity).toMatchObject({ ratePerS: 192, unverified: true, sentPerS: 190 });
    const plan = serveAnswer(run, analysis);
    expect(plan.mode).toBe('timeslice');
    expect(plan.answer).toContain('176.0 req/s');
    expect(plan.answer).toContain(`not counted, ${OVER_CEILING_TEXT}: mps ×2 at 192.0 req/s`);
    const md = serveMarkdown(run, analysis, 'x');
    expect(md).toContain(`| mps ×2 | 192.0 (unverified: ${OVER_CEILING_TEXT}) |`);
    expect(md).toContain('mps ×2: its passing step (192.0 req/s, sent 190.0 req/s)');
    // Exactly at the ceiling: measured, and the plan's.
    ((run.groups[1] as ServeGroup).steps[0] as RateStep).window.sentPerS = 178;
    const at = analyzeServe(run);
    expect(at.groups.find((g) => g.mode === 'mps')?.capacity?.unverified).toBeUndefined();
    expect(serveAnswer(run, at).mode).toBe('mps');
  });
  it('leaves the plan no answer when every passing step was over', () => {
    const run = runOf([capacityGroup('mps', 2, [step(256, win({ sentPerS: 264 }))])]);
    const plan = serveAnswer(run, analyzeServe(run));
    expect(plan.mode).toBeNull();
    expect(plan.answer).toContain(OVER_CEILING_TEXT);
  });
  it('says no ceiling was found, not "over" it, when the run found none to check its steps by', () => {
    const run = runOf([capacityGroup('mps', 4, [step(384, win({ sentPerS: 384 }))])]);
    // Null servers over the allowance at every rate: no ceiling.
    run.ceiling = run.ceiling.map((c) => ({ ...c, window: { ...c.window, e2e: lat(50) } }));
    const analysis = analyzeServe(run);
    expect(analysis.ceiling.ratePerS).toBeNull();
    const plan = serveAnswer(run, analysis);
    expect(plan.mode).toBeNull();
    expect(plan.answer).toContain(`not counted, ${NO_CEILING_TEXT}: mps ×4 at 384.0 req/s`);
    expect(plan.answer).not.toContain(OVER_CEILING_TEXT);
    const md = serveMarkdown(run, analysis, 'x');
    expect(md).toContain(`| mps ×4 | 384.0 (unverified: ${NO_CEILING_TEXT}) |`);
    expect(md).toContain(`mps ×4: its passing step (384.0 req/s, sent 384.0 req/s) is ${NO_CEILING_TEXT}`);
  });
});

describe("a window's sent rate", () => {
  const record = (sentMs: number): RequestRecord => ({
    outcome: 'ok',
    detail: null,
    status: 200,
    scheduledMs: sentMs,
    sentMs,
    ttftMs: 10,
    itlMs: [1],
    e2eMs: 20,
    outputTokens: 2,
    textChunks: 2,
    usageTokens: null,
    requestedTokens: 2,
  });
  it('counts the requests sent from its start for its duration, whenever they ended', () => {
    const records = [999, 1000, 1500, 1999.9, 2000, 2500].map(record);
    const run = { ...summarize({ kind: 'constant', ratePerS: 4 }, 1000, 1600, records), startMs: 1000 };
    expect(sentWithin([run])).toBe(3);
    const w = windowStats([run], { ttftP99Ms: 100, itlMaxMs: null }, { concurrency: null, ratePerS: 4 }, 0);
    expect(w.sentPerS).toBe(3);
  });
});
