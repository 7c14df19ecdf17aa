/**
 * The report's section on the one alone every mode divides by (ALONE_ARM): at each workload and client
 * count, the plain process's rate alone in each mode's comparison, the mode's own alone beside it
 * (solo-overhead), its slowdown, and whether the modes' slowdown ratios say what their throughputs say.
 */
import { mdText } from '../../core/escape/markdown.js';
import { agreements, modesAt } from '../analysis/alone.js';
import type { Analysis } from '../analysis/types.js';

const rate = (perS: number) => perS.toFixed(0);
const pct = (log: number) => `${(Math.expm1(Math.abs(log)) * 100).toFixed(2)}%`;

/** Lines of the section; none for a run that did not measure the plain alone (before 2026-12-06). */
export function aloneLines(analysis: Analysis): string[] {
  const sets = modesAt(analysis).filter((at) => at.plain);
  if (sets.length === 0) return [];
  const overhead = (id: string) =>
    analysis.metrics.find((m) => m.metric.id === `${id}/solo-overhead`)?.stats.value ?? null;
  const lines = [
    '## The alone every mode divides by',
    '',
    "Every mode's slowdown and aggregate throughput divide by one plain process of the workload alone on the whole GPU (no MPS, no green context, no other tenants), the same process in every comparison of that workload, measured in each comparison's own rounds. Each mode's own alone (an MPS client, a tenant of the process, green's twin) is a ratio of its own, `solo-overhead`: the plain alone ÷ the mode's alone (above 1: the mode costs a client with nobody beside it).",
    '',
    '| workload @ clients | mode | plain alone, /s | solo-overhead | contended per client, /s | slowdown |',
    '|---|---|---|---|---|---|',
  ];
  for (const at of sets)
    for (const m of at.modes) {
      const o = overhead(m.comparisonId);
      lines.push(
        `| ${mdText(at.workload)} @ ${at.clients} | ${m.mode} | ${rate(m.alonePerS)} | ${o === null ? 'n/a' : `${o.toFixed(3)}×`} | ${rate(m.contendedPerS)} | ${m.slowdown.toFixed(3)}× |`,
      );
    }
  const pairs = sets.flatMap(agreements);
  const checked = pairs.filter((p) => p.allowedLog !== null);
  const apart = checked.filter((p) => !p.agree);
  const unchecked = pairs.length - checked.length;
  if (checked.length > 0)
    lines.push(
      '',
      apart.length === 0
        ? `Every pair of modes at one workload and client count checked (${checked.length}): the ratio of their slowdowns equals the inverse ratio of their contended throughputs within the slowdowns' 95% intervals (largest difference ${pct(Math.max(...checked.map((p) => Math.abs(p.differenceLog))))}).`
        : `Pairs of modes whose slowdown ratio and throughput ratio differ by more than their 95% intervals allow (the plain alone moved between their comparisons): ${apart.map((p) => `${mdText(p.a)} and ${mdText(p.b)} ${pct(p.differenceLog)} (allowed ${pct(p.allowedLog as number)})`).join('; ')}.`,
    );
  if (unchecked > 0)
    lines.push('', `${unchecked} pair(s) not checked: a slowdown without an interval (fewer than 6 rounds).`);
  lines.push('');
  return lines;
}
