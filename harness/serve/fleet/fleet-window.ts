/**
 * One server in one window of a fleet run, as serve.json keeps it: bench's fleet windows (fleet-record.ts)
 * and capacity's steps (fleet-capacity-record.ts, which adds the rates the early stop reads) alike.
 */
import { z } from 'zod';

const figure = z.number().nonnegative().max(1e12);
const count = z.number().int().nonnegative().max(1e12);

export const ServerWindowSchema = z.object({
  server: z.number().int().positive(),
  requests: count,
  ok: count,
  /** Ended ok with TTFT within the SLO (and every gap within --slo-itl-max-ms, when set). */
  good: count,
  ttftP50Ms: figure.nullable(),
  ttftP99Ms: figure.nullable(),
  outputTokensPerS: figure,
});
export type ServerWindow = z.infer<typeof ServerWindowSchema>;
