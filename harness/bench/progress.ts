/**
 * Progress of a run on stderr: a bar redrawn in place on a terminal, a line per trial elsewhere (a
 * pipe, a log, CI); JSON lines on stdout with --json; nothing with --quiet.
 */
import { clockText } from '../core/clock-text.js';
import type { Terminal } from '../core/deps.js';
import { fitText } from '../core/wrap.js';
import type { Metric } from './analysis/metrics.js';
import type { Comparison, ModeRecord, Run, Stop, Trial } from './record/schema.js';

export type ProgressEvent =
  | { type: 'run-start'; runId: string; dir: string; device: string; comparisons: number; trials: number }
  | { type: 'mode'; record: ModeRecord }
  | { type: 'comparison'; comparison: Comparison }
  | { type: 'trial'; trial: Trial; done: number; total: number; running: Metric | null }
  | { type: 'stop'; stop: Stop }
  | { type: 'warning'; message: string }
  /** The run stopped measuring (complete, interrupted or failed): a bar ends its line. */
  | { type: 'run-end'; status: Run['status'] };

export interface Progress {
  emit(event: ProgressEvent): void;
}

export type ProgressStyle = 'human' | 'json' | 'quiet';

/** Where human progress goes: a terminal gets the bar; `columns` is its width. */

const PLAIN: Terminal = { isTty: false, columns: 80, nowMs: () => 0 };

export function makeProgress(
  style: ProgressStyle,
  write: { out: (s: string) => void; err: (s: string) => void },
  terminal: Terminal = PLAIN,
): Progress {
  if (style === 'human' && terminal.isTty) return barProgress(write.err, terminal);
  return {
    emit(event) {
      if (style === 'quiet') return;
      if (style === 'json') return write.out(`${JSON.stringify(jsonEvent(event))}\n`);
      const line = humanLine(event);
      if (line) write.err(`${line}\n`);
    },
  };
}

/** What the bar shows: counts, times and where the run is. */
export interface BarState {
  done: number;
  total: number;
  /** Trials added by adaptive rounds beyond the planned total (shown as "(+N)"). */
  added: number;
  elapsedMs: number;
  /** Null until a trial has finished. */
  etaMs: number | null;
  /** e.g. "timeslice/gemm r3 contended". */
  at: string;
  /** The comparison's headline ratio so far, e.g. { name: "slowdown", value: "2.071×" }. */
  running: { name: string; value: string } | null;
}

/** One bar line, never wider than `columns` − 1 (a full-width line would wrap on some terminals). */
export function barLine(state: BarState, columns: number): string {
  const width = 10;
  const filled = state.total > 0 ? Math.min(width, Math.round((state.done / state.total) * width)) : 0;
  const counts = `${state.done}/${state.total}${state.added > 0 ? ` (+${state.added})` : ''}`;
  const times = `${clockText(state.elapsedMs)} ETA ${state.etaMs === null ? '?' : clockText(state.etaMs)}`;
  const head = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${counts} ${times} ${state.at}`;
  const max = Math.max(20, columns - 1);
  // The ratio's name goes first when space is short, then its value.
  const line = [
    state.running ? `${head} ${state.running.name} ${state.running.value}` : head,
    state.running ? `${head} ${state.running.value}` : head,
    head,
  ].find((l) => l.length <= max);
  return line ?? `${head.slice(0, max - 1)}…`;
}

/** The terminal bar: permanent lines (comparisons, stops, warnings) scroll above it; the bar is redrawn in place. */
function barProgress(err: (s: string) => void, terminal: Terminal): Progress {
  const startMs = terminal.nowMs();
  let planned = 0;
  let bar: BarState | null = null;
  const draw = () => {
    if (bar) err(`\r\x1b[K${barLine({ ...bar, elapsedMs: terminal.nowMs() - startMs }, terminal.columns)}`);
  };
  const print = (line: string) => {
    err(`\r\x1b[K${fitText(line, terminal.columns)}\n`);
    draw();
  };
  return {
    emit(event) {
      if (event.type === 'run-start') planned = event.trials;
      if (event.type === 'run-end') {
        if (bar) err('\n');
        bar = null;
        return;
      }
      if (event.type !== 'trial') {
        const line = humanLine(event);
        if (line) print(line);
        return;
      }
      const { trial, running, done, total } = event;
      const elapsedMs = terminal.nowMs() - startMs;
      bar = {
        done,
        total,
        added: Math.max(0, total - planned),
        elapsedMs,
        etaMs: done > 0 ? (elapsedMs / done) * (total - done) : null,
        at: `${trial.comparisonId} r${trial.round} ${trial.arm}`,
        running:
          running && running.value !== null ? { name: running.name, value: `${running.value.toFixed(3)}×` } : null,
      };
      // A trial that did not measure is worth a line of its own; an ok one only moves the bar.
      if (trial.status !== 'ok') print(humanLine(event) ?? '');
      else draw();
    },
  };
}

function jsonEvent(event: ProgressEvent): unknown {
  switch (event.type) {
    case 'comparison':
      return {
        type: event.type,
        comparison: event.comparison.id,
        clients: event.comparison.clientEnv.length,
        arms: event.comparison.arms.map((a) => a.id),
      };
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
      return `gpushare bench: ${event.comparisons} comparisons, ${event.trials} trials on ${event.device} → ${event.dir}`;
    case 'mode':
      return event.record.status === 'ran'
        ? null
        : `${event.record.mode}: ${event.record.status} — ${event.record.reason}`;
    case 'comparison':
      return `${event.comparison.id}: starting ${event.comparison.tenants !== undefined ? `one process of ${event.comparison.tenants} tenants` : `${event.comparison.clientEnv.length} client(s)`}`;
    case 'trial': {
      const { trial, running } = event;
      const where = `[${String(event.done).padStart(String(event.total).length)}/${event.total}] ${trial.comparisonId} r${trial.round} ${trial.arm}`;
      const why = 'reason' in trial ? ` — ${trial.reason}` : '';
      const ratio =
        running && running.value !== null
          ? `  ${running.name} ${running.value.toFixed(3)}× (median of ${running.perRound.length})`
          : '';
      return `${where.padEnd(40)} ${trial.status}${ratio}${why}`;
    }
    case 'stop': {
      const widths = Object.entries(event.stop.halfWidths).map(
        ([id, w]) => `${id.split('/').at(-1)} ±${w === null ? 'n/a' : `${(w * 100).toFixed(1)}%`}`,
      );
      return `${event.stop.comparisonId}: ${event.stop.rounds} rounds, stopped: ${event.stop.reason}${event.stop.detail !== undefined ? ` (${event.stop.detail})` : ''}${widths.length > 0 ? ` (${widths.join(', ')})` : ''}`;
    }
    case 'warning':
      return `warning: ${event.message}`;
    case 'run-end':
      return null;
  }
}
