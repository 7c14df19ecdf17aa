/** Progress of a run: a line per trial on stderr, JSON lines on stdout with --json, nothing with --quiet. */
import type { Metric } from './analysis/metrics.js';
import type { Comparison, ModeRecord, Stop, Trial } from './run/schema.js';

export type ProgressEvent =
  | { type: 'run-start'; runId: string; dir: string; device: string; comparisons: number; trials: number }
  | { type: 'mode'; record: ModeRecord }
  | { type: 'comparison'; comparison: Comparison }
  | { type: 'trial'; trial: Trial; done: number; total: number; running: Metric | null }
  | { type: 'stop'; stop: Stop }
  | { type: 'warning'; message: string };

export interface Progress {
  emit(event: ProgressEvent): void;
}

export type ProgressStyle = 'human' | 'json' | 'quiet';

export function makeProgress(style: ProgressStyle, write: { out: (s: string) => void; err: (s: string) => void }): Progress {
  return {
    emit(event) {
      if (style === 'quiet') return;
      if (style === 'json') return write.out(`${JSON.stringify(jsonEvent(event))}\n`);
      const line = humanLine(event);
      if (line) write.err(`${line}\n`);
    },
  };
}

function jsonEvent(event: ProgressEvent): unknown {
  switch (event.type) {
    case 'comparison':
      return { type: event.type, comparison: event.comparison.id, clients: event.comparison.clientEnv.length, arms: event.comparison.arms.map((a) => a.id) };
    case 'trial': {
      const { trial, running } = event;
      return {
        type: event.type,
        trial: trial.id,
        status: trial.status,
        done: event.done,
        total: event.total,
        ...('reason' in trial ? { reason: trial.reason } : {}),
        ...(running ? { metric: running.id, value: running.value } : {}),
      };
    }
    default:
      return event;
  }
}

function humanLine(event: ProgressEvent): string | null {
  switch (event.type) {
    case 'run-start':
      return `gpushare: ${event.comparisons} comparisons, ${event.trials} trials on ${event.device} → ${event.dir}`;
    case 'mode':
      return event.record.status === 'ran' ? null : `${event.record.mode}: ${event.record.status} — ${event.record.reason}`;
    case 'comparison':
      return `${event.comparison.id}: starting ${event.comparison.clientEnv.length} client(s)`;
    case 'trial': {
      const { trial, running } = event;
      const where = `[${String(event.done).padStart(String(event.total).length)}/${event.total}] ${trial.comparisonId} r${trial.round} ${trial.arm}`;
      const why = 'reason' in trial ? ` — ${trial.reason}` : '';
      const ratio = running && running.value !== null ? `  ${running.name} ${running.value.toFixed(3)}× (median of ${running.perRound.length})` : '';
      return `${where.padEnd(52)} ${trial.status}${ratio}${why}`;
    }
    case 'stop': {
      const widths = Object.entries(event.stop.halfWidths).map(([id, w]) => `${id.split('/').at(-1)} ±${w === null ? 'n/a' : `${(w * 100).toFixed(1)}%`}`);
      return `${event.stop.comparisonId}: ${event.stop.rounds} rounds, stopped: ${event.stop.reason}${widths.length > 0 ? ` (${widths.join(', ')})` : ''}`;
    }
    case 'warning':
      return `warning: ${event.message}`;
  }
}
