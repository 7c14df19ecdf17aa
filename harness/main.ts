#!/usr/bin/env node
/** gpushare's entry: run argv on this machine; a bug (not the user's error) prints its stack and exits 70. */
import { hideBin } from 'yargs/helpers';
import { run } from './cli/run.js';
import { systemDeps } from './system/deps.js';

run(hideBin(process.argv), systemDeps()).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(
      `gpushare: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 70;
  },
);
