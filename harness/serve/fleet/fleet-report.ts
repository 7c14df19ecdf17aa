/**
 * A fleet run's report and its analyses, bench's or capacity's (a search): what `bench --serve --fleet` and
 * `capacity --serve --fleet` write and `gpushare report` rewrites from the run.
 */
import type { ServeRun } from '../record.js';
import { analyzeFleet, type FleetAnalysis } from './fleet-analysis.js';
import { analyzeFleetCapacity, type FleetCapacityAnalysis } from './fleet-capacity-analysis.js';
import { fleetCapacityMarkdown } from './fleet-capacity-markdown.js';
import { fleetMarkdown } from './fleet-markdown.js';

/** The markdown, the fleet's analysis and a search's (null for bench's); null for a run of copies. */
export function fleetRunReport(
  run: ServeRun,
): { markdown: string; analysis: FleetAnalysis; search: FleetCapacityAnalysis | null } | null {
  const analysis = analyzeFleet(run);
  if (analysis === null) return null;
  const search = analyzeFleetCapacity(run);
  const markdown = search === null ? fleetMarkdown(run, analysis) : fleetCapacityMarkdown(run, analysis, search);
  return { markdown, analysis, search };
}
