/**
 * workloads/protocol.schema.json, made from the protocol's zod definitions (workload/protocol.ts): the one
 * source of what a workload prints and what the harness sends. `npm run schema` writes it; a test fails
 * when the committed file differs from what this makes.
 */
import { z } from 'zod';
import { HarnessCommandSchema, PROTOCOL_VERSION, WorkloadMessageSchema } from './protocol.js';

const DESCRIPTION =
  "One JSON object per line. A workload prints workloadMessage lines on stdout and nothing else (any other line fails the trial; stderr is kept); gpushare writes harnessCommand lines to its stdin. Times are CLOCK_MONOTONIC microseconds (Python: time.monotonic_ns() / 1000), comparable across processes of one host. Sequence: the workload prints ready once built and warmed up; for each run command it prints one result (or error, then exits non-zero); on exit, or when stdin closes, it exits 0; on switch (sent only to a process whose ready line said switches) it serves another workload in the same process. Version 3 adds tenants: where gpushare sets GPUSHARE_TENANTS=N in the workload's environment (its streams and green modes), the process builds N tenants, each a model instance with its own CUDA stream and host thread, says so in its ready line, runs the tenants a run command names, and answers with one entry per tenant; with GPUSHARE_GREEN_SM_PCT set (a share of the SMs in %, or even), each tenant runs in a green context of its own SMs. Versions 1 and 2 are still accepted: 1 knows no open-loop load, 2 no tenants. Generated from harness/workload/protocol.ts (npm run schema), the harness's own parser; checked against the Python helper (workloads/gpushare_protocol) and the simulator's python3 by test/unit/protocol-schema.test.ts.";

/** The protocol's JSON Schema (draft 2020-12): workloadMessage and harnessCommand, each message under $defs. */
export function protocolJsonSchema(): Record<string, unknown> {
  // io 'input': what a speaker may write (a default makes a field optional; unknown fields are allowed, as the parser allows them).
  const generated = z.toJSONSchema(z.union([WorkloadMessageSchema, HarnessCommandSchema]), {
    target: 'draft-2020-12',
    io: 'input',
    unrepresentable: 'throw',
  }) as Record<string, unknown>;
  const { $schema, ...rest } = generated;
  return {
    $schema,
    $id: `urn:gpushare:workload-protocol:${PROTOCOL_VERSION}`,
    title: `gpushare workload protocol, version ${PROTOCOL_VERSION}`,
    description: DESCRIPTION,
    ...rest,
  };
}

/** The file's text: the schema as JSON, two spaces, one line break at the end. */
export function protocolJsonSchemaText(): string {
  return `${JSON.stringify(protocolJsonSchema(), null, 2)}\n`;
}
