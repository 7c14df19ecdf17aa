/**
 * The ClusterPolicy's default sharing config from a run: the mode decision over every mode measured,
 * and, since the device plugin shares a GPU only by time-slicing or MPS, the same decision between
 * those two where the overall one chose a mode the plugin does not run (in-process tenants, MIG).
 */

import { type Measured, modeCosts, modeDecision } from '../bench/analysis/which-mode.js';
import { decisionLine } from '../bench/outputs/which-mode-text.js';
import { decideMode, MODE_SUBJECT, type ModeDecision } from '../stats/mode-decision.js';

export interface DefaultSharing {
  /** The device plugin's mode; null: no run measured both, so no default. */
  mode: 'mps' | 'timeslice' | null;
  /** Why, in words (plain text: the caller escapes it). */
  why: string;
}

const PLUGIN_MODES = new Set(['mps', 'timeslice']);

export function defaultSharing(measured: Measured | null): DefaultSharing {
  const none = {
    mode: null,
    why: 'No ClusterPolicy default: no run measured which sharing mode costs less on this GPU. Label each node with the config it should use, or measure with gpushare bench and give --run.',
  };
  if (measured === null) return none;
  const overall = modeDecision(measured);
  if (overall.kind !== 'none' && PLUGIN_MODES.has(overall.mode))
    return { mode: overall.mode as 'mps' | 'timeslice', why: decisionLine(overall) ?? '' };
  // The overall choice is one the plugin does not share by: decide between the two it does, at the same point.
  const plugin: ModeDecision =
    overall.kind === 'none'
      ? overall
      : decideMode(
          modeCosts(measured).filter((c) => PLUGIN_MODES.has(c.mode)),
          { workload: overall.workload, clients: overall.clients },
          null,
        );
  if (plugin.kind === 'none')
    return plugin.skipped.length > 0
      ? {
          mode: null,
          why: `No ClusterPolicy default: ${plugin.reason}. Label each node with the config it should use, or measure again with more rounds.`,
        }
      : none;
  const first =
    overall.kind === 'none'
      ? ''
      : `Of every mode measured, ${overall.kind === 'cheaper' ? `${MODE_SUBJECT[overall.mode]} measured cheaper` : `${MODE_SUBJECT[overall.mode]} was chosen`}, which the device plugin's sharing does not configure${overall.mode === 'mig' ? '' : ' (gpushare plan --out writes its settings)'}. Between time-slicing and MPS: `;
  return { mode: plugin.mode as 'mps' | 'timeslice', why: `${first}${decisionLine(plugin) ?? ''}` };
}
