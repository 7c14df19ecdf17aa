/**
 * Traces (#49 Build 2): a generated schedule written as JSONL reads back as the same schedule, so a
 * run replays arrival for arrival; reading a trace twice gives the same per-server counts and lengths;
 * each bad line is named by its number.
 */
import { describe, expect, it } from 'vitest';
import { UserError } from '../../harness/core/errors.js';
import { countsPerServer, generateSchedule, perServer } from '../../harness/load/traffic/schedule.js';
import { parseTrace, readTrace, traceText } from '../../harness/load/traffic/trace.js';

const SERVERS = [
  { index: 1, label: 'big' },
  { index: 2, label: 'small-1' },
  { index: 3, label: 'small-2' },
];

const schedule = generateSchedule(
  {
    servers: [
      { index: 1, ratePerS: 30 },
      { index: 2, ratePerS: 10 },
      { index: 3, ratePerS: 5 },
    ],
    arrivals: { kind: 'gamma', cv: 3 },
    inputTokens: { kind: 'lognormal', median: 300, sigma: 1, max: 8000 },
    outputTokens: { kind: 'uniform', min: 1, max: 512 },
    seed: 11,
  },
  20_000,
);

describe('traces', () => {
  it('write then read gives the schedule back, offsets to the bit', () => {
    expect(schedule.length).toBeGreaterThan(500);
    const text = traceText(schedule);
    expect(text.split('\n')).toHaveLength(schedule.length + 1);
    expect(parseTrace(text, SERVERS, 't.jsonl')).toEqual(schedule);
  });

  it('replayed twice: the same per-server counts and lengths', () => {
    const text = traceText(schedule);
    const once = perServer(parseTrace(text, SERVERS, 't.jsonl'), [1, 2, 3]);
    const twice = perServer(parseTrace(text, SERVERS, 't.jsonl'), [1, 2, 3]);
    expect(twice).toEqual(once);
    expect(countsPerServer(schedule, [1, 2, 3])).toEqual(new Map([...once].map(([i, a]) => [i, a.length])));
  });

  it('servers by index or by label; lines in any order come out in time order', () => {
    const text = [
      '{"offset_ms": 20, "server": "small-2", "input_tokens": 5, "output_tokens": 6}',
      '',
      '{"offset_ms": 10, "server": 1, "input_tokens": 1, "output_tokens": 2}',
    ].join('\n');
    expect(parseTrace(text, SERVERS, 't.jsonl')).toEqual([
      { offsetMs: 10, server: 1, inputTokens: 1, outputTokens: 2 },
      { offsetMs: 20, server: 3, inputTokens: 5, outputTokens: 6 },
    ]);
  });

  it('one line per bad line, by its number', () => {
    const text = [
      '{"offset_ms": 1, "server": 1, "input_tokens": 1, "output_tokens": 1}',
      'not json',
      '[1, 2]',
      '{"offset_ms": -1, "server": 1, "input_tokens": 1, "output_tokens": 1}',
      '{"offset_ms": 1, "server": 9, "input_tokens": 1, "output_tokens": 1}',
      '{"offset_ms": 1, "server": "tiny", "input_tokens": 1, "output_tokens": 1}',
      '{"offset_ms": 1, "server": 1, "input_tokens": 0, "output_tokens": 1}',
      '{"offset_ms": 1, "server": 1, "input_tokens": 1, "output_tokens": 1.5}',
      '{"offset_ms": 1, "server": 1, "input_tokens": 1, "output_tokens": 1, "model": "x"}',
    ].join('\n');
    expect(readTrace(text, SERVERS, 't.jsonl').problems).toEqual([
      't.jsonl line 2: not JSON: give one JSON object a line',
      't.jsonl line 3: not a JSON object: give {"offset_ms": …, "server": …, "input_tokens": …, "output_tokens": …}',
      "t.jsonl line 4: offset_ms -1: give the arrival's offset from the start in ms, a number ≥ 0",
      't.jsonl line 5: server 9 is not a server of the fleet: give an index 1..3 or a label (big, small-1, small-2)',
      't.jsonl line 6: server "tiny" is not a server of the fleet: give an index 1..3 or a label (big, small-1, small-2)',
      't.jsonl line 7: input_tokens 0: give a whole number of tokens ≥ 1',
      't.jsonl line 8: output_tokens 1.5: give a whole number of tokens ≥ 1',
      't.jsonl line 9: unknown key "model": the keys are offset_ms, server, input_tokens, output_tokens',
    ]);
    const error = (() => {
      try {
        parseTrace(text, SERVERS, 't.jsonl');
        return null;
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(UserError);
    expect((error as UserError).message).toBe(
      't.jsonl line 2: not JSON: give one JSON object a line (and 7 more bad lines: 3, 4, 5, 6, 7, 8, 9)',
    );
  });

  it('an empty trace is refused', () => {
    expect(() => parseTrace('\n\n', SERVERS, 't.jsonl')).toThrow('t.jsonl holds no requests');
  });
});
