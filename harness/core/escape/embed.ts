/**
 * What generated scripts, units and YAML may embed. Run directories are shared and committed, so
 * every value read from one is untrusted: free text only ever lands in a comment, with every line
 * break and control character made a space; values a script acts on are checked against tight
 * shapes, and a value of another shape is refused, never quoted into the file.
 */
import { UserError } from '../errors.js';

/** Free text (a GPU name, a run id, a source line) made safe for one `#` comment line. */
export function commentText(text: string): string {
  // \p{C}: control, format, unassigned and private-use characters, line and paragraph separators included.
  return text.replace(/[\p{C}\u2028\u2029]/gu, ' ');
}

/** An MPS memory limit as nvidia-cuda-mps-control takes it: a number with K, M or G. */
export const MEM_LIMIT = /^\d+(\.\d+)?[KMG]$/;
/** An absolute path of plain characters: safe inside double quotes and in a systemd Environment= line. */
export const PLAIN_PATH = /^\/[A-Za-z0-9._/-]*$/;

/** Refuses (one line, exit 2) a value that does not have the shape a generated file needs. */
export function checked<T>(value: T, ok: (v: T) => boolean, what: string, allowed: string): T {
  if (!ok(value))
    throw new UserError(`refusing to write ${what} ${JSON.stringify(value)} into a generated file: ${allowed}`);
  return value;
}
