/** Reads older run formats: a gpushare.run/1 file is upgraded in memory to the current schema. */
import { RUN_SCHEMA_ID, RUN_SCHEMA_V1 } from './schema.js';

type Json = Record<string, unknown>;
const isObject = (x: unknown): x is Json => typeof x === 'object' && x !== null && !Array.isArray(x);

/**
 * Version 1 stored "the rounds" (a count per comparison, plus maxRounds/ciTarget/timeBudgetS in the
 * config); version 2 stores a round policy and derives the rounds from the trials. Anything that is
 * not a version 1 run is returned unchanged, for the schema to judge.
 */
export function upgradeRun(json: unknown): unknown {
  if (!isObject(json) || json.schema !== RUN_SCHEMA_V1 || !isObject(json.config)) return json;
  const { rounds, maxRounds, ciTarget, timeBudgetS, ...config } = json.config;
  const plan = Array.isArray(json.plan)
    ? json.plan.map((c) => (isObject(c) ? (({ rounds: _, ...rest }) => rest)(c) : c))
    : json.plan;
  return {
    ...json,
    schema: RUN_SCHEMA_ID,
    config: {
      ...config,
      // Version 1 aimed only its graded ratios at ciTarget; its headline ratios had no target.
      roundPolicy: { minRounds: rounds, maxRounds, ciTarget, gradedCiTarget: ciTarget, timeBudgetS },
      cpuPin: 'off',
    },
    plan,
  };
}
