/**
 * The only published numbers for a latency-critical service beside training on one GPU, set beside a
 * mix run's train row: tally-bench's A100 artifact. Other hardware, other models: shown as such, never
 * compared by a test of any kind.
 */
import { type Cell, LEGACY_GREEN_ALONE } from './analysis.js';
import { keptText, overloadedText, ratioText } from './cell-text.js';

/** tally-bench's published ratios (an A100-40GB, a BERT server at 50% load beside PyTorch training jobs). */
export const TALLY_A100 = {
  source: 'tally-project/tally-bench, `tally_results_demo/priority-aware-perf.csv`',
  hardware: 'A100-40GB',
  setting: 'a BERT inference server at 50% load beside PyTorch training jobs',
  rows: {
    timeslice: { p99: '×2.7', kept: '0.51–0.73' },
    mps: { p99: '×2.2–11.8 (median ×4.8)', kept: '0.78–1.00' },
  },
} as const;

/** A cell of the train row, or "not measured". */
const ratio = (c: Cell | undefined) =>
  c === undefined
    ? 'not measured'
    : c.status === 'overloaded'
      ? overloadedText(c)
      : c.status !== 'measured' || c.p99 === null
        ? c.status
        : `${ratioText(c.p99)}${c.reason?.includes(LEGACY_GREEN_ALONE) ? ' (alone in its own slice: not comparable)' : ''}`;
const kept = (c: Cell | undefined) => (c?.kept ? keptText(c.kept) : '—');

export function publishedComparison(cells: readonly Cell[], gpuName: string): string[] | null {
  const train = cells.filter((c) => c.aggressor === 'train');
  if (train.length === 0) return null;
  const load = train.map((c) => c.load).reduce((a, b) => (Math.abs(b - 0.5) < Math.abs(a - 0.5) ? b : a));
  const columns = [...new Set(train.map((c) => c.column))];
  const at = (column: string) => train.find((c) => c.column === column && c.load === load);
  const published = (column: string) => TALLY_A100.rows[column as keyof typeof TALLY_A100.rows] ?? null;
  return [
    `| mode | victim p99 ÷ alone, this run (${gpuName}) | training kept, this run | victim p99 ÷ alone, tally-bench (${TALLY_A100.hardware}, other hardware) | training kept, tally-bench |`,
    '|---|---|---|---|---|',
    ...columns.map((column) => {
      const p = published(column);
      return `| ${column} | ${ratio(at(column))} | ${kept(at(column))} | ${p?.p99 ?? 'not published'} | ${p?.kept ?? 'not published'} |`;
    }),
    '',
    `This run: the victim at ${Math.round(load * 100)}% of its capacity beside the \`train\` aggressor. tally-bench: ${TALLY_A100.setting}, from ${TALLY_A100.source}. Different GPUs, models and load generators: the rows say what each measured, not that they agree.`,
  ];
}
