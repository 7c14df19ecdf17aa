/**
 * The SSE parser of harness/load: a completion and a chat stream in the shape OpenAI-compatible
 * servers send (constructed here, with a comment line, CRLF line ends and multi-byte text) give the
 * same text chunks and outcome however the bytes are split: at every byte boundary, and at any split
 * fast-check finds. Streams end as real engines end them: after [DONE], or after a finish_reason with
 * no [DONE] (transformers serve), a usage chunk with no choices between (llama.cpp). Garbage and a
 * stream ended early (inside an event, before any finish) are outcomes, never a throw.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_LINE_CHARS, SseParser } from '../../harness/load/sse.js';

const completion = (text: string) =>
  JSON.stringify({ id: 'cmpl-1', object: 'text_completion', choices: [{ index: 0, text }] });
const chat = (delta: object) =>
  JSON.stringify({ id: 'chat-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta }] });

const COMPLETION_STREAM = [
  ': keep-alive',
  '',
  `data: ${completion(' Hello')}`,
  '',
  `data: ${completion(' wörld')}`,
  '',
  `data:${completion(' 🚀')}`,
  '',
  `data: ${JSON.stringify({ id: 'cmpl-1', choices: [], usage: { prompt_tokens: 4, completion_tokens: 3 } })}`,
  '',
  'data: [DONE]',
  '',
  '',
].join('\n');

const CHAT_STREAM = [
  `data: ${chat({ role: 'assistant' })}`,
  '',
  `data: ${chat({ content: 'Bonjour' })}`,
  '',
  `data: ${chat({ content: ' à' })}`,
  '',
  `data: ${chat({ content: ' vous' })}`,
  '',
  'data: [DONE]',
  '',
  '',
].join('\r\n');

function parse(bytes: Uint8Array, cuts: number[]) {
  const parser = new SseParser();
  const perFeed: number[] = [];
  let from = 0;
  for (const at of [...cuts, bytes.length]) {
    perFeed.push(parser.feed(bytes.subarray(from, at)).textChunks);
    from = at;
  }
  return {
    tokens: perFeed.reduce((a, b) => a + b, 0),
    counted: parser.textChunks,
    reported: parser.usageTokens,
    outcome: parser.end(),
  };
}

const cases = [
  ['completion', COMPLETION_STREAM, 3, 3],
  ['chat (CRLF, a role-only first chunk)', CHAT_STREAM, 3, null],
] as const;

describe('SseParser', () => {
  it.each([
    ['a role-only chunk with empty content', { role: 'assistant', content: '' }],
    ['a role-only chunk with null content', { role: 'assistant', content: null }],
    ['a role-only chunk with no content', { role: 'assistant' }],
  ])('%s carries no token: the first token is the first text', (_name, delta) => {
    const parser = new SseParser();
    expect(parser.feed(Buffer.from(`data: ${chat(delta)}\n\n`)).textChunks).toBe(0);
    expect(parser.feed(Buffer.from(`data: ${chat({ content: 'Hi' })}\n\n`)).textChunks).toBe(1);
    expect(parser.textChunks).toBe(1);
  });

  it.each(cases)('a %s stream: its tokens and [DONE], in one piece', (_name, text, tokens, reported) => {
    expect(parse(Buffer.from(text), [])).toEqual({ tokens, counted: tokens, reported, outcome: { kind: 'ok' } });
  });

  it.each(cases)('a %s stream split at every byte boundary gives the same', (_name, text, tokens, reported) => {
    const bytes = Buffer.from(text);
    const everyByte = Array.from({ length: bytes.length - 1 }, (_, i) => i + 1);
    expect(parse(bytes, everyByte)).toEqual({ tokens, counted: tokens, reported, outcome: { kind: 'ok' } });
  });

  it.each(cases)('a %s stream split anywhere gives the same (property)', (_name, text, tokens) => {
    const bytes = Buffer.from(text);
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 40 }), (cuts) => {
        const r = parse(
          bytes,
          [...cuts].sort((a, b) => a - b),
        );
        expect(r.tokens).toBe(tokens);
        expect(r.outcome).toEqual({ kind: 'ok' });
      }),
    );
  });

  it('a stream that ends with neither a finish_reason nor [DONE] is cut, naming both, with the chunks it had', () => {
    const text = COMPLETION_STREAM.slice(0, COMPLETION_STREAM.indexOf('data: [DONE]'));
    const r = parse(Buffer.from(text), []);
    expect(r.tokens).toBe(3);
    expect(r.outcome).toEqual({
      kind: 'cut',
      reason: 'the stream ended with neither a finish_reason nor data: [DONE] after 3 text chunks',
    });
    const inside = parse(Buffer.from(text.slice(0, text.indexOf('wörld'))), []);
    expect(inside.outcome).toMatchObject({ kind: 'cut', reason: expect.stringContaining('inside an event') });
  });

  it.each([
    ['not JSON', 'data: {"choices": [ nope\n\n', 'not JSON'],
    ['JSON with no choices', 'data: {"id": 1}\n\n', 'no choices array'],
    [
      'a streamed error',
      'data: {"error": {"message": "overloaded"}}\n\n',
      'streamed an error: {"message":"overloaded"}',
    ],
    ['HTML', '<html><body>502 Bad Gateway</body></html>\n\n', 'not Server-Sent Events: "<html>'],
  ])('%s is an outcome, not a throw', (_name, garbage, reason) => {
    const text = `data: ${completion(' a')}\n\n${garbage}data: ${completion(' b')}\n\ndata: [DONE]\n\n`;
    const r = parse(Buffer.from(text), []);
    expect(r.outcome.kind === 'ok' ? '' : r.outcome.reason).toContain(reason);
    expect(r.tokens).toBe(1); // nothing counted after the garbage
  });
});

describe('a line or an event past the bound', () => {
  it('is overlong once the pending line passes MAX_LINE_CHARS, however it is split, and nothing after it is read', () => {
    const parser = new SseParser();
    const piece = Buffer.from('x'.repeat(64 * 1024));
    parser.feed(Buffer.from('data: '));
    let fed = 6;
    while (parser.failure === null && fed < 4 * MAX_LINE_CHARS) {
      parser.feed(piece);
      fed += piece.length;
    }
    // Found within one piece of the bound, not at the line's end (a 100 MB line has none for 100 MB).
    expect(fed).toBeGreaterThan(MAX_LINE_CHARS);
    expect(fed).toBeLessThanOrEqual(MAX_LINE_CHARS + piece.length + 6);
    expect(parser.end()).toEqual({ kind: 'overlong', reason: `a line of more than ${MAX_LINE_CHARS} characters` });
    expect(parser.feed(Buffer.from(`\n\ndata: ${completion(' a')}\n\n`)).textChunks).toBe(0);
  });

  it('a line of exactly the bound is a line; an event of many data lines past it is overlong', () => {
    const long = `data: ${'y'.repeat(MAX_LINE_CHARS - 6)}`;
    const exact = new SseParser();
    exact.feed(Buffer.from(long));
    expect(exact.failure).toBeNull();
    const many = new SseParser();
    const line = `data: ${'z'.repeat(1000)}\n`;
    many.feed(Buffer.from(line.repeat(Math.ceil(MAX_LINE_CHARS / 1000) + 1)));
    expect(many.end()).toEqual({ kind: 'overlong', reason: `an event of more than ${MAX_LINE_CHARS} characters` });
  });
});

describe('streams as engines end them', () => {
  const events = (...data: string[]) => data.map((d) => `data: ${d}\n\n`).join('');
  const finish = (reason: string) =>
    JSON.stringify({ id: 'chat-1', choices: [{ index: 0, delta: {}, finish_reason: reason }] });
  const usage = (completionTokens: number, extra: object = {}) =>
    JSON.stringify({
      id: 'chat-1',
      choices: [],
      usage: { prompt_tokens: 4, completion_tokens: completionTokens },
      ...extra,
    });
  const streamed = (text: string) => {
    const bytes = Buffer.from(text);
    // Whole, and split at every byte: the same.
    const whole = parse(bytes, []);
    expect(
      parse(
        bytes,
        Array.from({ length: bytes.length - 1 }, (_, i) => i + 1),
      ),
    ).toEqual(whole);
    return whole;
  };

  it.each([
    [
      'transformers serve: a role-only first chunk, usage on the finish chunk, no [DONE]',
      events(
        chat({ role: 'assistant' }),
        chat({ content: 'a' }),
        chat({ content: 'b' }),
        JSON.stringify({
          id: 'chat-1',
          choices: [{ index: 0, delta: {}, finish_reason: 'length' }],
          usage: { prompt_tokens: 4, completion_tokens: 2 },
        }),
      ),
      2,
      2,
    ],
    [
      'llama.cpp: the finish chunk, a usage chunk with empty choices, then [DONE]',
      events(chat({ content: 'a' }), chat({ content: 'b' }), finish('stop'), usage(2), '[DONE]'),
      2,
      2,
    ],
    [
      'usage only at the end, after the finish chunk, no [DONE]',
      events(chat({ content: 'a' }), chat({ content: 'b' }), chat({ content: 'c' }), finish('length'), usage(3)),
      3,
      3,
    ],
    [
      'a finish_reason on the last text chunk, no usage, no [DONE]',
      events(completion('a'), JSON.stringify({ choices: [{ index: 0, text: 'b', finish_reason: 'stop' }] })),
      2,
      null,
    ],
    [
      'usage that disagrees with the chunks is reported as sent',
      events(chat({ content: 'a' }), chat({ content: 'b' }), chat({ content: 'c' }), finish('stop'), usage(1)),
      3,
      1,
    ],
  ])('%s: ok', (_name, text, chunks, reported) => {
    expect(streamed(text)).toEqual({ tokens: chunks, counted: chunks, reported, outcome: { kind: 'ok' } });
  });

  it('KoboldCpp: finish_reason "null" on each chunk before the last, no usage, data: [DONE] with no blank line after it: ok', () => {
    const kobold = (text: string, reason: string) =>
      JSON.stringify({ choices: [{ index: 0, delta: { content: text }, finish_reason: reason }] });
    const text = `${events(kobold('a b c', 'null'), kobold('d e', 'length'))}data: [DONE]`;
    expect(streamed(text)).toEqual({ tokens: 2, counted: 2, reported: null, outcome: { kind: 'ok' } });
    const parser = new SseParser();
    parser.feed(Buffer.from(text));
    expect(parser.end()).toEqual({ kind: 'ok' });
    expect(parser.finishReason).toBe('length');
  });

  it('finish_reason "null" (the string) is no finish: a stream ending after it is cut', () => {
    const text = events(JSON.stringify({ choices: [{ index: 0, delta: { content: 'a' }, finish_reason: 'null' }] }));
    expect(streamed(text).outcome).toEqual({
      kind: 'cut',
      reason: expect.stringContaining('neither a finish_reason nor data: [DONE]'),
    });
  });

  it('the finish chunk with empty text is no text chunk', () => {
    const text = events(
      chat({ content: 'a' }),
      JSON.stringify({ choices: [{ index: 0, delta: { content: '' }, finish_reason: 'stop' }] }),
    );
    expect(streamed(text)).toMatchObject({ tokens: 1, outcome: { kind: 'ok' } });
  });

  it.each([
    [
      'a finish_reason of null',
      events(
        chat({ content: 'a' }),
        JSON.stringify({ choices: [{ index: 0, delta: { content: 'b' }, finish_reason: null }] }),
      ),
    ],
    ['usage but no finish_reason', events(chat({ content: 'a' }), usage(1))],
  ])('%s, no [DONE]: cut, before any finish', (_name, text) => {
    expect(streamed(text).outcome).toEqual({
      kind: 'cut',
      reason: expect.stringContaining('neither a finish_reason nor data: [DONE]'),
    });
  });

  it.each([
    ['a partial line', `${events(chat({ content: 'a' }), finish('stop'))}data: {"choices": [`],
    ['a data line with no blank line after it', `${events(chat({ content: 'a' }))}data: ${finish('stop')}\n`],
    ['an unended line other than data: [DONE]', `${events(chat({ content: 'a' }), finish('stop'))}data: [DONE]x`],
  ])('a stream that ends inside an event (%s) is cut, even after a finish', (_name, text) => {
    expect(streamed(text).outcome).toEqual({
      kind: 'cut',
      reason: 'the stream ended inside an event (no blank line after its last data) after 1 text chunks',
    });
  });
});
