/** The arms of each round of a mix run, in the order they run, and what the run takes on an H100. Pure. */
import { abbaOrder } from '../experiment/rounds.js';
import { type MixMode, type MixSettings, type MixWindow, PAIR } from './record.js';

/** One window to measure: who runs, at which load, with which cap. */
export interface Arm {
  arm: MixWindow['arm'];
  /** The aggressor's name, null in the victim-alone arm. */
  aggressor: string | null;
  /** Under MPS, the aggressor's thread %; null uncapped. */
  threadPct: number | null;
  /** The victim's load (fraction of its capacity), null in the aggressor-alone arm. */
  load: number | null;
}

/** The modes that run in one process per tenant; the others hold both tenants in one process. */
export const PROCESS_MODES: readonly MixMode[] = ['timeslice', 'mps'];

/** The aggressor processes a mode runs: each aggressor, and under MPS each again at every cap. */
export function aggressorProcesses(
  settings: MixSettings,
  mode: MixMode,
): Array<{ aggressor: string; threadPct: number | null }> {
  const caps = mode === 'mps' ? [null, ...settings.threadPcts] : [null];
  return settings.aggressors.flatMap((a) => caps.map((threadPct) => ({ aggressor: a.name, threadPct })));
}

/**
 * The arms of a round of `mode`, in their forward order: the victim alone at each load, each aggressor
 * alone (uncapped: the throughput a cap's cost is measured against), and every aggressor process beside
 * the victim at each load. With the compute and bandwidth aggressors both in the scenario, the pair of
 * them alone together.
 */
export function modeArms(settings: MixSettings, mode: MixMode): Arm[] {
  return PROCESS_MODES.includes(mode) ? processArms(settings, mode) : inProcessArms(settings);
}

/** A round of `mode` in the order it runs: ABBA, so that no arm always comes first (drift cancels in pairs). */
export function roundArms(settings: MixSettings, mode: MixMode, round: number): Arm[] {
  return abbaOrder(modeArms(settings, mode), round);
}

/**
 * In one process (streams, green) each aggressor has a process of its own with a victim tenant beside
 * it: per aggressor, that victim alone at each load, the aggressor alone, and both at each load.
 */
function inProcessArms(settings: MixSettings): Arm[] {
  return settings.aggressors.flatMap((a) => [
    ...settings.loads.map((load) => ({ arm: 'victim-alone' as const, aggressor: a.name, threadPct: null, load })),
    { arm: 'aggressor-alone' as const, aggressor: a.name, threadPct: null, load: null },
    ...settings.loads.map((load) => ({ arm: 'together' as const, aggressor: a.name, threadPct: null, load })),
  ]);
}

function processArms(settings: MixSettings, mode: MixMode): Arm[] {
  return [
    ...settings.loads.map((load) => ({ arm: 'victim-alone' as const, aggressor: null, threadPct: null, load })),
    ...settings.aggressors.map((a) => ({
      arm: 'aggressor-alone' as const,
      aggressor: a.name,
      threadPct: null,
      load: null,
    })),
    ...aggressorProcesses(settings, mode).flatMap((p) =>
      settings.loads.map((load) => ({ arm: 'together' as const, ...p, load })),
    ),
    ...(PAIR.every((name) => settings.aggressors.some((a) => a.name === name))
      ? [{ arm: 'pair' as const, aggressor: PAIR[0], threadPct: null, load: null }]
      : []),
  ];
}

/** What a window costs beyond its length on an H100: the release lead, the answer, Python's sync, ms. */
const WINDOW_OVERHEAD_MS = 180;
/** Starting a mode's processes together (import torch, CUDA context, build, warm-up, green contexts' SM check) on an H100, ms. */
const STARTUP_MS = 25_000;
/** The victim's capacity search on an H100, typical steps (of at most maxSteps). */
const TYPICAL_CAPACITY_STEPS = 7;

/** The run's length on an H100, estimated from its windows: the capacity search, then each mode's rounds. */
export function estimateMs(settings: MixSettings): { totalMs: number; windows: number; lines: string[] } {
  const windowMs = settings.windowMs + WINDOW_OVERHEAD_MS;
  // Its own victim process, then steps: the first ones longer (640 requests at a low rate).
  const capacityMs = settings.victimQps === null ? STARTUP_MS + TYPICAL_CAPACITY_STEPS * Math.max(windowMs, 1500) : 0;
  const lines = [
    settings.victimQps === null
      ? `victim capacity search: start-up and about ${TYPICAL_CAPACITY_STEPS} steps (at most ${settings.maxSteps}), ${(capacityMs / 1000).toFixed(0)} s`
      : `victim capacity given: ${settings.victimQps} req/s`,
  ];
  let totalMs = capacityMs;
  let windows = 0;
  for (const mode of settings.modes) {
    const perRound = roundArms(settings, mode, 0).length;
    const modeMs = STARTUP_MS + perRound * settings.rounds * windowMs;
    windows += perRound * settings.rounds;
    totalMs += modeMs;
    lines.push(
      `${mode}: ${perRound} windows a round × ${settings.rounds} rounds of ${settings.windowMs} ms, and start-up: ${(modeMs / 1000).toFixed(0)} s`,
    );
  }
  return { totalMs, windows, lines };
}
