/**
 * An incremental parser of a streamed OpenAI-compatible response (`/v1/completions` or
 * `/v1/chat/completions` with `stream: true`): Server-Sent Events of `data: {json}`. Fed bytes as they
 * arrive (split anywhere, even inside a UTF-8 character), it says how many text chunks each feed
 * completed, so the caller can stamp their arrival times. A stream is complete when it ends cleanly (no
 * partial line or event at its end) after `data: [DONE]` or after a chunk carrying a `finish_reason`:
 * engines differ (llama.cpp sends [DONE], Hugging Face `transformers serve` does not, KoboldCpp ends
 * the body right after `data: [DONE]`, with no blank line), and either says the server ended the answer
 * on purpose. Garbage is an outcome (`malformed`), a line or
 * event past MAX_LINE_CHARS is one (`overlong`: a completion chunk is a few hundred bytes), and so is a
 * stream that ends inside an event or before either mark (`cut`): never a throw. Each byte is scanned
 * for a line break once, however the stream is split: linear in its input.
 */

export type SseFailure = { kind: 'malformed'; reason: string } | { kind: 'overlong'; reason: string };
export type SseOutcome = { kind: 'ok' } | SseFailure | { kind: 'cut'; reason: string };

/** The longest line, and the longest event (its data lines together), in characters. */
export const MAX_LINE_CHARS = 1024 * 1024;

/** What one `feed` found: the text chunks among the events completed in these bytes. */
export interface SseFeed {
  textChunks: number;
}

/** The parser of one response's body. */
export class SseParser {
  private readonly decoder = new TextDecoder('utf-8', { fatal: false });
  private pending = '';
  /** Where in `pending` the search for a line break goes on: what is before it holds none. */
  private scanFrom = 0;
  private data: string[] = [];
  private dataChars = 0;
  private done = false;
  /** A chunk carried a finish_reason: the server ended the answer (what may follow is usage, [DONE]). */
  private finished = false;
  /** The last finish_reason a chunk carried ("length", "stop"), or null. */
  finishReason: string | null = null;
  private problem: SseFailure | null = null;
  /**
   * Chunks that carried text. A chunk without text (a role-only first chunk, a finish chunk with an empty
   * delta, a usage chunk with no choices) is none: it never marks the first token.
   */
  textChunks = 0;
  /** The server's own count of output tokens (`usage.completion_tokens`), when it sent one. */
  usageTokens: number | null = null;

  /** Why the stream is already no completion (garbage, or a line past the bound), or null: the caller may stop reading. */
  get failure(): SseFailure | null {
    return this.problem;
  }

  feed(bytes: Uint8Array): SseFeed {
    if (this.problem !== null || this.done) return { textChunks: 0 };
    const text = this.pending + this.decoder.decode(bytes, { stream: true });
    const before = this.textChunks;
    // Lines end in \n, \r\n or \r; a trailing \r may be half of a \r\n still to come.
    const lineBreak = /\r\n|\r|\n/g;
    lineBreak.lastIndex = this.scanFrom;
    let start = 0;
    let scanned = text.length;
    for (let m = lineBreak.exec(text); m !== null; m = lineBreak.exec(text)) {
      if (m[0] === '\r' && m.index === text.length - 1) {
        scanned = m.index;
        break;
      }
      this.line(text.slice(start, m.index));
      start = m.index + m[0].length;
      if (this.problem !== null || this.done) break;
    }
    this.pending = text.slice(start);
    this.scanFrom = Math.max(0, scanned - start);
    if (this.problem === null && !this.done && this.pending.length > MAX_LINE_CHARS)
      this.problem = { kind: 'overlong', reason: `a line of more than ${MAX_LINE_CHARS} characters` };
    return { textChunks: this.textChunks - before };
  }

  /** The outcome once the body has ended. */
  end(): SseOutcome {
    if (this.problem !== null) return this.problem;
    if (this.done) return { kind: 'ok' };
    this.pending += this.decoder.decode();
    // A last `data: [DONE]` with no blank line after it (KoboldCpp ends so) is [DONE]: nothing of the answer is missing.
    if (this.unfinishedDone()) return { kind: 'ok' };
    // An event is complete only at its blank line (the SSE spec drops one unfinished at the end).
    if (this.pending.length > 0 || this.data.length > 0)
      return {
        kind: 'cut',
        reason: `the stream ended inside an event (no blank line after its last data) after ${this.textChunks} text chunks`,
      };
    if (this.finished) return { kind: 'ok' };
    return {
      kind: 'cut',
      reason: `the stream ended with neither a finish_reason nor data: [DONE] after ${this.textChunks} text chunks`,
    };
  }

  /** What is left unfinished at the end is `data: [DONE]` alone (an unended line, or a data line with no blank line after it). */
  private unfinishedDone(): boolean {
    const unended = this.pending.replace(/\r$/, '');
    if (this.data.length === 0) return unended === 'data: [DONE]' || unended === 'data:[DONE]';
    return unended === '' && this.data.length === 1 && this.data[0] === '[DONE]';
  }

  private line(line: string): void {
    if (line === '') {
      this.dispatch();
      return;
    }
    if (line.startsWith(':')) return; // a comment (keep-alive)
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      this.data.push(value);
      this.dataChars += value.length + 1;
      if (this.dataChars > MAX_LINE_CHARS)
        this.problem = { kind: 'overlong', reason: `an event of more than ${MAX_LINE_CHARS} characters` };
    }
    // event, id and retry carry nothing a completion stream uses; the spec ignores any other line too,
    // but from a completion server one is garbage (an HTML error page, a proxy's text).
    else if (!['event', 'id', 'retry'].includes(field))
      this.problem = {
        kind: 'malformed',
        reason: `a line that is not Server-Sent Events: ${JSON.stringify(line.slice(0, 80))}`,
      };
  }

  private dispatch(): void {
    if (this.data.length === 0) return;
    const text = this.data.join('\n');
    this.data = [];
    this.dataChars = 0;
    if (text === '[DONE]') {
      this.done = true;
      return;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(text);
    } catch {
      this.problem = { kind: 'malformed', reason: `an event that is not JSON: ${JSON.stringify(text.slice(0, 80))}` };
      return;
    }
    const why = this.chunk(chunk);
    if (why !== null) this.problem = { kind: 'malformed', reason: why };
  }

  /** Counts a chunk's text and notes its finish_reason, or says why it is no completion chunk. */
  private chunk(chunk: unknown): string | null {
    if (typeof chunk !== 'object' || chunk === null) return 'an event whose JSON is not an object';
    const c = chunk as { choices?: unknown; error?: unknown; usage?: { completion_tokens?: unknown } | null };
    if (c.error !== undefined) return `the server streamed an error: ${JSON.stringify(c.error).slice(0, 120)}`;
    if (typeof c.usage?.completion_tokens === 'number') this.usageTokens = c.usage.completion_tokens;
    if (!Array.isArray(c.choices)) return 'an event with no choices array';
    // An empty choices array is a usage-only chunk (OpenAI documents one after the finish; llama.cpp sends one).
    for (const choice of c.choices as Array<{
      text?: unknown;
      delta?: { content?: unknown };
      finish_reason?: unknown;
    }>) {
      const text = choice?.text ?? choice?.delta?.content;
      if (typeof text === 'string' && text.length > 0) this.textChunks++;
      // KoboldCpp sends the string "null" on every chunk before the last: no finish.
      const reason = choice?.finish_reason;
      if (typeof reason === 'string' && reason !== '' && reason !== 'null') {
        this.finished = true;
        this.finishReason = reason;
      }
    }
    return null;
  }
}
