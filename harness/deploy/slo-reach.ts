/**
 * The plan's latency target against what a run measured: the contended p99 at each client count. A
 * count measured over the target makes the target a limit (the most models within it, below the
 * first count that missed); a target held at every count measured limits nothing, and says how far
 * it was measured: up to the models asked, or fewer ("not measured at N"), as costs say it.
 */
import type { MeasuredMode } from '../bench/analysis/which-mode.js';

export type SloReach =
  /** A measured count missed the target: `most` models (0: none) held it, below the first count that missed. */
  | { kind: 'missed'; most: number; text: string; measured: string }
  /** Every count measured held it, up to `upTo`, the models asked or more. */
  | { kind: 'held'; upTo: number; text: string; measured: string }
  /** Every count measured held it, up to `upTo`, fewer than the models asked. */
  | { kind: 'unmeasured'; upTo: number; text: string; measured: string };

const msText = (ms: number) => `${ms.toFixed(1)} ms`;

/**
 * How a mode's measured contended p99 meets `sloMs` for `models` models; `unit` names the counts
 * (clients, tenants). Null without a target or without a measured p99.
 */
export function sloReach(
  sloMs: number | null,
  m: MeasuredMode | null | undefined,
  models: number,
  unit: string,
): SloReach | null {
  if (sloMs === null || !m) return null;
  // Every count measured, the one the plan quotes with the contended p99 it quotes.
  const byClients = new Map((m.p99ByClients ?? []).map((p) => [p.clients, p.p99Ms]));
  byClients.set(m.clients, m.contendedP99Ms);
  const points = [...byClients]
    .flatMap(([clients, p99Ms]) => (p99Ms === null ? [] : [{ clients, p99Ms }]))
    .sort((a, b) => a.clients - b.clients);
  const last = points.at(-1);
  if (!last) return null;
  const measured = `${points.map((p) => `${msText(p.p99Ms)} at ${p.clients}`).join(', ')} ${unit}`;
  const miss = points.find((p) => p.p99Ms > sloMs);
  if (miss) {
    const held = points.filter((p) => p.clients < miss.clients && p.p99Ms <= sloMs).at(-1);
    const missed = `missed at ${miss.clients} ${unit} (${msText(miss.p99Ms)})`;
    return {
      kind: 'missed',
      most: held?.clients ?? 0,
      text: held ? `held up to ${held.clients} ${unit} (${msText(held.p99Ms)}), ${missed}` : missed,
      measured,
    };
  }
  const held = `held at every count measured, up to ${last.clients} ${unit} (${msText(last.p99Ms)} at ${last.clients})`;
  return last.clients >= models
    ? { kind: 'held', upTo: last.clients, text: held, measured }
    : { kind: 'unmeasured', upTo: last.clients, text: `${held}; not measured at ${models}`, measured };
}
