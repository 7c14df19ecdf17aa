/**
 * Validity checks of a comparison: reasons its ratios cannot be trusted (invalid), and things a
 * reader should know that do not invalidate them (warnings).
 */
import { mean } from 'simple-statistics';
import { throttleReasons } from '../../system/nvidia/smi-csv.js';
import { type Comparison, fixedWorkStreams, type Run } from '../record/schema.js';
import type { Round } from './rounds.js';

/** SM clocks of two arms that differ by more than this fraction invalidate the comparison. */
export const MAX_CLOCK_GAP = 0.05;
/**
 * A throttle reason seen in one arm only invalidates the comparison where the samples that carried it ran
 * more than this fraction below the other arms' SM clock. Less is a warning: on the H100 (runs ab89b3,
 * 5a84eb) sw_power_cap showed in solo samples of infer at 1965 MHz, one 15 MHz step below the contended 1980.
 */
export const MAX_THROTTLED_CLOCK_DROP = 0.01;

export interface Validity {
  invalid: string[];
  warnings: string[];
}

/** Contended and solo arms are compared as two groups; streams arms one by one. */
function armGroup(comparison: Comparison, arm: string): string {
  return !fixedWorkStreams(comparison) && arm.startsWith('solo-') ? 'solo' : arm;
}

/** Per arm group: its samples' SM clocks, the throttle reasons seen, and the clocks of the samples that carried each. */
type ArmSamples = Map<string, { clocks: number[]; reasons: Set<string>; flagged: Map<string, number[]> }>;

/** The samples tagged with a trial, by the arm group (armOf) of that trial. */
function armSamples(samples: Run['samples'], armOf: ReadonlyMap<string, string>): ArmSamples {
  const groups: ArmSamples = new Map();
  for (const sample of samples) {
    const group = sample.trialId ? armOf.get(sample.trialId) : undefined;
    if (group === undefined) continue;
    const entry = groups.get(group) ?? { clocks: [], reasons: new Set<string>(), flagged: new Map<string, number[]>() };
    if (sample.smClockMHz !== null) entry.clocks.push(sample.smClockMHz);
    for (const reason of throttleReasons(sample.clocksEventReasons)) {
      entry.reasons.add(reason);
      if (sample.smClockMHz !== null)
        entry.flagged.set(reason, [...(entry.flagged.get(reason) ?? []), sample.smClockMHz]);
    }
    groups.set(group, entry);
  }
  return groups;
}

/** `rounds` are the comparison's (groupRounds); `run` gives the samples and the contamination evidence. */
export function comparisonValidity(
  run: Pick<Run, 'samples' | 'contamination'>,
  comparison: Comparison,
  rounds: readonly Round[],
): Validity {
  const invalid: string[] = [];
  const warnings: string[] = [];
  const trials = rounds.flatMap((r) => [...r.trials.values()]);

  const broken = trials.filter((t) => t.status === 'failed' || t.status === 'timeout');
  if (broken[0] && 'reason' in broken[0])
    invalid.push(`${broken.length} trial(s) failed or timed out: ${broken[0].reason}`);
  const noOverlap = trials.filter((t) => t.status === 'invalid');
  if (noOverlap[0] && 'reason' in noOverlap[0])
    invalid.push(`${noOverlap.length} trial(s) invalid: ${noOverlap[0].reason}`);

  if (run.contamination.length > 0)
    invalid.push(`the GPU was busy when the run started (${run.contamination.join('; ')})`);

  const armOf = new Map(trials.map((t) => [t.id, armGroup(comparison, t.arm)]));
  const groups = armSamples(run.samples, armOf);
  const measured = [...groups].filter(([, g]) => g.clocks.length > 0);
  if (measured.length < 2) return { invalid, warnings };

  const allReasons = new Set(measured.flatMap(([, g]) => [...g.reasons]));
  let cappedAlike = allReasons.size > 0;
  for (const reason of allReasons) {
    const without = measured.filter(([, g]) => !g.reasons.has(reason));
    if (without.length === 0) continue;
    cappedAlike = false;
    const within = measured.filter(([, g]) => g.reasons.has(reason));
    const text = `throttling in one arm: ${reason} in ${within.map(([arm]) => arm).join(', ')} but not in ${without.map(([arm]) => arm).join(', ')}`;
    // The clock of the samples that carried the reason, against the other arms': a short event is not
    // averaged away by the rest of its arm's samples.
    const flagged = within.flatMap(([, g]) => g.flagged.get(reason) ?? []);
    const [lowered, other] = [
      flagged.length > 0 ? mean(flagged) : Number.NaN,
      mean(without.flatMap(([, g]) => g.clocks)),
    ];
    const drop = (other - lowered) / other;
    if (!Number.isFinite(drop) || drop > MAX_THROTTLED_CLOCK_DROP) invalid.push(text);
    else
      warnings.push(
        `${text}, where it did not lower the SM clock (${lowered.toFixed(0)} MHz, against ${other.toFixed(0)})`,
      );
  }
  const clocks = measured.map(([arm, g]) => ({ arm, mhz: mean(g.clocks) }));
  const hi = clocks.reduce((a, b) => (b.mhz > a.mhz ? b : a));
  const lo = clocks.reduce((a, b) => (b.mhz < a.mhz ? b : a));
  const gap = (hi.mhz - lo.mhz) / hi.mhz;
  if (gap > MAX_CLOCK_GAP) {
    const text = `SM clock differed ${(gap * 100).toFixed(1)}% between arms (${lo.arm} ${lo.mhz.toFixed(0)} MHz, ${hi.arm} ${hi.mhz.toFixed(0)} MHz)`;
    // Capped alike in every arm, the gap is the GPU's answer to the load itself, not a disturbance.
    if (cappedAlike) warnings.push(`${text}; every arm was capped by ${[...allReasons].join(', ')}`);
    else invalid.push(text);
  }
  return { invalid, warnings };
}
