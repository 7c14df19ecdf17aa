/** Two runs side by side: each ratio in both, and its change with its within-run CI and the gate's band. */

import { mdCode, mdText } from '../../core/escape/markdown.js';
import { simulatedMarkdown } from '../../record/simulated.js';
import { gpuAt, isSimulated } from '../../system/nvidia/schema.js';
import { analyze } from '../analysis/analyze.js';
import { logToRelative } from '../gate/bands.js';
import { changes } from '../gate/gate.js';
import type { Change } from '../gate/verdicts.js';
import type { Run } from '../record/schema.js';

/** Every ratio both runs have, B against A, through the gate's one definition of a change. */
export function compareRuns(
  a: Run,
  b: Run,
  band: number,
): Array<{ id: string; a: number | null; b: number | null; change: Change | null }> {
  return changes(analyze(b), analyze(a), band).map(({ now, before, change }) => ({
    id: now.metric.id,
    a: before.stats.value,
    b: now.stats.value,
    change,
  }));
}

const f3 = (x: number | null) => (x === null ? 'n/a' : x.toFixed(3));

export function comparisonMarkdown(a: Run, b: Run, band: number): string {
  const gpu = (r: Run) => mdText(gpuAt(r.fingerprint, r.config.gpuIndex)?.name ?? 'GPU');
  const software = (r: Run) => mdText(`${r.fingerprint.driverVersion} / ${r.fingerprint.cudaVersion}`);
  const rows = compareRuns(a, b, band);
  const lines = [
    ...simulatedMarkdown({ simulated: isSimulated(a.fingerprint) || isSimulated(b.fingerprint) }),
    `# gpushare comparison: ${a.id} → ${b.id}`,
    '',
    '| | A | B |',
    '|---|---|---|',
    `| run | [\`${a.id}\`](${a.id}.md) | [\`${b.id}\`](${b.id}.md) |`,
    `| GPU | ${gpu(a)} | ${gpu(b)} |`,
    `| driver / CUDA | ${software(a)} | ${software(b)} |`,
    `| measured | ${mdText(a.createdAt)} | ${mdText(b.createdAt)} |`,
    '',
    `Change = B ÷ A, with its within-run 95% CI (the two runs' own CIs added in quadrature on the log scale). As in \`gpushare gate\`, a change counts as a regression or an improvement only outside its band: the ratio's between-run floor (how much runs on different GPUs of one model differ; [docs/gate-calibration.md](../docs/gate-calibration.md)) and the within-run CI added in quadrature, never narrower than ±${(band * 100).toFixed(1)}%.`,
    '',
    '| metric | A | B | change | within-run 95% CI | band | status |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      ({ id, a: va, b: vb, change }) =>
        `| ${mdCode(id, 'cell')} | ${f3(va)} | ${f3(vb)} | ${change ? `${change.change >= 1 ? '+' : ''}${((change.change - 1) * 100).toFixed(1)}%` : 'n/a'} | ${change?.ci ? `[${change.ci[0].toFixed(3)}, ${change.ci[1].toFixed(3)}]` : 'n/a'} | ${change?.band ? `±${(logToRelative(change.band.halfWidthLog) * 100).toFixed(1)}%` : 'n/a'} | ${change?.status ?? 'n/a'} |`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}
